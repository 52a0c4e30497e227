"""Strict JSON with positions: where each value and each object key starts and ends in the text.

The stdlib parser gives values without positions, and lint findings must point at a line and column. This is a
small recursive-descent parser over the decoded text; strings are decoded by the stdlib's own scanner, so escapes
decode exactly as ``json.loads`` decodes them and a string's span covers its quotes and escapes as written.
Offsets index the text (code points), so columns count code points, as SARIF's ``unicodeCodePoints`` does.
A key repeated in one object is an error: which copy wins would be up to the reader.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from json import JSONDecodeError
from json.decoder import scanstring as _stdlib_scanstring  # type: ignore[attr-defined]  # typeshed omits it
from typing import Any

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: The stdlib's string scanner (C when available): (decoded string, offset past the closing quote).
_scanstring: Callable[[str, int, bool], tuple[str, int]] = _stdlib_scanstring
_LITERALS = (("true", True), ("false", False), ("null", None))
#: Deeper nesting is refused before Python's own recursion limit is reached.
MAX_DEPTH = 256


class JsonSyntaxError(Exception):
    """The text is not strict JSON; ``offset`` is where the problem is."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


@dataclass
class Node:
    """A JSON value, its span ``text[start:end]``, and for containers their parts in file order."""

    value: Any
    start: int
    end: int
    members: list[Member] = field(default_factory=list)
    items: list[Node] = field(default_factory=list)


@dataclass
class Member:
    """An object member: its key, the key's span (quotes included), and the value's node."""

    key: str
    key_start: int
    key_end: int
    node: Node


class LineIndex:
    """Offsets to 1-based (line, column). CR, LF and CRLF each end a line, as JSON and Python both count them."""

    def __init__(self, text: str) -> None:
        self._starts = [0, *(match.end() for match in _LINE_BREAK.finditer(text))]

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1


def parse(text: str) -> Node:
    """The root node of ``text``; raises :class:`JsonSyntaxError` unless it is exactly one strict JSON value."""
    parser = _Parser(text)
    node = parser.value(parser.skip(0), 0)
    end = parser.skip(node.end)
    if end != len(text):
        raise JsonSyntaxError("extra data after the JSON value", end)
    return node


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text

    def skip(self, offset: int) -> int:
        match = _WHITESPACE.match(self.text, offset)
        assert match is not None  # the pattern matches the empty string
        return match.end()

    def value(self, offset: int, depth: int) -> Node:
        text = self.text
        char = text[offset : offset + 1]
        if char == "{":
            return self.object(offset, depth + 1)
        if char == "[":
            return self.array(offset, depth + 1)
        if char == '"':
            string, end = self.string(offset)
            return Node(string, offset, end)
        if char and char in "-0123456789":
            return self.number(offset)
        for word, literal in _LITERALS:
            if text.startswith(word, offset):
                return Node(literal, offset, offset + len(word))
        if not char:
            raise JsonSyntaxError("unexpected end of the file: expected a JSON value", offset)
        raise JsonSyntaxError(f"expected a JSON value, found {char!r}", offset)

    def string(self, offset: int) -> tuple[str, int]:
        try:
            return _scanstring(self.text, offset + 1, True)
        except JSONDecodeError as exc:
            raise JsonSyntaxError(exc.msg, exc.pos) from None

    def number(self, offset: int) -> Node:
        match = _NUMBER.match(self.text, offset)
        if match is None:
            raise JsonSyntaxError("expected a digit after '-'", offset + 1)
        literal = match.group()
        if match.group(1) is None and match.group(2) is None:
            return Node(int(literal), offset, match.end())
        number = float(literal)
        if math.isinf(number):
            raise JsonSyntaxError(f"the number {literal} is too large for a 64-bit float", offset)
        return Node(number, offset, match.end())

    def enter(self, offset: int, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise JsonSyntaxError(f"nesting deeper than {MAX_DEPTH} levels", offset)

    def object(self, start: int, depth: int) -> Node:
        self.enter(start, depth)
        text = self.text
        node = Node({}, start, start)
        offset = self.skip(start + 1)
        if text.startswith("}", offset):
            node.end = offset + 1
            return node
        while True:
            if not text.startswith('"', offset):
                raise JsonSyntaxError("expected a string key in double quotes", offset)
            key, key_end = self.string(offset)
            if key in node.value:
                raise JsonSyntaxError(f"key {key!r} appears twice in one object; keep one", offset)
            colon = self.skip(key_end)
            if not text.startswith(":", colon):
                raise JsonSyntaxError("expected ':' after the key", colon)
            child = self.value(self.skip(colon + 1), depth)
            node.value[key] = child.value
            node.members.append(Member(key, offset, key_end, child))
            offset = self.skip(child.end)
            if text.startswith(",", offset):
                offset = self.skip(offset + 1)
            elif text.startswith("}", offset):
                node.end = offset + 1
                return node
            else:
                raise JsonSyntaxError("expected ',' or '}' after an object member", offset)

    def array(self, start: int, depth: int) -> Node:
        self.enter(start, depth)
        text = self.text
        node = Node([], start, start)
        offset = self.skip(start + 1)
        if text.startswith("]", offset):
            node.end = offset + 1
            return node
        while True:
            child = self.value(offset, depth)
            node.value.append(child.value)
            node.items.append(child)
            offset = self.skip(child.end)
            if text.startswith(",", offset):
                offset = self.skip(offset + 1)
            elif text.startswith("]", offset):
                node.end = offset + 1
                return node
            else:
                raise JsonSyntaxError("expected ',' or ']' after an array item", offset)
