"""Text the agent did not write reaches the model byte for byte (issue 14): every string NFC would change, in every
position that holds such text, and in fenced code inside the prose that is normalized.

``CHANGED`` is every code point NFC changes (the singletons such as U+212B ANGSTROM SIGN and the CJK compatibility
ideographs, and the rest), every decomposed sequence NFC composes (``A\\u030a``, ``e\\u0301``, Hangul jamo), and
combining marks out of canonical order, which NFC reorders.
"""

from __future__ import annotations

import json
import sys
import unicodedata
from typing import Any

import pytest

from agentcache import CanonicalPolicy, canonical_json, canonicalize


def _changed_by_nfc() -> list[str]:
    singles, sequences = [], []
    for cp in range(sys.maxunicode + 1):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        char = chr(cp)
        if unicodedata.normalize("NFC", char) != char:
            singles.append(char)
        decomposed = unicodedata.normalize("NFD", char)
        if decomposed != char and unicodedata.normalize("NFC", decomposed) != decomposed:
            sequences.append(decomposed)
    # Marks with different combining classes, the higher class first: NFC puts them in canonical order.
    reordered = ["a\u0301\u0323", "q\u0307\u0323", "e\u0308\u0330", "\u05d0\u05bc\u05b7"]
    return singles + sequences + reordered


CHANGED = _changed_by_nfc()
#: All of them, one a line, with the line endings prose normalization would also change.
TEXT = "\r\n".join(CHANGED) + "\rend\r\n"


def test_the_cases_cover_what_nfc_changes() -> None:
    assert len(CHANGED) > 13_000  # 1,100+ code points, 11,172 Hangul syllables' jamo, 2,000+ composed letters
    assert {"\u212b", "A\u030a", "e\u0301", "\u2126", "\u212a", "\uf900", "\u1fef"} <= set(CHANGED)
    assert all(unicodedata.normalize("NFC", case) != case for case in CHANGED)


def tool_call(arguments: str) -> dict[str, Any]:
    return {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}


def blocks(kind: str = "text") -> list[dict[str, Any]]:
    return [{"type": kind, "text": TEXT}]


