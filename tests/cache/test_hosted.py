"""OpenAIPromptCache and AnthropicPromptCache against the providers' published rules, one rule per test
(sources: docs/model-hosted.md)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache.cache.hosted import AnthropicPromptCache, CacheUsage, OpenAIPromptCache, lookback_positions
from agentcache.cache.rules import LOOKBACK_BLOCKS, MAX_BREAKPOINTS, RULES, TTL_SECONDS
from agentcache.errors import CacheModelError, UnknownModelWarning
from tests.cache.reference import common_prefix, random_tokens

PROPERTY = settings(max_examples=300, deadline=None)
LEGACY = RULES["openai", "gpt-4o"]
MIN = LEGACY.min_tokens
STEP = LEGACY.increment
IN_MEMORY = LEGACY.ttls["in_memory"]
FIVE_MINUTES, ONE_HOUR = TTL_SECONDS["5m"], TTL_SECONDS["1h"]
SONNET = "claude-sonnet-4-5"


# OpenAI ----------------------------------------------------------------------------------------------------------


def test_openai_does_not_cache_prompts_under_1024_tokens() -> None:
    cache = OpenAIPromptCache()
    short = random_tokens(1, MIN - 1)
    cache.serve(short, now=0)
    assert cache.serve(short, now=1) == 0
    exact = random_tokens(2, MIN)
    cache.serve(exact, now=2)
    assert cache.serve(exact, now=3) == MIN


def test_openai_hits_come_in_128_token_increments() -> None:
    cache = OpenAIPromptCache()
    prompt = random_tokens(3, MIN + 3 * STEP + 5)
    cache.serve(prompt, now=0)
    assert cache.serve(prompt, now=1) == MIN + 3 * STEP


def test_openai_a_shared_prefix_hits_only_from_1024_tokens() -> None:
    shared = random_tokens(4, MIN + STEP + 7)
    cache = OpenAIPromptCache()
    cache.serve([*shared, 1], now=0)
    assert cache.serve([*shared, 2], now=1) == MIN + STEP
    assert cache.serve([*shared[: MIN - 1], *random_tokens(5, 2 * STEP)], now=2) == 0


def test_openai_prompt_cache_key_separates_caches() -> None:
    prompt = random_tokens(6, 2 * MIN)
    cache = OpenAIPromptCache()
    cache.serve(prompt, extra_key="conversation-1", now=0)
    assert cache.serve(prompt, extra_key="conversation-2", now=1) == 0
    assert cache.serve(prompt, extra_key="conversation-1", now=2) == 2 * MIN


def test_openai_in_memory_prefixes_expire_when_idle() -> None:
    prompt = random_tokens(7, MIN)
    cache = OpenAIPromptCache()
    cache.serve(prompt, now=0)
    assert cache.match(prompt, now=IN_MEMORY - 1) == MIN
    assert cache.match(prompt, now=IN_MEMORY + 1) == 0
    assert cache.stats()["entries"] == 0


def test_openai_a_hit_restarts_the_idle_clock() -> None:
    prompt = random_tokens(8, MIN)
    cache = OpenAIPromptCache()
    cache.serve(prompt, now=0)
    assert cache.serve(prompt, now=IN_MEMORY * 0.8) == MIN
    assert cache.match(prompt, now=IN_MEMORY * 1.5) == MIN


def test_openai_extended_retention_keeps_prefixes_24_hours() -> None:
    prompt = random_tokens(9, MIN)
    day = LEGACY.ttls["24h"]
    cache = OpenAIPromptCache(retention="24h")
    cache.serve(prompt, now=0)
    assert cache.match(prompt, now=day - 1) == MIN
    assert cache.match(prompt, now=day + 1) == 0


def test_openai_caches_the_prompt_not_the_output() -> None:
    prompt, output = random_tokens(10, MIN + 10), random_tokens(11, 3 * STEP)
    cache = OpenAIPromptCache()
    cache.serve(prompt, output, now=0)
    assert cache.match(prompt + output, now=1) == len(prompt) // STEP * STEP


def test_openai_rejects_unknown_retention() -> None:
    with pytest.raises(CacheModelError, match="in_memory"):
        OpenAIPromptCache(retention="forever")


# Anthropic -------------------------------------------------------------------------------------------------------


def test_anthropic_writes_at_a_breakpoint_then_reads_it() -> None:
    cache = AnthropicPromptCache(SONNET)
    prompt = random_tokens(12, cache.min_cacheable_tokens + 100)
    assert cache.serve_usage(prompt, now=0) == CacheUsage(cached=0, written=len(prompt))
    assert cache.serve_usage(prompt, now=1) == CacheUsage(cached=len(prompt), written=0)
    assert cache.serve(prompt, now=2) == len(prompt)


def test_anthropic_does_not_cache_a_prefix_below_the_model_minimum() -> None:
    cache = AnthropicPromptCache(SONNET)
    prompt = random_tokens(13, cache.min_cacheable_tokens - 1)
    assert cache.serve_usage(prompt, now=0) == CacheUsage(cached=0, written=0)
    assert cache.serve_usage(prompt, now=1) == CacheUsage(cached=0, written=0)


def test_anthropic_minimum_comes_from_the_model_table_and_can_be_overridden() -> None:
    assert (
        AnthropicPromptCache("claude-haiku-4-5-20251001").min_cacheable_tokens
        == RULES["anthropic", "claude-haiku-4-5"].min_tokens
    )
    opus_4 = RULES["anthropic", "claude-opus-4"].min_tokens
    assert AnthropicPromptCache("claude-opus-4-20250514").min_cacheable_tokens == opus_4
    assert AnthropicPromptCache("claude-unlisted", min_cacheable_tokens=512).min_cacheable_tokens == 512
    with pytest.warns(UnknownModelWarning, match="claude-unlisted"):
        unlisted = AnthropicPromptCache("claude-unlisted")
    assert unlisted.min_cacheable_tokens == max(r.min_tokens for r in RULES.values() if r.provider == "anthropic")


def test_anthropic_a_moving_breakpoint_reads_the_previous_turn() -> None:
    cache = AnthropicPromptCache(SONNET)
    turn_1 = random_tokens(14, cache.min_cacheable_tokens + 10)
    turn_2 = turn_1 + random_tokens(15, 300)
    cache.serve_usage(turn_1, now=0)
    assert cache.serve_usage(turn_2, now=1) == CacheUsage(cached=len(turn_1), written=len(turn_2) - len(turn_1))


def blocks_of(size: int, count: int) -> list[int]:
    return [size * (i + 1) for i in range(count)]


def test_anthropic_lookback_reaches_20_blocks() -> None:
    blocks = blocks_of(10, 60)
    prompt = random_tokens(16, blocks[-1])
    written_at = 5
    for offset, expected in ((LOOKBACK_BLOCKS - 1, blocks[written_at]), (LOOKBACK_BLOCKS, 0)):
        cache = AnthropicPromptCache(min_cacheable_tokens=1)
        cache.serve(prompt, breakpoints=[blocks[written_at]], blocks=blocks, now=0)
        assert cache.serve(prompt, breakpoints=[blocks[written_at + offset]], blocks=blocks, now=1) == expected


def test_anthropic_counts_a_run_of_tool_calls_or_results_as_one_lookback_position() -> None:
    """Documented: each content block is a lookback position, but a run of tool_use blocks is one, and so is a run
    of tool_result blocks. A fan-out of 24 calls (OpenAI dialect: 24 ``tool`` messages) keeps the previous entry
    in reach; counted one per block it would not be."""
    user = {"role": "user", "content": "go"}
    calls = {"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}"} for i in range(24)]}
    results = [{"role": "tool", "tool_call_id": f"c{i}", "content": "ok"} for i in range(24)]
    values = [{"name": "read"}, "system", user, calls, *results, {"role": "assistant", "content": "done"}, user]
    positions = lookback_positions(values)
    assert positions == [0, 1, 2, 3, *[4] * 24, 5, 6]
    blocks = blocks_of(10, len(values))
    prompt = random_tokens(23, blocks[-1])
    for counted, expected in ((positions, blocks[2]), (None, 0)):
        cache = AnthropicPromptCache(min_cacheable_tokens=1)
        cache.serve(prompt[: blocks[2]], breakpoints=[blocks[2]], blocks=blocks[:3], now=0)
        assert cache.serve(prompt, breakpoints=[blocks[-1]], blocks=blocks, positions=counted, now=1) == expected
    # each block of a message is a position; Anthropic-dialect runs count once too
    text = {"type": "text", "text": "x"}
    use, result = {"type": "tool_use", "id": "a"}, {"type": "tool_result", "tool_use_id": "a"}
    assert lookback_positions([{"role": "user", "content": [text] * 25}]) == [24]
    assert lookback_positions(
        [{"role": "assistant", "content": [text, use, use]}, {"role": "user", "content": [result, result, text]}]
    ) == [1, 3]


def test_anthropic_an_earlier_breakpoint_is_checked_when_the_last_misses() -> None:
    blocks = blocks_of(10, 60)
    system_end = blocks[2]
    history = random_tokens(17, blocks[-1])
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    cache.serve(history, breakpoints=[system_end, blocks[10]], blocks=blocks, now=0)
    edited = history[:system_end] + random_tokens(18, len(history) - system_end)
    usage = cache.serve_usage(edited, breakpoints=[system_end, blocks[-1]], blocks=blocks, now=1)
    assert usage == CacheUsage(cached=system_end, written=blocks[-1] - system_end)


def test_anthropic_allows_at_most_four_breakpoints() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt = random_tokens(19, 100)
    marks = list(range(10, 10 * (MAX_BREAKPOINTS + 2), 10))
    cache.serve(prompt, breakpoints=marks[:MAX_BREAKPOINTS], now=0)
    with pytest.raises(CacheModelError, match="at most 4"):
        cache.serve(prompt, breakpoints=marks[: MAX_BREAKPOINTS + 1], now=0)


def test_anthropic_one_hour_breakpoints_must_come_before_five_minute_ones() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt = random_tokens(20, 100)
    cache.serve(prompt, breakpoints=[10, 20], ttl=["1h", "5m"], now=0)
    with pytest.raises(CacheModelError, match="longer TTLs first"):
        cache.serve(prompt, breakpoints=[10, 20], ttl=["5m", "1h"], now=0)


def test_anthropic_five_minute_entries_expire_unless_read() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt = random_tokens(21, 100)
    cache.serve(prompt, now=0)
    refreshed_at = FIVE_MINUTES * 0.7
    assert cache.serve(prompt, now=refreshed_at) == len(prompt)
    assert cache.match(prompt, now=refreshed_at + FIVE_MINUTES - 1) == len(prompt)
    assert cache.match(prompt, now=refreshed_at + FIVE_MINUTES + 1) == 0


def test_anthropic_an_entry_found_by_lookback_is_refreshed_by_the_read() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    turn_1 = random_tokens(30, 50)
    turn_2 = turn_1 + random_tokens(31, 50)
    cache.serve(turn_1, now=0)
    read_at = FIVE_MINUTES * 0.7
    assert cache.serve(turn_2, now=read_at) == len(turn_1)
    assert cache.match(turn_1, now=FIVE_MINUTES + 1) == len(turn_1)


def test_anthropic_every_breakpoint_of_a_request_refreshes_its_entry() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt = random_tokens(32, 100)
    cache.serve(prompt, breakpoints=[30, 90], now=0)
    used_at = FIVE_MINUTES * 0.7
    assert cache.serve(prompt, breakpoints=[30, 90], now=used_at) == 90
    assert cache.match(prompt[:30], now=FIVE_MINUTES + 1) == 30


def test_anthropic_one_hour_entries_outlive_five_minutes() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt = random_tokens(22, 100)
    cache.serve(prompt, ttl="1h", now=0)
    assert cache.match(prompt, now=FIVE_MINUTES + 1) == len(prompt)
    assert cache.match(prompt, now=ONE_HOUR + 1) == 0


def test_anthropic_a_one_hour_breakpoint_extends_a_five_minute_entry() -> None:
    # Model assumption (docs/model-hosted.md): an entry keeps the longest TTL any breakpoint asked for.
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt = random_tokens(33, 100)
    cache.serve(prompt, now=0)
    assert cache.serve(prompt, ttl="1h", now=1) == len(prompt)
    assert cache.match(prompt, now=FIVE_MINUTES + 2) == len(prompt)


def test_anthropic_writes_count_from_the_read_to_the_last_breakpoint() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt = random_tokens(23, 100)
    cache.serve(prompt, breakpoints=[30], now=0)
    assert cache.serve_usage(prompt, breakpoints=[30, 60, 90], now=1) == CacheUsage(cached=30, written=60)


def test_anthropic_caches_the_prompt_not_the_output() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt, output = random_tokens(24, 50), random_tokens(25, 20)
    cache.serve(prompt, output, now=0)
    assert cache.match(prompt + output, now=1) == len(prompt)


def test_anthropic_extra_key_separates_caches() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt = random_tokens(26, 50)
    cache.serve(prompt, extra_key="workspace-a", now=0)
    assert cache.match(prompt, extra_key="workspace-b", now=1) == 0


def test_anthropic_refuses_malformed_breakpoints() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt = random_tokens(27, 100)
    for marks in ([20, 10], [0], [101], [10, 10]):
        with pytest.raises(CacheModelError, match="strictly ascending"):
            cache.serve(prompt, breakpoints=marks, now=0)
    with pytest.raises(CacheModelError, match="not block ends"):
        cache.serve(prompt, breakpoints=[15], blocks=[10, 20], now=0)
    with pytest.raises(CacheModelError, match="'5m' or '1h'"):
        cache.serve(prompt, ttl="10m", now=0)  # type: ignore[arg-type]
    with pytest.raises(CacheModelError, match="one each"):
        cache.serve(prompt, breakpoints=[10, 20], ttl=["5m"], now=0)


def test_anthropic_stats_sum_reads_and_writes() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    prompt = random_tokens(28, 100)
    first, second = cache.serve_usage(prompt[:60], now=0), cache.serve_usage(prompt, now=1)
    stats = cache.stats()
    assert (stats["requests"], stats["cached_tokens"], stats["written_tokens"]) == (
        2,
        first.cached + second.cached,
        first.written + second.written,
    )


# Properties ------------------------------------------------------------------------------------------------------

BASE = random_tokens(29, MIN + 6 * STEP)
openai_prompts = st.tuples(
    st.sampled_from([None, "key"]),
    st.integers(0, len(BASE)),
    st.integers(0, 2),
    st.integers(0, 3 * STEP),
).map(lambda t: (t[0], BASE[: t[1]] + random_tokens(t[2], t[3])))


@PROPERTY
@given(stored=st.lists(openai_prompts, max_size=5), query=openai_prompts)
def test_openai_match_is_the_longest_common_prefix_in_steps_from_1024(
    stored: list[tuple[str | None, list[int]]], query: tuple[str | None, list[int]]
) -> None:
    cache = OpenAIPromptCache()
    for key, prompt in stored:
        cache.serve(prompt, extra_key=key, now=0)
    key, tokens = query
    reachable = [common_prefix(tokens, s) // STEP * STEP for k, s in stored if k == key and len(s) >= MIN]
    expected = max((n for n in reachable if n >= MIN), default=0)
    assert cache.match(tokens, extra_key=key, now=1) == expected


@PROPERTY
@given(
    minimum=st.integers(1, 12),
    prompts=st.lists(st.lists(st.integers(0, 1), min_size=1, max_size=24), max_size=8),
)
def test_anthropic_automatic_caching_reads_the_longest_earlier_prompt(minimum: int, prompts: list[list[int]]) -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=minimum)
    served: list[list[int]] = []
    for prompt in prompts:
        read = max((len(s) for s in served if len(s) >= minimum and prompt[: len(s)] == s), default=0)
        written = len(prompt) - read if len(prompt) >= minimum else 0
        assert cache.serve_usage(prompt, now=0) == CacheUsage(cached=read, written=written)
        served.append(prompt)


def test_a_request_without_breakpoints_reads_and_writes_nothing() -> None:
    cache = AnthropicPromptCache(min_cacheable_tokens=1)
    assert cache.serve_usage(list(range(10)), breakpoints=[], now=0) == CacheUsage(0, 0)


def test_time_going_backwards_is_an_error() -> None:
    cache = OpenAIPromptCache()
    tokens = list(range(2000))
    cache.serve(tokens, now=1000)
    with pytest.raises(CacheModelError, match="time went backwards"):
        cache.serve(tokens, now=0)
