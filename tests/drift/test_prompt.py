"""Rendering and tokenizing prompts: line-by-line tokenization must equal whole-text tokenization."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache import get_tokenizer
from agentcache.predict.prompt import PromptTokenizer, render

texts = st.lists(
    st.sampled_from(
        [
            *"aZ9 .,:;/'\"-_\t\r\n",
            "\n\n",
            " \n",
            "\r\n",
            "\n/",
            "\n'",
            "\n 1",
            "'s",
            "123456",
            "é",
            "中文",
            "😀",
            "Hello",
            " world",
            "\nX",
            "\n9",
            "```",
            "  ",
        ]
    ),
    min_size=300,
    max_size=600,
).map("".join)


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
@settings(max_examples=100, deadline=None)
@given(text=texts)
def test_line_by_line_equals_whole_text(name: str, text: str) -> None:
    tokenizer = get_tokenizer(name)
    prompts = PromptTokenizer(tokenizer)
    padded = text * 3  # over the 1 kB threshold, so the line-by-line path runs
    assert list(prompts.segment(padded)) == tokenizer.encode(padded)


def test_changed_segment_reuses_unchanged_lines() -> None:
    tokenizer = get_tokenizer("o200k_base")
    prompts = PromptTokenizer(tokenizer)
    body = "".join(f"Rule {i}: keep the tests green and the diff small.\n" for i in range(100))
    first = prompts.segment("Now: 2026-11-30T10:00:00Z\n" + body)
    lines_before = len(prompts._lines)
    second = prompts.segment("Now: 2026-11-30T10:05:00Z\n" + body)
    assert len(prompts._lines) == lines_before + 1  # only the timestamp line was encoded again
    assert list(second) == tokenizer.encode("Now: 2026-11-30T10:05:00Z\n" + body)
    assert len(first) == len(second)


def test_render_order_and_paths() -> None:
    request = {
        "model": "m",
        "tools": [{"type": "function", "function": {"name": "t"}}],
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "u"}]}],
    }
    segments = render(request)
    assert [(s.part, s.path) for s in segments] == [
        ("tools", "$.tools[0]"),
        ("system", "$.messages[0]"),
        ("messages", "$.messages[1]"),
    ]
    assert segments[2].text == "<|user|>\nu\n"


def test_anthropic_breakpoints() -> None:
    request = {
        "system": [{"type": "text", "text": "rules", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "a", "input_schema": {}}, {"name": "b", "input_schema": {}, "cache_control": {}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {}}]}],
    }
    assert [s.breakpoint for s in render(request)] == [False, True, True, True]
