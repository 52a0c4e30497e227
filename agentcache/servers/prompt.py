"""A chat request's prompt token ids as one particular server computes them.

The server reshapes the request (:class:`ServerProfile`), renders the model's chat template
(:class:`ChatTemplate`) and tokenizes the text with special tokens recognised and nothing added around it. Doing
the same three steps on the client gives the server's ids, which is what a cached-token prediction must count.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

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

    @classmethod
    def from_pretrained(cls, model_dir: str | Path, server: ServerProfile | str) -> ServerPrompt:
        """Template and ``tokenizer.json`` from the folder the server loads the model from."""
        folder, profile = Path(model_dir), get_profile(server)
        template = ChatTemplate.from_pretrained(folder, profile.float_format)
        return cls(profile, template, load_tokenizer_json(folder / "tokenizer.json"))

    def text(self, request: Mapping[str, Any]) -> str:
        messages, tools, variables = self._inputs(request)
        undefined = self.profile.undefined_tools
        return self.template.render(messages, tools, add_generation_prompt=True, undefined_tools=undefined, **variables)

    def text_lines(
        self, request: Mapping[str, Any], add_generation_prompt: bool = True
    ) -> tuple[str, list[tuple[int, int]]]:
        """:meth:`text` and where each piece came from in the template (:meth:`ChatTemplate.render_lines`);
        without ``add_generation_prompt``, the history alone, as the next turn would render it."""
        messages, tools, variables = self._inputs(request)
        undefined = self.profile.undefined_tools
        return self.template.render_lines(
            messages, tools, add_generation_prompt=add_generation_prompt, undefined_tools=undefined, **variables
        )

    def _inputs(
        self, request: Mapping[str, Any]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None, dict[str, Any]]:
        """Messages, tools and variables as the server hands them to the template."""
        messages, tools = self.profile.template_inputs(request, self.template)
        extra = request.get("chat_template_kwargs")
        variables = {**self.profile.template_variables(self.template), **(extra if isinstance(extra, dict) else {})}
        return messages, tools, variables

    def tokens(self, request: Mapping[str, Any]) -> list[int]:
        return self.tokenizer.encode(self.text(request))
