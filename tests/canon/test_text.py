"""drop_lines and the relocation built on it: a system prompt reads the same wherever its volatile lines stood."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentcache import CanonicalPolicy, canonicalize
from agentcache.canon.text import drop_lines

CUT = "Current time: 2026-11-30T10:03:17Z"


def _cut(text: str) -> str:
    """``text`` without its lines equal to CUT."""
    cuts, at = [], 0
    for line in text.split("\n"):
        if line == CUT:
            cuts.append((at, min(at + len(line) + 1, len(text))))
        at += len(line) + 1
    return drop_lines(text, cuts)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"{CUT}\n\nA\n\nB", "A\n\nB"),
        (f"A\n\n{CUT}\n\nB", "A\n\nB"),
        (f"A\n\nB\n\n{CUT}", "A\n\nB"),
        (f"A\n{CUT}\nB", "A\nB"),
        (f"A\nB\n{CUT}\n", "A\nB\n"),
        (f"{CUT}\nA\nB\n", "A\nB\n"),
        (f"A\n\n{CUT}\n{CUT}\n\n{CUT}\n\nB", "A\n\nB"),
        (f"A\n{CUT}\n\n\nB", "A\n\n\nB"),
        ("A\n\nB", "A\n\nB"),
    ],
)
def test_drop_lines_lays_out_as_if_never_written(text: str, expected: str) -> None:
    assert _cut(text) == expected


paragraphs = st.lists(st.text("abc .", min_size=1, max_size=8).map(str.strip).filter(bool), min_size=1, max_size=5)


@given(paragraphs, st.integers(0, 5), st.sampled_from(["\n", "\n\n"]), st.booleans())
def test_a_relocated_system_prompt_does_not_depend_on_where_the_volatile_line_stood(
    stable: list[str], position: int, separator: str, final_newline: bool
) -> None:
    """The same stable paragraphs, with the clock line at any place: one canonical system prompt."""
    policy = CanonicalPolicy(relocate_volatile=True)
    end = "\n" if final_newline else ""
    without = separator.join(stable) + end
    lines = [*stable]
    lines.insert(min(position, len(lines)), CUT)
    prompt = separator.join(lines) + end
    body = {"model": "m", "messages": [{"role": "system", "content": prompt}, {"role": "user", "content": "hi"}]}
    out = canonicalize(body, policy)
    assert out["messages"][0]["content"] == without
    assert out["messages"][-1] == {"content": CUT, "role": "system"}


def test_sessions_differing_only_in_volatile_values_send_one_prefix() -> None:
    policy = CanonicalPolicy(relocate_volatile=True)
    bodies = [
        {
            "model": "m",
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
            "messages": [
                {"role": "system", "content": f"You are Forge.\nSession {n}: started 2026-11-30T1{n}:00:00Z\n\nRules."},
                {"role": "user", "content": "hi"},
            ],
        }
        for n in range(3)
    ]
    outs = [canonicalize(body, policy) for body in bodies]
    assert len({repr((o["tools"], o["messages"][:2])) for o in outs}) == 1
