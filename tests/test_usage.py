"""CacheUsage reads every dialect of cached-token reporting, and tells "not reported" from "none cached"."""

from __future__ import annotations

from typing import Any

import pytest

from agentcache.usage import CacheUsage

CASES = [
    # OpenAI chat completions (and SGLang/vLLM/llama-server on /v1/chat/completions)
    (
        {"usage": {"prompt_tokens": 2006, "completion_tokens": 300, "prompt_tokens_details": {"cached_tokens": 1920}}},
        CacheUsage("openai", 2006, 1920),
    ),
    # SGLang without --enable-cache-report: details missing or null
    (
        {"usage": {"prompt_tokens": 373, "completion_tokens": 8, "prompt_tokens_details": None}},
        CacheUsage("openai", 373, None),
    ),
    # OpenAI Responses API
    (
        {"usage": {"input_tokens": 1500, "input_tokens_details": {"cached_tokens": 1024}, "output_tokens": 20}},
        CacheUsage("responses", 1500, 1024),
    ),
    # Anthropic: input_tokens counts only what follows the last breakpoint
    (
        {
            "usage": {
                "input_tokens": 50,
                "cache_read_input_tokens": 100000,
                "cache_creation_input_tokens": 248,
                "output_tokens": 503,
            }
        },
        CacheUsage("anthropic", 100298, 100000, 248),
    ),
    # SGLang native /generate
    (
        {"text": "...", "meta_info": {"prompt_tokens": 373, "cached_tokens": 372, "completion_tokens": 8}},
        CacheUsage("sglang", 373, 372),
    ),
    # llama.cpp native /completion with cache_prompt: prompt_n counts only what was computed
    (
        {"content": "...", "timings": {"cache_n": 236, "prompt_n": 1, "predicted_n": 4}},
        CacheUsage("llama.cpp", 237, 236),
    ),
]


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_each_dialect(body: dict[str, Any], expected: CacheUsage) -> None:
    assert CacheUsage.from_response(body) == expected


def test_usage_wins_over_timings_when_both_are_there() -> None:
    body = {"usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 9}}, "timings": {"cache_n": 3}}
    assert CacheUsage.from_response(body) == CacheUsage("openai", 10, 9)


@pytest.mark.parametrize("body", [None, [], {}, {"usage": None}, {"usage": {"total_tokens": 5}}, {"timings": {}}])
def test_no_usage(body: Any) -> None:
    assert CacheUsage.from_response(body) is None


def test_hit_ratio() -> None:
    assert CacheUsage("openai", 200, 150).hit_ratio == 0.75
    assert CacheUsage("openai", 200, None).hit_ratio is None
    assert CacheUsage("openai", 0, 0).hit_ratio is None


@pytest.mark.parametrize("bad", [-1, True, "12", 1.5])
def test_malformed_counts_are_not_trusted(bad: Any) -> None:
    assert CacheUsage.from_usage({"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": bad}}) == CacheUsage(
        "openai", 10, None
    )


def test_anthropic_null_read_is_not_reported_rather_than_zero() -> None:
    usage = CacheUsage.from_usage(
        {"input_tokens": 10, "cache_read_input_tokens": None, "cache_creation_input_tokens": 5}
    )
    assert usage == CacheUsage("anthropic", 15, None, 5)


def test_openai_usage_with_anthropic_fields_added_by_a_proxy() -> None:
    usage = {"prompt_tokens": 1200, "prompt_tokens_details": {"cached_tokens": 1024}, "cache_read_input_tokens": 1024}
    assert CacheUsage.from_usage(usage) == CacheUsage("openai", 1200, 1024)
