"""Template-made drift: a chat template that rewrites the history itself, so turn N+1's prompt does not extend
turn N's even when the agent re-sends every message exactly.

It is found by rendering, not by reading the template: both turns are rendered with the model's own template (as
the server shapes them), and when the second does not extend the first, they are rendered again with one input
taken away at a time, then two, and so on: the tools, the system messages, the reasoning of assistant messages,
the date (both turns rendered at the first one's time). The smallest set of inputs whose removal makes the
second prompt extend the first names the cause; the template line that wrote the first differing text of turn N
names the construct. Codes are :mod:`agentcache.predict.causes`' ``template_*`` ones.
"""

from __future__ import annotations

import itertools
import re
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcache.cache.blockhash import token_array
from agentcache.cache.prefix import common_prefix
from agentcache.errors import TokenizerError
from agentcache.predict import causes
from agentcache.servers.prompt import ServerPrompt
from agentcache.servers.template import fixed_clock

Request = Mapping[str, Any]
_THINK = re.compile(r"<think>(.*?)</think>\s*", re.DOTALL)
_REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")


def _without_tools(request: Request) -> dict[str, Any]:
    return {k: v for k, v in request.items() if k not in ("tools", "tool_choice")}


def _without_system(request: Request) -> dict[str, Any]:
    messages = [m for m in request.get("messages", ()) if m.get("role") not in ("system", "developer")]
    return {**request, "messages": messages}


def _without_reasoning(request: Request) -> dict[str, Any]:
    messages = []
    for message in request.get("messages", ()):
        bare = {k: v for k, v in message.items() if k not in _REASONING_KEYS}
        if message.get("role") == "assistant" and isinstance(bare.get("content"), str):
            bare["content"] = _THINK.sub("", bare["content"])
        messages.append(bare)
    return {**request, "messages": messages}


#: What each template-made cause takes away from both requests, in the order a cause is named when it takes more
#: than one (the date is taken away by rendering both turns at the first one's time, not by editing them).
_VARIATIONS: dict[str, Callable[[Request], dict[str, Any]] | None] = {
    causes.TEMPLATE_DATE: None,
    causes.TEMPLATE_MOVES_TOOLS: _without_tools,
    causes.TEMPLATE_MOVES_SYSTEM: _without_system,
    causes.TEMPLATE_DROPS_REASONING: _without_reasoning,
}
_WHAT = {
    causes.TEMPLATE_DATE: "renders today's date",
    causes.TEMPLATE_MOVES_TOOLS: "renders the tools at a place that moves as the conversation grows",
    causes.TEMPLATE_MOVES_SYSTEM: "renders the system prompt at a place that moves as the conversation grows",
    causes.TEMPLATE_DROPS_REASONING: "drops the reasoning of earlier assistant turns",
    causes.TEMPLATE_GENERATION_PROMPT: "ends the prompt differently from how it renders that turn afterwards",
    causes.TEMPLATE_REWRITES: "renders earlier messages differently once the conversation grows",
}


@dataclass(frozen=True)
class TemplateDrift:
    """Why turn N+1's prompt, rendered by the template, does not extend turn N's."""

    cause: str
    """The ``template_*`` code of :mod:`agentcache.predict.causes`."""
    also: tuple[str, ...]
    """Further template causes that had to be taken away too before the prompt extended."""
    line: int | None
    """Line of the template that wrote the first text of turn N that turn N+1 does not repeat."""
    construct: str
    """That line of the template, stripped and shortened."""
    token: int
    """Index of the first token of turn N's prompt that turn N+1 does not repeat."""
    lost: int
    """Tokens of turn N's prompt that turn N+1 prefills again."""

    def description(self) -> str:
        """What the template does, and at which of its lines."""
        what = " and ".join(_WHAT[c] for c in (self.cause, *self.also))
        where = f" (template line {self.line}: {self.construct})" if self.line is not None else ""
        return f"the chat template {what}{where}"

    @property
    def detail(self) -> str:
        return f"{self.description()}: {self.lost:,} tokens of the previous prompt prefilled again"


def template_drift(
    prompt: ServerPrompt,
    before: Request,
    after: Request,
    times: tuple[datetime, datetime] | None = None,
    before_tokens: array[int] | None = None,
    after_tokens: array[int] | None = None,
    reasons: bool = False,
) -> TemplateDrift | None:
    """Why ``after`` (turn N+1) rendered by ``prompt`` does not extend ``before`` (turn N), or None when it does.

    ``times`` are the turns' own times (the server renders a date when the request comes), by default both now;
    the tokens, when the caller has them, are those two renderings' tokens. With ``reasons`` (the model generates
    reasoning), a prompt that extends is still a drift when the template drops the reasoning of the reply the
    model generated after turn N. Raises :class:`~agentcache.errors.TokenizerError` when the template refuses
    either request.
    """
    first, second = times if times is not None else (datetime.now(),) * 2
    if before_tokens is None:
        with fixed_clock(first):
            before_tokens = token_array(prompt.tokens(before))
    if after_tokens is None:
        with fixed_clock(second):
            after_tokens = token_array(prompt.tokens(after))
    token = common_prefix(before_tokens, after_tokens)
    if token >= len(before_tokens):
        if not reasons:
            return None
        with fixed_clock(second):
            return _reply_reasoning_dropped(prompt, before, after, len(before_tokens))
    with fixed_clock(first):
        text, pieces = prompt.text_lines(before)
        history = prompt.text_lines(before, add_generation_prompt=False)[0]
    with fixed_clock(second):
        after_text = prompt.text(after)
    offset = common_prefix(text, after_text)
    line = next((line for start, line in reversed(pieces) if start <= offset), None)
    if offset >= common_prefix(history, text):  # the history extends: only the prompt's end differs
        found: tuple[str, ...] = (causes.TEMPLATE_GENERATION_PROMPT,)
    else:
        found = _smallest_cause(prompt, before, after, first, second) or _reasoning_dropped(before, text, after_text)
    cause, also = (found[0], found[1:]) if found else (causes.TEMPLATE_REWRITES, ())
    return TemplateDrift(cause, also, line, _source_line(prompt, line), token, len(before_tokens) - token)


