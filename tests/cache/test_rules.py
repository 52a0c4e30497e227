"""The per-model caching rules (agentcache.cache.rules) and their use by the hosted models, the replay and
``explain --model``: each documented rule once, the fallback for unlisted models, and the cost of a turn."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentcache.cache.hosted import AnthropicPromptCache, CacheUsage, OpenAIPromptCache
from agentcache.cache.rules import CONSERVATIVE, MAX_BREAKPOINTS, RULES, lookup, rule_for
from agentcache.drift import CacheOptions, explain
from agentcache.errors import CacheModelError, UnknownModelWarning
from tests.cache.reference import random_tokens

GPT_56 = RULES["openai", "gpt-5.6"]
OPUS = "claude-opus-4-8"
SYSTEM = "You are a careful assistant. " + " ".join(f"Rule {i}: check item {i} twice." for i in range(300))


def test_every_rule_names_its_source_page() -> None:
    for rule in (*RULES.values(), *CONSERVATIVE.values()):
        assert rule.source.startswith("https://"), rule
        assert rule.default_ttl in rule.write


def test_model_ids_find_their_family_row() -> None:
    assert lookup("openai", "gpt-5.6-mini") is GPT_56
    assert lookup("openai", "openai/gpt-5.6") is GPT_56
    assert lookup("openai", "gpt-4o-mini-2024-07-18") is RULES["openai", "gpt-4o"]
    assert lookup("anthropic", "claude-haiku-4-5-20251001") is RULES["anthropic", "claude-haiku-4-5"]
    assert lookup("anthropic", "anthropic/claude-opus-4-8") is RULES["anthropic", OPUS]
    assert lookup("anthropic", "claude-opus-4-9") is None  # minima differ between neighbours: no guessing


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_an_unlisted_model_gets_the_most_conservative_rule_and_a_warning(provider: Any) -> None:
    with pytest.warns(UnknownModelWarning, match="most conservative"):
        rule = rule_for(provider, "model-from-the-future")
    assert rule is CONSERVATIVE[provider]
    listed = [r for r in RULES.values() if r.provider == provider]
    assert rule.min_tokens == max(r.min_tokens for r in listed)
    assert rule.read == max(r.read for r in listed)
    assert max(rule.write.values()) == max(max(r.write.values()) for r in listed)
    assert min(rule.ttls.values()) <= min(min(r.ttls.values()) for r in listed)


def test_a_turn_costs_reads_and_writes_at_the_rule_prices() -> None:
    prompt, cached, written = 5000, 3000, 1500
    rest = prompt - cached - written
    assert GPT_56.turn_cost(prompt, cached, written) == rest + GPT_56.read * cached + GPT_56.write["30m"] * written
    claude = RULES["anthropic", OPUS]
    assert claude.turn_cost(prompt, cached, written, "1h") == rest + claude.read * cached + claude.write["1h"] * written
    assert claude.write["1h"] > claude.write["5m"] > 1 > claude.read


# OpenAI from GPT-5.6: breakpoints --------------------------------------------------------------------------------


def test_gpt_56_hits_only_at_an_earlier_breakpoint_and_exactly_there() -> None:
    cache = OpenAIPromptCache("gpt-5.6")
    boundary = GPT_56.min_tokens + 7  # not a multiple of anything: boundaries are not rounded
    prefix = random_tokens(1, boundary)
    first = prefix + random_tokens(2, 300)
    assert cache.serve_usage(first, breakpoints=[boundary, len(first)], now=0) == CacheUsage(0, len(first))
    second = prefix + random_tokens(3, 200)  # same stable prefix, another suffix
    assert cache.serve(second, breakpoints=[len(second)], now=1) == boundary
    third = prefix[:-1] + random_tokens(4, 500)  # shares all but the breakpoint's last token: no shorter fallback
    assert cache.serve(third, now=2) == 0


def test_gpt_56_explicit_mode_without_breakpoints_caches_nothing() -> None:
    cache = OpenAIPromptCache("gpt-5.6")
    prompt = random_tokens(5, 2 * GPT_56.min_tokens)
    assert cache.serve_usage(prompt, breakpoints=[], now=0) == CacheUsage(0, 0)
    assert cache.serve_usage(prompt, breakpoints=[], now=1) == CacheUsage(0, 0)


def test_gpt_56_writes_at_most_four_breakpoints_and_keeps_them_30_minutes() -> None:
    cache = OpenAIPromptCache("gpt-5.6")
    prompt = random_tokens(6, 2 * GPT_56.min_tokens)
    marks = list(range(GPT_56.min_tokens, len(prompt) + 1, 100))[: MAX_BREAKPOINTS + 1]
    with pytest.raises(CacheModelError, match="at most 4"):
        cache.serve(prompt, breakpoints=marks, now=0)
    cache.serve(prompt, now=0)
    ttl = GPT_56.ttls["30m"]
    assert cache.match(prompt, now=ttl - 1) == len(prompt)
    assert cache.match(prompt, now=2 * ttl) == 0


def test_openai_retention_names_depend_on_the_model() -> None:
    with pytest.raises(CacheModelError, match="'30m'"):
        OpenAIPromptCache("gpt-5.6", retention="24h")
    with pytest.raises(CacheModelError, match="'24h'"):
        OpenAIPromptCache("gpt-5.5", retention="in_memory")
    assert OpenAIPromptCache("gpt-5.5").ttl == RULES["openai", "gpt-5.5"].ttls["24h"]


def test_anthropic_minimum_follows_the_model_row() -> None:
    for (provider, model), rule in RULES.items():
        if provider == "anthropic":
            assert AnthropicPromptCache(model).min_cacheable_tokens == rule.min_tokens


# The replay: where the implicit, automatic and marked breakpoints fall ----------------------------------------------


def chat(user: str, *, marked: bool, **extra: Any) -> dict[str, Any]:
    system: Any = SYSTEM
    if marked:
        system = [{"type": "text", "text": SYSTEM, "prompt_cache_breakpoint": {"mode": "explicit"}}]
    return {
        "model": "gpt-5.6",
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
        **extra,
    }


@pytest.mark.parametrize("marked", [False, True])
def test_gpt_56_needs_an_explicit_breakpoint_to_reuse_a_stable_prefix_before_a_new_question(marked: bool) -> None:
    requests = [chat("first question", marked=marked), chat("a different question", marked=marked)]
    gpt_56, legacy = (explain(requests, cache=CacheOptions("openai", model=m)) for m in ("gpt-5.6", None))
    system_end = explain([chat("x", marked=False)], cache=CacheOptions("openai"))[0].predicted_prompt_tokens
    # the implicit breakpoint sits after the question, so only a marked system block carries over
    assert gpt_56[1].predicted_cached > 0 if marked else gpt_56[1].predicted_cached == 0
    assert gpt_56[1].predicted_cached < system_end
    assert legacy[1].predicted_cached > 0  # before GPT-5.6 any 128-token step of the shared prefix hits


def test_gpt_56_explicit_mode_ignores_the_implicit_breakpoint() -> None:
    explicit = {"prompt_cache_options": {"mode": "explicit"}}
    reports = explain([chat("q", marked=False, **explicit)] * 2, cache=CacheOptions("openai", model="gpt-5.6"))
    assert [r.predicted_cached for r in reports] == [0, 0]
    assert [r.predicted_written for r in reports] == [0, 0]


def test_anthropic_top_level_cache_control_is_an_automatic_breakpoint() -> None:
    def body(turns: int, automatic: bool) -> dict[str, Any]:
        messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(turns)]
        request: dict[str, Any] = {"model": OPUS, "system": SYSTEM, "messages": messages}
        return {**request, "cache_control": {"type": "ephemeral"}} if automatic else request

    options = CacheOptions("anthropic", model=OPUS)
    automatic = explain([body(1, True), body(3, True)], cache=options)
    assert automatic[0].predicted_written == automatic[0].predicted_prompt_tokens
    assert automatic[1].predicted_cached == automatic[0].predicted_prompt_tokens
    assert [r.predicted_cached for r in explain([body(1, False), body(3, False)], cache=options)] == [0, 0]


# explain --model ----------------------------------------------------------------------------------------------------


def test_explain_predicts_by_the_named_models_rule(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    lines = []
    for turn in range(3):
        messages = [*messages, {"role": "user", "content": f"question {turn}"}]
        lines.append(
            json.dumps({"session": "s", "ts": 60 * turn, "request": {"model": "gpt-5.6", "messages": messages}})
        )
        messages = [*messages, {"role": "assistant", "content": f"answer {turn}"}]
    trace.write_text("\n".join(lines) + "\n")
    for kind, model in (("openai", "gpt-5.6"), ("anthropic", OPUS)):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "agentcache",
                "explain",
                str(trace),
                "--cache",
                kind,
                "--model",
                model,
                "--format",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        out = json.loads(result.stdout)
        assert out["cache"]["model"] == model
        rule = lookup(kind, model)  # type: ignore[arg-type]
        assert rule is not None
        for turn in out["turns"]:
            expected = rule.turn_cost(
                turn["predicted_prompt_tokens"], turn["predicted_cached"], turn["predicted_written"]
            )
            assert turn["predicted_cost"] == pytest.approx(expected)
        if kind == "openai":  # implicit breakpoint: each turn reads the whole previous prompt
            turns = out["turns"]
            assert [t["predicted_cached"] for t in turns[1:]] == [t["predicted_prompt_tokens"] for t in turns[:-1]]
        else:  # no cache_control in the trace: Anthropic caches nothing
            assert {t["predicted_cached"] for t in out["turns"]} == {0}
