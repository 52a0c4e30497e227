"""A request as the server sees it: segments in prefix order (tools, system, messages), each rendered to text
and tokenized on its own.

Per-segment tokenization is what makes drift analysis cheap: a segment seen before costs a dict lookup, and
turn N+1 only tokenizes what it added. It is also close to what servers do, since chat templates put special
tokens between messages and BPE never merges across them. The rendering is agentcache's own ChatML-like model
(documented in docs/drift.md); against a real engine, its chat template is the truth.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from agentcache.tokens import TiktokenTokenizer, Tokenizer


@dataclass(frozen=True)
class Segment:
    """One unit of the prompt: a tool, the system prompt (or one system block), or a message."""

    part: str
    """``tools``, ``params`` (``response_format``), ``system`` or ``messages``: the parts of a prompt, in the order
    the server caches them."""
    path: str
    """JSON path of the rendered value in the request, e.g. ``$.tools[2]`` or ``$.messages[3]``."""
    index: int
    """Index of the value in its part: tool index, system block index, or message index."""
    value: Any
    text: str
    breakpoint: bool = False
    """Whether the segment ends a block marked as a breakpoint: Anthropic's ``cache_control``, OpenAI's
    ``prompt_cache_breakpoint``."""


def render(request: dict[str, Any]) -> list[Segment]:
    """The request's segments in prefix order. Tools first (servers render them into the system turn or
    before it), then the system prompt, then the messages."""
    return Renderer().render(request)


class Renderer:
    """Renders requests, remembering each value's text by identity while the value is alive in the memo.

    Canonicalized tools and unchanged messages are the same objects from turn to turn, so they are rendered
    once. Requests must not be mutated while a renderer is in use (traces never are).
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        self.max_entries = max_entries
        self._texts: dict[int, tuple[Any, str]] = {}

    def render(self, request: dict[str, Any]) -> list[Segment]:
        field = "tools" if _list(request.get("tools")) else "functions"
        segments = [
            Segment("tools", f"$.{field}[{i}]", i, tool, self._text(tool, _tool), _marked(tool))
            for i, tool in enumerate(_list(request.get(field)))
        ]
        response_format = request.get("response_format")
        if response_format is not None:  # a structured-output schema is rendered into the prompt
            text = "<|response_format|>" + json_text(response_format) + "\n"
            segments.append(Segment("params", "$.response_format", 0, response_format, text))
        system = request.get("system")
        if isinstance(system, list):
            segments += [
                Segment("system", f"$.system[{i}]", i, block, _system(block), _marked(block))
                for i, block in enumerate(system)
            ]
        elif system is not None:
            segments.append(Segment("system", "$.system", 0, system, _system(system)))
        for i, message in enumerate(_list(request.get("messages"))):
            role = message.get("role") if isinstance(message, dict) else None
            part = "system" if i == 0 and role in ("system", "developer") else "messages"
            segments.append(
                Segment(part, f"$.messages[{i}]", i, message, self._text(message, _message), _marked(message))
            )
        return segments

    def _text(self, value: Any, render: Callable[[Any], str]) -> str:
        known = self._texts.get(id(value))
        if known is not None and known[0] is value:
            return known[1]
        text = render(value)
        if len(self._texts) >= self.max_entries:
            self._texts.clear()
        self._texts[id(value)] = (value, text)
        return text


def _tool(tool: Any) -> str:
    return "<|tool|>" + json_text(_unmarked(tool)) + "\n"


def _system(content: Any) -> str:
    return "<|system|>\n" + _content(content) + "\n"


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def json_text(value: Any) -> str:
    """Compact JSON, keys in the order given: how segments render values and how they are compared."""
    try:
        return orjson.dumps(value, default=str).decode()
    except TypeError:  # integers beyond 64 bits are legal JSON; the standard library writes them
        return json.dumps(value, default=str, ensure_ascii=False, separators=(",", ":"))


MARKERS = ("cache_control", "prompt_cache_breakpoint")
"""The keys that mark a breakpoint on a block: Anthropic's, then OpenAI's (GPT-5.6 and later)."""