def _smallest_cause(
    prompt: ServerPrompt, before: Request, after: Request, first: datetime, second: datetime
) -> tuple[str, ...]:
    """The fewest inputs to take away (by :data:`_VARIATIONS`' order) for ``after``'s text to extend
    ``before``'s history; empty when no set of them does."""
    names = [name for name in _VARIATIONS if name != causes.TEMPLATE_DATE or first != second]
    for size in range(1, len(names) + 1):
        for chosen in itertools.combinations(names, size):
            old, new = dict(before), dict(after)
            for name in chosen:
                vary = _VARIATIONS[name]
                if vary is not None:
                    old, new = vary(old), vary(new)
            try:
                with fixed_clock(first):
                    old_text = prompt.text_lines(old, add_generation_prompt=False)[0]
                with fixed_clock(first if causes.TEMPLATE_DATE in chosen else second):
                    new_text = prompt.text(new)
            except TokenizerError:  # the template refuses the varied request: this set tells nothing
                continue
            if new_text.startswith(old_text):
                return chosen
    return ()


def _reasoning_dropped(before: Request, text: str, after_text: str) -> tuple[str, ...]:
    """The reasoning cause when some assistant reasoning that turn N's prompt shows is gone from turn N+1's: a
    template that renders an (empty) reasoning block for the latest turns only is not fixed by taking the
    reasoning away, but the text it drops tells."""
    for message in before.get("messages", ()):
        for reasoning in _reasonings(message):
            if reasoning and after_text.count(reasoning) < text.count(reasoning):
                return (causes.TEMPLATE_DROPS_REASONING,)
    return ()


def _reply_reasoning_dropped(prompt: ServerPrompt, before: Request, after: Request, end: int) -> TemplateDrift | None:
    """The drift of a reply whose reasoning the template drops at once: the prompt extends, but the server cached
    the reasoning it generated after the prompt (``end`` tokens), and the next prompt does not have it. The loss
    counted is the reply's reasoning and content as text, a lower bound of what the model generated."""
    known = len(before.get("messages", ()))
    reply = next(iter(after.get("messages", ())[known : known + 1]), None)
    reasonings = [] if reply is None or reply.get("role") != "assistant" else _reasonings(reply)
    text, pieces = prompt.text_lines(after)
    if not any(reasonings) or all(r in text for r in reasonings):
        return None
    start = len(prompt.text_lines(before, add_generation_prompt=False)[0])
    line = next((line for offset, line in reversed(pieces) if offset <= start), None)
    content = reply.get("content") if reply is not None else None
    generated = "".join(reasonings) + (_THINK.sub("", content) if isinstance(content, str) else "")
    lost = len(prompt.tokenizer.encode(generated))
    return TemplateDrift(causes.TEMPLATE_DROPS_REASONING, (), line, _source_line(prompt, line), end, lost)


def renders_reasoning(prompt: ServerPrompt, requests: Sequence[Request]) -> bool:
    """Whether the model behind ``prompt`` generates reasoning, as its template shows it: some rendering of these
    requests holds the reasoning field of an assistant message, or the generation prompt opens a ``<think>`` block
    (inline ``<think>`` text tells nothing: a template without reasoning renders it as content)."""
    for request in requests:
        text = prompt.text(request)
        if "<think>" in text[len(prompt.text_lines(request, add_generation_prompt=False)[0]) :]:
            return True
        fields = (m.get(k) for m in request.get("messages", ()) for k in _REASONING_KEYS)
        if any(isinstance(r, str) and r.strip() and r.strip() in text for r in fields):
            return True
    return False


def _reasonings(message: Mapping[str, Any]) -> list[str]:
    found = [message[k].strip() for k in _REASONING_KEYS if isinstance(message.get(k), str)]
    content = message.get("content")
    if message.get("role") == "assistant" and isinstance(content, str):
        found += [m.group(1).strip() for m in _THINK.finditer(content)]
    return found


def _source_line(prompt: ServerPrompt, line: int | None) -> str:
    if line is None:
        return ""
    lines = prompt.template.source.splitlines()
    text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
    return text if len(text) <= 80 else text[:77] + "..."
