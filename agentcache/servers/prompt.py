"""A chat request's prompt token ids as one particular server computes them.

The server reshapes the request (:class:`ServerProfile`), renders the model's chat template
(:class:`ChatTemplate`) and tokenizes the text with special tokens recognised and nothing added around it. Doing
the same three steps on the client gives the server's ids, which is what a cached-token prediction must count.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentcache.errors import TokenizerError
from agentcache.servers.profiles import ServerProfile, get_profile
from agentcache.servers.template import ChatTemplate
from agentcache.tokens import Tokenizer
from agentcache.tokens.hf import load_tokenizer_json


class ServerPrompt:
    """Request -> the server's prompt token ids, for one server kind, template and tokenizer."""

    def __init__(self, profile: ServerProfile | str, template: ChatTemplate, tokenizer: Tokenizer) -> None:
        self.profile = get_profile(profile)
        self.template = template
        self.tokenizer = tokenizer
        self._compiled: dict[str, ChatTemplate] = {}

    @classmethod
    def from_pretrained(cls, model_dir: str | Path, server: ServerProfile | str) -> ServerPrompt:
        """Template and ``tokenizer.json`` from the folder the server loads the model from."""
        folder, profile = Path(model_dir), get_profile(server)
        template = ChatTemplate.from_pretrained(folder, profile.float_format)
        return cls(profile, template, load_tokenizer_json(folder / "tokenizer.json"))

    def templates(self, request: Mapping[str, Any]) -> tuple[ChatTemplate, ChatTemplate]:
        """``(the template the server renders, the one whose content format shapes the messages)``: the model's
        own, unless the request carries one where the server takes it (:attr:`ServerProfile.request_template`)."""
        where = self.profile.request_template
        kwargs = request.get("chat_template_kwargs")
        top = request.get("chat_template") if "chat_template" in where else None
        inner = kwargs.get("chat_template") if "chat_template_kwargs" in where and isinstance(kwargs, dict) else None
        if isinstance(top, str):
            return self._template(top), self._template(top)
        if isinstance(inner, str):
            return self._template(inner), self.template
        return self.template, self.template

    def _template(self, source: str) -> ChatTemplate:
        if source not in self._compiled:
            special, formats = self.template.special_tokens, self.template.float_format
            self._compiled[source] = ChatTemplate(source, special, "the request's chat_template", formats)
        return self._compiled[source]

    def text(self, request: Mapping[str, Any]) -> str:
        rendered, messages, tools, variables = self._inputs(request)
        undefined = self.profile.undefined_tools
        try:
            return rendered.render(messages, tools, add_generation_prompt=True, undefined_tools=undefined, **variables)
        except TokenizerError:
            if not (self.profile.retries_bare_functions and tools):
                raise
        bare = [t.get("function", t) for t in tools]  # SGLang's second try, for Mistral's
        return rendered.render(messages, bare, add_generation_prompt=True, undefined_tools=undefined, **variables)

    def text_lines(
        self, request: Mapping[str, Any], add_generation_prompt: bool = True
    ) -> tuple[str, list[tuple[int, int]]]:
        """:meth:`text` and where each piece came from in the template (:meth:`ChatTemplate.render_lines`);
        without ``add_generation_prompt``, the history alone, as the next turn would render it."""
        rendered, messages, tools, variables = self._inputs(request)
        undefined = self.profile.undefined_tools
        return rendered.render_lines(
            messages, tools, add_generation_prompt=add_generation_prompt, undefined_tools=undefined, **variables
        )

    def _inputs(
        self, request: Mapping[str, Any]
    ) -> tuple[ChatTemplate, list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]]:
        """The template that renders ``request``, and the messages, tools and variables the server hands it."""
        rendered, shaping = self.templates(request)
        messages, tools = self.profile.template_inputs(request, shaping)
        extra = request.get("chat_template_kwargs")
        extra = {k: v for k, v in extra.items() if k != "chat_template"} if isinstance(extra, dict) else {}
        variables = {**self.profile.template_variables(rendered), **extra}
        return rendered, messages, tools, variables

    def tokens(self, request: Mapping[str, Any]) -> list[int]:
        return self.tokenizer.encode(self.text(request))
