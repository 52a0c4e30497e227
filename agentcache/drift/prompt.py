"""A request as the server sees it: segments in prefix order (tools, system, messages), each rendered to text
and tokenized on its own.

Per-segment tokenization is what makes drift analysis cheap: a segment seen before costs a dict lookup, and
turn N+1 only tokenizes what it added. It is also close to what servers do, since chat templates put special
tokens between messages and BPE never merges across them. The rendering is agentcache's own ChatML-like model
(documented in docs/drift.md); against a real engine, its chat template is the truth.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import orjson

from agentcache.tokens import Tokenizer


@dataclass(frozen=True)
class Segment:
    """One unit of the prompt: a tool, the system prompt (or one system block), or a message."""

    part: str
    """``tools``, ``system`` or ``messages``: the three parts of a prompt, in the order the server caches them."""
    path: str
    """JSON path of the rendered value in the request, e.g. ``$.tools[2]`` or ``$.messages[3]``."""
    index: int
    """Index of the value in its part: tool index, system block index, or message index."""
    value: Any
    text: str
    breakpoint: bool = False
    """Whether the segment ends a block marked with ``cache_control`` (Anthropic breakpoints)."""


def render(request: dict[str, Any]) -> list[Segment]:
    """The request's segments in prefix order. Tools first (servers render them into the system turn or
    before it), then the system prompt, then the messages."""
    segments = [
        Segment("tools", f"$.tools[{i}]", i, tool, "<|tool|>" + _json(tool) + "\n", _marked(tool))
        for i, tool in enumerate(_list(request.get("tools")) or _list(request.get("functions")))
    ]
    system = request.get("system")
    if isinstance(system, list):
        segments += [
            Segment("system", f"$.system[{i}]", i, block, "<|system|>\n" + _content(block) + "\n", _marked(block))
            for i, block in enumerate(system)
        ]
    elif system is not None:
        segments.append(Segment("system", "$.system", 0, system, "<|system|>\n" + _content(system) + "\n"))
    for i, message in enumerate(_list(request.get("messages"))):
        role = message.get("role") if isinstance(message, dict) else None
        part = "system" if i == 0 and role in ("system", "developer") else "messages"
        segments.append(Segment(part, f"$.messages[{i}]", i, message, _message(message), _marked(message)))
    return segments


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str).decode()


def _marked(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if "cache_control" in value:
        return True
    content = value.get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and "cache_control" in b for b in content)


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict) and content.get("type") == "text":
        text = content.get("text")
        if isinstance(text, str):
            return text
    if isinstance(content, list):
        return "".join(_content(block) for block in content)
    return "" if content is None else _json(content)


def _message(message: Any) -> str:
    if not isinstance(message, dict):
        return _json(message) + "\n"
    extras = {key: value for key, value in message.items() if key not in ("role", "content")}
    tail = _json(extras) if extras else ""
    return f"<|{message.get('role')}|>\n{_content(message.get('content'))}{tail}\n"


class PromptTokenizer:
    """Tokenizes segments with a memo, so a prompt costs only the segments it has not seen before."""

    def __init__(self, tokenizer: Tokenizer, max_entries: int = 200_000) -> None:
        self.tokenizer = tokenizer
        self.max_entries = max_entries
        self._memo: dict[str, array[int]] = {}
        self.tokenized_chars = 0

    def segment(self, text: str) -> array[int]:
        tokens = self._memo.get(text)
        if tokens is None:
            tokens = array("I", self.tokenizer.encode(text))
            self.tokenized_chars += len(text)
            if len(self._memo) >= self.max_entries:
                self._memo.clear()
            self._memo[text] = tokens
        return tokens

    def prompt(self, segments: list[Segment]) -> tuple[array[int], list[int]]:
        """(all tokens, the token index where each segment starts)."""
        tokens = array("I")
        starts = []
        for segment in segments:
            starts.append(len(tokens))
            tokens += self.segment(segment.text)
        return tokens, starts