#: Every place of a request that holds what the user, the model or a tool wrote: (body, path to the text).
AS_WRITTEN: dict[str, tuple[dict[str, Any], tuple[Any, ...]]] = {
    "tool message": (
        {"messages": [{"role": "tool", "tool_call_id": "c1", "content": TEXT}]},
        ("messages", 0, "content"),
    ),
    "tool message blocks": (
        {"messages": [{"role": "tool", "tool_call_id": "c1", "content": blocks()}]},
        ("messages", 0, "content", 0, "text"),
    ),
    "tool_result": (
        {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": TEXT}]}]},
        ("messages", 0, "content", 0, "content"),
    ),
    "tool_result blocks": (
        {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": blocks()}]}]},
        ("messages", 0, "content", 0, "content", 0, "text"),
    ),
    "user": ({"messages": [{"role": "user", "content": TEXT}]}, ("messages", 0, "content")),
    "user blocks": ({"messages": [{"role": "user", "content": blocks()}]}, ("messages", 0, "content", 0, "text")),
    "user input_text": (
        {"messages": [{"role": "user", "content": blocks("input_text")}]},
        ("messages", 0, "content", 0, "text"),
    ),
    "assistant": ({"messages": [{"role": "assistant", "content": TEXT}]}, ("messages", 0, "content")),
    "assistant blocks": (
        {"messages": [{"role": "assistant", "content": blocks()}]},
        ("messages", 0, "content", 0, "text"),
    ),
    "legacy function message": (
        {"messages": [{"role": "function", "name": "f", "content": TEXT}]},
        ("messages", 0, "content"),
    ),
    "tool-call arguments, JSON": (
        {"messages": [{"role": "assistant", "content": None, "tool_calls": [tool_call(json.dumps({"p": TEXT}))]}]},
        ("messages", 0, "tool_calls", 0, "function", "arguments"),
    ),
    "tool-call arguments, text": (
        {"messages": [{"role": "assistant", "content": None, "tool_calls": [tool_call(TEXT)]}]},
        ("messages", 0, "tool_calls", 0, "function", "arguments"),
    ),
}


def at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@pytest.mark.parametrize("place", AS_WRITTEN)
def test_text_the_agent_did_not_write_is_sent_as_written(place: str) -> None:
    body, path = AS_WRITTEN[place]
    written = at(body, path)
    for policy in (CanonicalPolicy(), CanonicalPolicy(strip_trailing_whitespace=True, relocate_volatile=True)):
        out = canonicalize(body, policy)
        if place == "tool-call arguments, JSON":  # re-serialized compact and sorted: the same string value
            assert json.loads(at(out, path)) == {"p": TEXT}
        else:
            assert at(out, path) == written
            assert json.dumps(TEXT, ensure_ascii=False).encode() in canonical_json(out)


def fenced(code: str, fence: str = "```") -> tuple[str, str]:
    """A prompt with ``code`` in a fenced block between two prose lines, and that prompt as normalized."""
    before, after = "Rules, cafe\u0301:\r\n", "Then A\u030a.\r\n"
    block = f"{fence}python\r\n{code}\r\n{fence}\r\n"
    return before + block + after, "Rules, caf\u00e9:\n" + block + "Then \u00c5.\n"


def tool(description: str, schema_description: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"x": {"type": "string", "description": schema_description}}}
    return {"type": "function", "function": {"name": "f", "description": description, "parameters": schema}}


@pytest.mark.parametrize("fence", ["```", "~~~", "````"])
def test_fenced_code_in_the_prose_the_agent_writes_is_kept_and_the_prose_around_it_normalized(fence: str) -> None:
    prompt, normalized = fenced(TEXT, fence)
    openai = canonicalize({"messages": [{"role": "system", "content": prompt}], "tools": [tool(prompt, prompt)]})
    assert openai["messages"][0]["content"] == normalized
    function = openai["tools"][0]["function"]
    assert function["description"] == normalized
    assert function["parameters"]["properties"]["x"]["description"] == normalized
    anthropic = canonicalize({"messages": [], "system": [{"type": "text", "text": prompt}]})
    assert anthropic["system"][0]["text"] == normalized
    developer = canonicalize({"messages": [{"role": "developer", "content": prompt}]})
    assert developer["messages"][0]["content"] == normalized


def test_an_unclosed_fence_keeps_the_rest_of_the_text() -> None:
    out = canonicalize({"messages": [{"role": "system", "content": "A\u030a\n~~~\n" + TEXT}]})
    assert out["messages"][0]["content"] == "\u00c5\n~~~\n" + TEXT


@pytest.mark.parametrize(
    ("line", "fence"),
    [
        ("```", True),
        ("   ```js", True),
        ("~~~ `x`", True),  # a tilde fence's info string may hold backticks
        ("```a`b", False),  # inline code, not a fence
        ("``", False),
    ],
)
def test_what_opens_a_fence(line: str, fence: bool) -> None:
    prompt = f"{line}\ne\u0301\n```\n"
    out = canonicalize({"messages": [{"role": "system", "content": prompt}]})["messages"][0]["content"]
    assert (out == prompt) is fence


def test_a_closing_fence_needs_the_opening_character_and_length() -> None:
    prompt = "````\n```\n~~~~\ne\u0301\n````\nA\u030a"
    out = canonicalize({"messages": [{"role": "system", "content": prompt}]})["messages"][0]["content"]
    assert out == "````\n```\n~~~~\ne\u0301\n````\n\u00c5"


def test_a_line_that_normalization_makes_a_fence_is_read_as_one() -> None:
    """NFC turns U+1FEF GREEK VARIA into a backtick. Were the line read as written, the first pass would keep the
    first block and the second pass would read the varia line as a fence: the block would become prose."""
    prompt = "\u1fef\u1fef\u1fef\ncafe\u0301\n```\nA\u030a\n```\n"
    once = canonicalize({"messages": [{"role": "system", "content": prompt}]})
    assert once["messages"][0]["content"] == "\u1fef\u1fef\u1fef\ncafe\u0301\n```\n\u00c5\n```\n"
    assert canonical_json(canonicalize(once)) == canonical_json(once)


def test_relocating_volatile_lines_leaves_fenced_code_alone() -> None:
    prompt = "Be brief.\nNow: 2026-11-30T10:00:00Z\n```\nassert today == '2026-11-30'\n```\n"
    policy = CanonicalPolicy(relocate_volatile=True)
    out = canonicalize({"messages": [{"role": "system", "content": prompt}, {"role": "user", "content": "hi"}]}, policy)
    assert out["messages"][0]["content"] == "Be brief.\n```\nassert today == '2026-11-30'\n```\n"
    assert out["messages"][-1]["content"] == "Now: 2026-11-30T10:00:00Z"