def _unmarked(value: Any) -> Any:
    """The value without its breakpoint marker: a breakpoint says where to cache, it is not prompt text."""
    if isinstance(value, dict) and any(key in value for key in MARKERS):
        return {key: item for key, item in value.items() if key not in MARKERS}
    return value


def _marked(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    if any(key in value for key in MARKERS):
        return True
    content = value.get("content")
    return isinstance(content, list) and any(_marked(block) for block in content if isinstance(block, dict))


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, dict) and content.get("type") == "text":
        text = content.get("text")
        if isinstance(text, str):
            return text
    if isinstance(content, list):
        return "".join(_content(block) for block in content)
    return "" if content is None else json_text(_unmarked(content))


def _message(message: Any) -> str:
    if not isinstance(message, dict):
        return json_text(message) + "\n"
    extras = {key: value for key, value in message.items() if key not in ("role", "content", *MARKERS)}
    tail = json_text(extras) if extras else ""
    return f"<|{message.get('role')}|>\n{_content(message.get('content'))}{tail}\n"


def split_lines(text: str) -> list[str]:
    """``text`` cut after each newline that is followed by an ASCII letter or digit (the cut keeps the newline).

    The o200k_base and cl100k_base pre-tokenizers always split there (no piece pattern crosses a newline into a
    letter or digit), so encoding the pieces apart gives exactly the tokens of the whole text, which
    tests/drift/test_prompt.py checks. ``str.split`` finds the newlines at C speed, unlike a look-around regex.
    """
    pieces = text.split("\n")
    out = []
    current = pieces[0]
    for piece in pieces[1:]:
        head = piece[:1]
        if head.isascii() and head.isalnum():
            out.append(current + "\n")
            current = piece
        else:
            current += "\n" + piece
    out.append(current)
    return out


class PromptTokenizer:
    """Tokenizes segments with a memo, so a prompt costs only the segments it has not seen before.

    A long segment that changed (a system prompt with a new timestamp) is tokenized line by line with a second
    memo, so only its changed lines are encoded again; this is exact for the bundled vocabularies and not tried
    for others, whose pre-tokenizers are not known.
    """

    def __init__(self, tokenizer: Tokenizer, max_entries: int = 200_000) -> None:
        self.tokenizer = tokenizer
        self.max_entries = max_entries
        self.by_line = isinstance(tokenizer, TiktokenTokenizer)
        self._segments: dict[str, array[int]] = {}
        self._lines: dict[str, array[int]] = {}

    def segment(self, text: str) -> array[int]:
        tokens = self._segments.get(text)
        if tokens is None:
            if self.by_line and len(text) > 1024:
                tokens = array("I")
                for line in split_lines(text):
                    tokens += self._encode(self._lines, line)
            else:
                tokens = array("I", self.tokenizer.encode(text))
            self._remember(self._segments, text, tokens)
        return tokens

    def _encode(self, memo: dict[str, array[int]], text: str) -> array[int]:
        tokens = memo.get(text)
        if tokens is None:
            tokens = array("I", self.tokenizer.encode(text))
            self._remember(memo, text, tokens)
        return tokens

    def _remember(self, memo: dict[str, array[int]], text: str, tokens: array[int]) -> None:
        if len(memo) >= self.max_entries:
            memo.clear()
        memo[text] = tokens

    def prompt(
        self, segments: list[Segment], previous: tuple[list[Segment], array[int], list[int]] | None = None
    ) -> tuple[array[int], list[int]]:
        """(all tokens, the token index where each segment starts).

        With the ``previous`` prompt of the session (its segments, tokens and starts), the segments it shares
        are compared as text and their tokens taken in one slice: only what changed is looked up or encoded.
        """
        shared = 0
        tokens = array("I")
        starts: list[int] = []
        if previous is not None:
            old_segments, old_tokens, old_starts = previous
            limit = min(len(segments), len(old_segments))
            while shared < limit and segments[shared].text == old_segments[shared].text:
                shared += 1
            tokens = old_tokens[: old_starts[shared] if shared < len(old_starts) else len(old_tokens)]
            starts = old_starts[:shared]
        for segment in segments[shared:]:
            starts.append(len(tokens))
            tokens += self.segment(segment.text)
        return tokens, starts
