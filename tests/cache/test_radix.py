"""RadixCache against a brute-force reference, and SGLang's reporting and eviction rules one by one."""

from __future__ import annotations

import copy
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache.cache import EvictedLeaf, RadixCache, RadixNode, sglang_namespace
from agentcache.cache.radix import EvictionPolicy
from agentcache.errors import CacheModelError

Path = tuple[int, ...]


def common_length(a: Sequence[int], b: Sequence[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


class Reference:
    """The cache as the set of sequences it holds per namespace; every answer by brute force.

    Evictions are applied as the model reports them, after checking that what it dropped was a whole cached leaf
    that no lock pins.
    """

    def __init__(self, page_size: int) -> None:
        self.page_size = page_size
        self.sequences: dict[Hashable, set[Path]] = {}
        self.locked: list[tuple[Hashable, Path]] = []

    def align(self, n: int) -> int:
        return n - n % self.page_size

    def match(self, namespace: Hashable, tokens: Sequence[int]) -> int:
        query = tuple(tokens[: self.align(len(tokens))])
        held = self.sequences.get(namespace, set())
        return self.align(max((common_length(query, s) for s in held), default=0))

    def insert(self, namespace: Hashable, tokens: Sequence[int]) -> None:
        sequence = tuple(tokens[: self.align(len(tokens))])
        if sequence:
            self.sequences.setdefault(namespace, set()).add(sequence)

    def tokens_under(self, paths: list[tuple[Hashable, Path]]) -> int:
        """Tokens the tree needs for ``paths``: one per distinct prefix, counted in whole pages (a page that
        differs in any token is a page of its own)."""
        step = self.page_size
        pages = {(ns, path[:k]) for ns, path in paths for k in range(step, len(path) + 1, step)}
        return len(pages) * step

    def stored(self) -> int:
        return self.tokens_under([(ns, s) for ns, held in self.sequences.items() for s in held])

    def pinned(self, extra: list[tuple[Hashable, Path]]) -> int:
        return self.tokens_under(self.locked + extra)

    def evict(self, leaf: EvictedLeaf) -> None:
        path, cut = leaf.tokens, len(leaf.tokens) - leaf.length
        assert leaf.length > 0 and cut % self.page_size == 0 and leaf.length % self.page_size == 0
        held = self.sequences.get(leaf.extra_key, set())
        below = {s for s in held if self.align(common_length(s, path)) > cut}
        assert below, f"evicted {path[cut:]} which was not cached"
        assert all(s == path[: len(s)] for s in below), "evicted a node that still had children"
        assert max(len(s) for s in below) == len(path), "evicted more than was cached"
        for ns, locked in self.locked:
            assert ns != leaf.extra_key or self.align(common_length(locked, path)) <= cut, "evicted a locked node"
        held -= below
        if cut:
            held.add(path[:cut])


@dataclass(frozen=True)
class Insert:
    namespace: Hashable
    tokens: list[int]


@dataclass(frozen=True)
class Match:
    namespace: Hashable
    tokens: list[int]
    lock: bool


@dataclass(frozen=True)
class Serve:
    namespace: Hashable
    prompt: list[int]
    output: list[int]


@dataclass(frozen=True)
class Unlock:
    index: int


@dataclass(frozen=True)
class Evict:
    num_tokens: int


Op = Insert | Match | Serve | Unlock | Evict

# Few distinct tokens make long shared prefixes, hence splits; the large ids share low bytes with small ones, so
# a comparison that is not token-aligned would be caught.
TOKENS = st.sampled_from([0, 0, 1, 1, 65537, 2**32 - 1])
SEQUENCES = st.lists(TOKENS, max_size=10)
NAMESPACES = st.sampled_from([None, "lora-a", ("lora-a", "salt")])
OPS = st.lists(
    st.one_of(
        st.builds(Insert, NAMESPACES, SEQUENCES),
        st.builds(Match, NAMESPACES, SEQUENCES, st.booleans()),
        st.builds(Serve, NAMESPACES, st.lists(TOKENS, min_size=1, max_size=10), st.lists(TOKENS, max_size=4)),
        st.builds(Unlock, st.integers(0, 5)),
        st.builds(Evict, st.integers(0, 12)),
    ),
    max_size=30,
)


def shortfall(cache: RadixCache, ref: Reference, namespace: Hashable, sequence: Sequence[int]) -> int | None:
    """Tokens the model must evict to cache ``sequence`` (0 when it fits), or None when it must refuse because
    the locked tokens, the prefix being extended among them, leave too little room."""
    cached = ref.match(namespace, sequence)
    new = ref.align(len(sequence)) - cached
    if cache.capacity is None or ref.stored() + new <= cache.capacity:
        return 0
    if ref.pinned([(namespace, tuple(sequence[:cached]))]) + new > cache.capacity:
        return None
    return ref.stored() + new - cache.capacity


def check_room_made(freed: list[EvictedLeaf], needed: int | None) -> None:
    """The model evicted only the shortfall: whole leaves, stopping at the first that covers it."""
    lengths = [leaf.length for leaf in freed]
    if not needed:
        assert not lengths
    else:
        assert sum(lengths[:-1]) < needed <= sum(lengths)


def apply(cache: RadixCache, ref: Reference, held: list[RadixNode], evicted: list[EvictedLeaf], op: Op) -> None:
    before = len(evicted)
    match op:
        case Insert(namespace, tokens):
            needed = shortfall(cache, ref, namespace, tokens)
            if needed is None:
                with pytest.raises(CacheModelError):
                    cache.insert(tokens, namespace)
            else:
                cached = ref.match(namespace, tokens)
                assert cache.insert(tokens, namespace) == cached
                ref.insert(namespace, tokens)
            check_room_made(evicted[before:], needed)
        case Match(namespace, tokens, lock):
            result = cache.match_prefix(tokens, namespace)
            assert result.length == ref.match(namespace, tokens)
            if lock:
                cache.lock(result.node)
                held.append(result.node)
                ref.locked.append((namespace, tuple(tokens[: result.length])))
        case Serve(namespace, prompt, output):
            reported = ref.match(namespace, prompt[:-1])
            computed = prompt + output[:-1]
            needed = shortfall(cache, ref, namespace, computed)
            if needed is None:
                with pytest.raises(CacheModelError):
                    cache.serve(prompt, output, namespace)
            else:
                assert cache.serve(prompt, output, namespace) == reported
                ref.insert(namespace, computed)
            check_room_made(evicted[before:], needed)
        case Unlock(index):
            if held:
                cache.unlock(held.pop(index % len(held)))
                ref.locked.pop(index % len(ref.locked))
        case Evict(num_tokens):
            freed = cache.evict(num_tokens)
            assert freed == sum(leaf.length for leaf in evicted[before:])
            assert freed >= num_tokens or cache.stats()["evictable_tokens"] == 0


@settings(max_examples=500, deadline=None)
@given(
    ops=OPS,
    page_size=st.sampled_from([1, 1, 2, 4]),
    capacity=st.one_of(st.none(), st.integers(4, 40)),
    policy=st.sampled_from(["lru", "lfu", "fifo"]),
)
def test_matches_brute_force_reference(
    ops: list[Op], page_size: int, capacity: int | None, policy: EvictionPolicy
) -> None:
    ref = Reference(page_size)
    evicted: list[EvictedLeaf] = []

    def on_evict(leaf: EvictedLeaf) -> None:
        evicted.append(leaf)
        ref.evict(leaf)

    cache = RadixCache(page_size, capacity, policy, on_evict=on_evict)
    held: list[RadixNode] = []
    for op in ops:
        apply(cache, ref, held, evicted, op)
        stats = cache.stats()
        assert stats["stored_tokens"] == ref.stored()
        assert stats["protected_tokens"] == ref.pinned([])
        assert capacity is None or stats["stored_tokens"] <= capacity
    while held:
        cache.unlock(held.pop())
    ref.locked.clear()
    remaining = ref.stored()
    assert cache.evict(remaining) == remaining
    assert cache.stats()["stored_tokens"] == 0 == ref.stored()
    assert cache.stats()["nodes"] == 0


@settings(max_examples=200, deadline=None)
@given(length=st.integers(1, 3000), page_size=st.sampled_from([1, 3, 16]), data=st.data())
def test_long_edges_match_up_to_the_first_difference(length: int, page_size: int, data: st.DataObject) -> None:
    stored = list(range(length))
    differ_at = data.draw(st.integers(0, length))
    query = [*stored[:differ_at], length, *stored[differ_at + 1 :]]
    cache = RadixCache(page_size)
    cache.insert(stored)
    aligned = length - length % page_size
    assert cache.match(query) == min(differ_at, aligned) // page_size * page_size


def test_repeated_prompt_reports_all_but_its_last_token() -> None:
    cache = RadixCache()
    prompt = list(range(1000, 1373))
    assert cache.serve(prompt) == 0
    assert cache.serve(prompt) == len(prompt) - 1
    assert cache.match(prompt) == len(prompt)


def test_page_size_rounds_reports_down_to_whole_pages() -> None:
    cache = RadixCache(page_size=16)
    prompt = list(range(1000, 1373))
    cache.serve(prompt)
    assert cache.serve(prompt) == (len(prompt) - 1) // 16 * 16
    assert cache.match(prompt[:40]) == 32
    assert cache.insert(prompt[:15]) == 0
    assert cache.stats()["stored_tokens"] == len(prompt) // 16 * 16


def test_last_output_token_has_no_kv() -> None:
    cache = RadixCache()
    prompt, output, user = list(range(50)), list(range(500, 510)), list(range(900, 920))
    cache.serve(prompt, output)
    assert cache.serve(prompt + output + user) == len(prompt) + len(output) - 1


def test_output_is_evicted_before_its_prompt() -> None:
    cache = RadixCache()
    prompt, output = list(range(50)), list(range(500, 510))
    cache.serve(prompt, output)
    assert cache.evict(1) == len(output) - 1
    assert cache.match(prompt + output) == len(prompt)


def test_namespaces_never_share() -> None:
    cache = RadixCache()
    tokens = list(range(30))
    cache.insert(tokens, extra_key=sglang_namespace(lora_id="adapter-1"))
    assert cache.match(tokens) == 0
    assert cache.match(tokens, sglang_namespace(cache_salt="user-7")) == 0
    assert cache.match(tokens, sglang_namespace(lora_id="adapter-1", cache_salt="user-7")) == 0
    assert cache.match(tokens, sglang_namespace(lora_id="adapter-1")) == len(tokens)


def test_sglang_namespace_follows_server_concatenation() -> None:
    assert sglang_namespace("ab", lora_id="c") == sglang_namespace("a", lora_id="bc")
    assert sglang_namespace("", cache_salt="") == sglang_namespace() is None
    assert sglang_namespace("x", cache_salt="s") != sglang_namespace("x")


def evicted_order(policy: EvictionPolicy, calls: list[tuple[str, list[int]]]) -> list[int]:
    """Run ``calls`` (insert/match) then evict everything; returns the first token of each leaf, in order."""
    order: list[int] = []
    cache = RadixCache(policy=policy, on_evict=lambda leaf: order.append(leaf.tokens[0]))
    for method, tokens in calls:
        getattr(cache, method)(tokens)
    cache.evict(cache.stats()["stored_tokens"])
    return order


def test_lru_evicts_least_recently_used_leaf_first() -> None:
    calls = [("insert", [1, 1]), ("insert", [2, 2]), ("insert", [3, 3]), ("match", [1, 1])]
    assert evicted_order("lru", calls) == [2, 3, 1]


def test_lfu_evicts_least_inserted_leaf_first() -> None:
    calls = [("insert", [1, 1]), ("insert", [1, 1]), ("insert", [2, 2]), ("match", [2, 2])]
    assert evicted_order("lfu", calls) == [2, 1]
    assert evicted_order("lru", calls) == [1, 2]


def test_lfu_split_keeps_the_hits_of_the_node_it_cut() -> None:
    calls = [("insert", [1, 2, 3, 4])] * 3 + [("match", [1, 2]), ("insert", [1, 2, 9])] + [("insert", [6, 6])] * 3
    assert evicted_order("lfu", calls) == [1, 1, 6, 1]


def test_fifo_evicts_oldest_leaf_first() -> None:
    calls = [("insert", [1, 1]), ("insert", [2, 2]), ("insert", [1, 1]), ("match", [1, 1])]
    assert evicted_order("fifo", calls) == [1, 2]


def test_split_touches_the_lower_part_and_keeps_the_creation_time() -> None:
    calls = [("insert", [1, 2, 3, 4]), ("insert", [5, 5]), ("match", [1, 2])]
    assert evicted_order("lru", calls) == [5, 1, 1]
    assert evicted_order("fifo", calls) == [1, 1, 5]


def test_eviction_order_survives_heap_compaction() -> None:
    calls = [("insert", [1, 1]), ("insert", [2, 2])] + [("match", [1, 1])] * 500
    assert evicted_order("lru", calls) == [2, 1]


def test_match_splits_so_the_tail_can_go_alone() -> None:
    cache = RadixCache()
    cache.insert([1, 2, 3, 4])
    assert cache.match([1, 2, 9]) == 2
    assert cache.stats()["nodes"] == 2
    assert cache.evict(1) == 2
    assert cache.match([1, 2, 3, 4]) == 2


def test_lock_pins_path_even_after_a_split_above_it() -> None:
    cache = RadixCache()
    sequence = [1, 2, 3, 4, 5, 6]
    cache.insert(sequence)
    handle = cache.match_prefix(sequence).node
    cache.lock(handle)
    cache.insert([1, 2, 9])
    cache.evict(100)
    assert cache.match(sequence) == len(sequence)
    assert cache.stats()["protected_tokens"] == len(sequence)
    cache.unlock(handle)
    assert cache.evict(100) == len(sequence)
    with pytest.raises(CacheModelError, match="not in this cache"):
        cache.lock(handle)


def test_unlock_without_lock_is_refused() -> None:
    cache = RadixCache()
    cache.insert([1, 2, 3])
    handle = cache.match_prefix([1, 2, 3]).node
    with pytest.raises(CacheModelError, match="not locked"):
        cache.unlock(handle)
    with pytest.raises(CacheModelError, match="not in this cache"):
        RadixCache().lock(handle)


def test_capacity_evicts_to_make_room_or_refuses_when_locked() -> None:
    cache = RadixCache(capacity=10)
    cache.insert([1] * 8)
    cache.insert([2] * 5)
    assert cache.stats()["stored_tokens"] == 5
    assert cache.match([1] * 8) == 0
    cache.lock(cache.match_prefix([2] * 5).node)
    with pytest.raises(CacheModelError, match="locked"):
        cache.insert([3] * 6)
    assert cache.stats()["stored_tokens"] == 5


@pytest.mark.parametrize("tokens", [[-1], [2**32], [1.5]])
def test_rejects_tokens_that_are_not_u32(tokens: list[int]) -> None:
    with pytest.raises(CacheModelError, match="token ids"):
        RadixCache().insert(tokens)


def test_rejects_bad_configuration() -> None:
    with pytest.raises(CacheModelError, match="page_size"):
        RadixCache(page_size=0)
    with pytest.raises(CacheModelError, match="capacity"):
        RadixCache(page_size=16, capacity=8)
    with pytest.raises(CacheModelError, match="policy"):
        RadixCache(policy="mru")  # type: ignore[arg-type]
    with pytest.raises(CacheModelError, match="empty prompt"):
        RadixCache().serve([])


def test_drop_takes_out_what_the_server_evicted_and_keeps_what_a_request_holds() -> None:
    """The server's KV events name a path and where its evicted part starts: that part goes, with everything below
    it, and nothing else; a locked node (a running request's) stays."""
    cache = RadixCache()
    cache.insert([1, 2, 3, 4, 5, 6])
    cache.insert([1, 2, 3, 7, 8])
    assert cache.drop([1, 2, 3, 4, 5, 6], 4) == 2
    assert cache.match([1, 2, 3, 4, 5, 6]) == 4 and cache.match([1, 2, 3, 7, 8]) == 5
    cache.lock(cache.match_prefix([1, 2, 3, 7, 8]).node)
    assert cache.drop([1, 2, 3, 7, 8], 3) == 0 and cache.match([1, 2, 3, 7, 8]) == 5
    assert cache.drop([9, 9], 0) == 0  # a path the model does not hold
    assert cache.drop([1, 2, 3, 4], 0) == 1  # from the root: the locked branch stays
    assert cache.match([1, 2, 3, 4]) == 3 and cache.stats()["evicted_tokens"] == 3


@settings(max_examples=300, deadline=None)
@given(
    prompts=st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=14), min_size=1, max_size=16),
    looks=st.lists(st.lists(st.integers(0, 4), max_size=16), max_size=6),
    page_size=st.sampled_from([1, 2, 4]),
    capacity=st.one_of(st.none(), st.integers(16, 40)),  # a prompt is at most 14 tokens: it always fits
)
def test_peek_is_match_without_touching_the_tree(
    prompts: list[list[int]], looks: list[list[int]], page_size: int, capacity: int | None
) -> None:
    """A router asks every worker what it holds before choosing one: the answer is ``match``'s, and the tree
    evicts afterwards exactly as a tree nobody asked would."""
    evictions: dict[str, list[EvictedLeaf]] = {"peeked": [], "left": []}
    peeked = RadixCache(page_size, capacity, on_evict=evictions["peeked"].append)
    left = RadixCache(page_size, capacity, on_evict=evictions["left"].append)
    for prompt in prompts:
        for look in looks:
            assert peeked.peek(look) == copy.deepcopy(peeked).match(look)
        assert peeked.serve(prompt) == left.serve(prompt)
    assert peeked.stats() == left.stats()
    assert peeked.evict(10**6) == left.evict(10**6)
    assert evictions["peeked"] == evictions["left"]
