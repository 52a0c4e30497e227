"""The positioned JSON parser agrees with json.loads on values, and every span parses back to its own value."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache.lint.jsonpos import MAX_DEPTH, JsonSyntaxError, LineIndex, Node, parse

# Text with the characters JSON must escape, non-BMP characters and line separators.
_TEXT = st.text(st.characters(codec="utf-8") | st.sampled_from(['"', "\\", "\n", "\r", "\t", "\x00", "\u2028", "😀"]))
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=20,
)


def _spans(node: Node) -> list[tuple[int, int, Any]]:
    found = [(node.start, node.end, node.value)]
    for member in node.members:
        found.append((member.key_start, member.key_end, member.key))
        found.extend(_spans(member.node))
    for item in node.items:
        found.extend(_spans(item))
    return found


@settings(max_examples=100, deadline=None)
@given(value=_VALUES, indent=st.sampled_from([None, 0, 2, "\t"]), ascii_only=st.booleans())
def test_values_and_spans_match_the_stdlib(value: Any, indent: int | str | None, ascii_only: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    root = parse(text)
    assert root.value == json.loads(text)
    for start, end, expected in _spans(root):
        assert json.loads(text[start:end]) == expected


def test_line_index_counts_lf_crlf_and_cr() -> None:
    text = 'a\r\nbc\rd\n"é"'
    index = LineIndex(text)
    assert index.position(0) == (1, 1)
    assert index.position(text.index("c")) == (2, 2)
    assert index.position(text.index("d")) == (3, 1)
    assert index.position(text.index('"')) == (4, 1)
    assert index.position(len(text)) == (4, 4)


@pytest.mark.parametrize(
    ("text", "problem", "at"),
    [
        ('{"a": 1,}', "expected a string key", 8),
        ('{"a" 1}', "expected ':'", 5),
        ("[1 2]", "expected ',' or ']'", 3),
        ('{"a": 1, "a": 2}', "appears twice", 9),
        ('"tab\there"', "Invalid control character", 4),
        ('"bad \\x escape"', "Invalid \\escape", 5),
        ("[1] x", "extra data", 4),
        ("[", "unexpected end", 1),
        ("-", "expected a digit", 1),
        ("1e999", "too large", 0),
        ("NaN", "expected a JSON value", 0),
    ],
)
def test_errors_name_the_problem_and_its_offset(text: str, problem: str, at: int) -> None:
    with pytest.raises(JsonSyntaxError) as caught:
        parse(text)
    assert problem in caught.value.message
    assert caught.value.offset == at


def test_nesting_is_bounded_before_python_recursion() -> None:
    with pytest.raises(JsonSyntaxError, match="nesting deeper"):
        parse("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert parse("[" * MAX_DEPTH + "]" * MAX_DEPTH).end == 2 * MAX_DEPTH
