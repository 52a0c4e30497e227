"""SlotCache: llama-server's slot choice and reported hits, rule by rule, against a brute-force reference, and live.

The rules are those of ``get_available_slot`` in llama.cpp's ``tools/server/server-context.cpp`` (the copy in
llama-cpp-python 0.3.36), as the module docstring lists them.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache.cache.slots import Slot, SlotCache
from agentcache.errors import CacheModelError
from tests.cache.reference import common_prefix, random_tokens
from tests.conftest import EngineInfo


def index(cache: SlotCache, slot: Slot) -> int:
    """Position of ``slot`` by identity (two empty slots compare equal as dataclasses)."""
    return next(i for i, s in enumerate(cache.slots) if s is slot)


def held(cache: SlotCache) -> list[list[int]]:
    return [list(s.tokens) for s in cache.slots]


def test_a_fresh_cache_uses_the_last_of_its_equally_unused_slots() -> None:
    cache = SlotCache(4)
    prompt = random_tokens(1, 20)
    assert index(cache, cache.select(prompt)) == 3
    assert cache.serve(prompt, [7, 8, 9]) == 0
    assert held(cache) == [[], [], [], [*prompt, 7, 8]]  # every output token but the last


def test_a_full_repeat_reports_all_but_the_last_token() -> None:
    cache = SlotCache(4)
    prompt = random_tokens(2, 30)
    cache.serve(prompt, [1, 2])
    assert cache.serve(prompt) == len(prompt) - 1
    assert cache.serve(prompt[:10]) == 9  # a prompt the slot holds more than: still one token computed


def test_output_tokens_but_the_last_are_reused() -> None:
    cache = SlotCache(4)
    prompt = random_tokens(3, 30)
    cache.serve(prompt, [11, 12, 13])
    assert cache.match([*prompt, 11, 12, 13, 14]) == len(prompt) + 2
    assert cache.serve([*prompt, 11, 12, 13, 14]) == len(prompt) + 2


def test_the_similarity_must_be_strictly_above_the_threshold() -> None:
    held_prompt = random_tokens(4, 20)
    other = random_tokens(5, 20)
    for shared, expected in [(2, 0), (3, 3)]:  # 2/20 is exactly 0.1: not enough; 3/20 is
        cache = SlotCache(2)
        cache.serve(held_prompt)  # into slot 1; slot 0 stays empty and least recently used
        prompt = held_prompt[:shared] + other[shared:]
        assert index(cache, cache.select(prompt)) == (0 if expected == 0 else 1)
        assert cache.serve(prompt) == expected


def test_a_custom_threshold() -> None:
    cache = SlotCache(2, similarity=0.5)
    base = random_tokens(6, 20)
    cache.serve(base)
    assert cache.serve(base[:10] + random_tokens(7, 10)) == 0  # 10/20 is not above 0.5
    cache.serve(base)
    assert cache.serve(base[:11] + random_tokens(8, 9)) == 11


def test_the_most_similar_slot_wins() -> None:
    cache = SlotCache(3)
    prompt = random_tokens(9, 20)
    cache.serve(prompt[:5] + random_tokens(10, 95))  # slot 2: shares 5 with prompt
    cache.serve(prompt[:8] + random_tokens(11, 92))  # 5/100 like slot 2, under 10%: slot 1; shares 8 with prompt
    assert index(cache, cache.select(prompt)) == 1
    assert cache.serve(prompt) == 8


def test_the_first_slot_wins_a_tie() -> None:
    cache = SlotCache(3)
    prompt = random_tokens(12, 20)
    x = prompt[:5] + random_tokens(13, 95)
    cache.serve(x)  # slot 2
    cache.serve(prompt[:5] + random_tokens(14, 95))  # slot 1, sharing as much with prompt
    cache.serve(x)  # slot 2 again, now the more recently used of the two
    assert index(cache, cache.select(prompt)) == 1
    assert cache.serve(prompt) == 5
    assert held(cache)[1] == prompt


def test_below_the_threshold_the_least_recently_used_slot_is_taken_and_its_prefix_still_counts() -> None:
    cache = SlotCache(2)
    a, b = random_tokens(15, 100), random_tokens(16, 100)
    cache.serve(a)  # slot 1
    cache.serve(b)  # slot 0
    prompt = a[:5] + random_tokens(17, 95)  # 5% like a: under the threshold
    assert index(cache, cache.select(prompt)) == 1  # a's slot is the least recently used anyway
    assert cache.serve(prompt) == 5
    assert cache.serve(a) == 0  # a was overwritten; b's slot is now the least recently used
    assert held(cache) == [a, prompt]


def test_a_zero_threshold_always_takes_the_least_recently_used_slot() -> None:
    """llama-server skips the similarity search when ``--slot-prompt-similarity`` is 0."""
    a, b = random_tokens(18, 20), random_tokens(19, 20)
    for similarity, expected in [(0.0, 0), (0.1, len(b) - 1)]:
        cache = SlotCache(2, similarity=similarity)
        cache.serve(a)
        cache.serve(b)
        assert cache.serve(b) == expected


def test_extra_key_separates_identical_prompts() -> None:
    cache = SlotCache(4)
    prompt = random_tokens(20, 30)
    assert cache.serve(prompt, extra_key="tenant-a") == 0
    assert cache.serve(prompt, extra_key="tenant-b") == 0
    assert cache.serve(prompt) == 0
    assert cache.serve(prompt, extra_key="tenant-a") == len(prompt) - 1
    assert cache.match(prompt, extra_key="tenant-c") == 0


def test_erase_empties_the_slots_but_keeps_their_use_order() -> None:
    """``POST /slots/{id}?action=erase`` clears the tokens; the slot's last-use time is only set when a request
    ends, so the least recently used slot is still picked first afterwards."""
    cache = SlotCache(2)
    prompt = random_tokens(21, 30)
    cache.serve(prompt)  # slot 1
    cache.serve(random_tokens(22, 30))  # slot 0
    cache.erase()
    assert held(cache) == [[], []]
    assert cache.stats()["cached_in_slots"] == 0
    assert index(cache, cache.select(prompt)) == 1
    assert cache.serve(prompt) == 0


def test_match_does_not_change_the_cache() -> None:
    cache = SlotCache(2)
    prompt = random_tokens(23, 10)
    cache.serve(prompt, [1, 2])
    before = held(cache)
    assert cache.match(prompt) == len(prompt)  # what is stored, without serve's one-token rule
    assert held(cache) == before


def test_stats() -> None:
    cache = SlotCache(3)
    prompt = random_tokens(24, 10)
    cache.serve(prompt, [1, 2])
    cache.serve(prompt, [1, 2])  # back into the same slot, which then holds prompt + [1] again
    assert cache.stats() == {
        "slots": 3,
        "cached_in_slots": len(prompt) + 1,
        "requests": 2,
        "prompt_tokens": 2 * len(prompt),
        "cached_tokens": len(prompt) - 1,
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"slots": 0}, "slots must be at least 1"),
        ({"similarity": -0.1}, "between 0 and 1"),
        ({"similarity": 1.5}, "between 0 and 1"),
    ],
)
def test_bad_arguments_raise(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(CacheModelError, match=match):
        SlotCache(**kwargs)


@pytest.mark.parametrize("tokens", [[], [-1], [2**32], [1.5]], ids=["empty", "negative", "too-large", "float"])
def test_bad_prompts_raise(tokens: list[Any]) -> None:
    with pytest.raises(CacheModelError):
        SlotCache().serve(tokens)


# The model against a brute-force reference.


@dataclass
class ReferenceSlots:
    """The documented rules, written as directly as possible: lists, a clock, and full scans."""

    slots: int
    similarity: float
    tokens: list[list[int]] = field(init=False)
    keys: list[Hashable] = field(init=False)
    used: list[int] = field(init=False)
    clock: int = 0

    def __post_init__(self) -> None:
        self.tokens = [[] for _ in range(self.slots)]
        self.keys = [None] * self.slots
        self.used = [-1] * self.slots

    def shared(self, i: int, prompt: Sequence[int], key: Hashable) -> int:
        return common_prefix(self.tokens[i], prompt) if self.keys[i] == key else 0

    def pick(self, prompt: Sequence[int], key: Hashable) -> int:
        if self.similarity != 0:
            scores = {i: self.shared(i, prompt, key) / len(prompt) for i in range(self.slots) if self.tokens[i]}
            above = {i: s for i, s in scores.items() if s > self.similarity}
            if above:
                best = max(above.values())
                return min(i for i, s in above.items() if s == best)
        oldest = min(self.used)
        return max(i for i in range(self.slots) if self.used[i] == oldest)

    def serve(self, prompt: list[int], outputs: list[int], key: Hashable) -> int:
        i = self.pick(prompt, key)
        hit = min(self.shared(i, prompt, key), len(prompt) - 1)
        self.clock += 1
        self.tokens[i], self.keys[i], self.used[i] = prompt + outputs[:-1], key, self.clock
        return hit

    def erase(self) -> None:
        self.tokens = [[] for _ in range(self.slots)]
        self.keys = [None] * self.slots


TOKENS = st.lists(st.integers(0, 2), max_size=4)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("new"), TOKENS.filter(bool), TOKENS, st.sampled_from([None, "k"])),
        st.tuples(st.just("continue"), TOKENS, TOKENS, st.sampled_from([None, "k"])),  # last prompt + outputs + more
        st.tuples(st.just("erase")),
    ),
    max_size=30,
)


@settings(max_examples=400, deadline=None)
@given(slots=st.integers(1, 4), similarity=st.sampled_from([0.0, 0.1, 0.25, 0.5]), ops=OPS)
def test_matches_the_reference(slots: int, similarity: float, ops: list[tuple[Any, ...]]) -> None:
    cache, reference = SlotCache(slots, similarity), ReferenceSlots(slots, similarity)
    last: list[int] = []
    for op in ops:
        if op[0] == "erase":
            cache.erase()
            reference.erase()
            assert held(cache) == reference.tokens
            continue
        _, tokens, outputs, key = op
        prompt = last + tokens if op[0] == "continue" else tokens
        if not prompt:
            continue
        assert index(cache, cache.select(prompt, key)) == reference.pick(prompt, key)
        assert cache.serve(prompt, outputs, key) == reference.serve(prompt, outputs, key)
        assert held(cache) == reference.tokens
        last = prompt + outputs


# Live: the model's prediction against llama-server's own timings.cache_n.


def tokens(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(199_998) for _ in range(n)]  # ordinary o200k ids (199998 is unassigned, 199999 special)


def test_predicts_llama_server_cache_n(llama_server: EngineInfo) -> None:
    """Three interleaved sessions (A; B and C sharing a 30-token system prompt) and a stray D on emptied slots.

    C's first request takes B's slot (30/180 > 10%); B's longer follow-up shares under 10% with it (30/332) and gets
    an empty slot; D1 shares exactly 10% with A's slot (not enough), D2 11% (enough: it evicts A); A's next turn
    finds nothing above 10% and takes the least recently used slot, B's; B then takes C's (by LRU, yet it still
    reuses the shared system prompt); D2 sent again reports all but its last token.
    """
    rng = random.Random(20240611)
    with httpx.Client(base_url=llama_server.url, timeout=300) as http:
        slots = http.get("/slots").json()
        for slot in slots:
            http.post(f"/slots/{slot['id']}", params={"action": "erase"}).raise_for_status()
        cache = SlotCache(len(slots))
        server_slot: dict[int, int] = {}  # the model's slot index -> llama-server's slot id
        history: dict[str, list[int]] = {}
        results: list[tuple[str, int, int]] = []  # (session, predicted, reported)

        def send(session: str, prompt: list[int]) -> None:
            body = {"prompt": prompt, "n_predict": 2, "cache_prompt": True, "temperature": 0, "return_tokens": True}
            answer = http.post("/completion", json={**body, "ignore_eos": True})  # always 2 output tokens
            answer.raise_for_status()
            result = answer.json()
            outputs = result["tokens"]
            timings = result["timings"]
            assert len(outputs) == 2 and timings["prompt_n"] + timings["cache_n"] == len(prompt)
            chosen = index(cache, cache.select(prompt))
            assert server_slot.setdefault(chosen, result["id_slot"]) == result["id_slot"], session
            history[session] = prompt + outputs
            results.append((session, cache.serve(prompt, outputs), timings["cache_n"]))

        system = tokens(rng, 30)
        a1 = tokens(rng, 120)
        d2 = a1[:13] + tokens(rng, 107)
        send("A", a1)
        send("B", system + tokens(rng, 200))
        send("C", system + tokens(rng, 150))
        send("A", history["A"] + tokens(rng, 30))
        send("B", history["B"] + tokens(rng, 100))
        send("C", history["C"] + tokens(rng, 40))
        send("D", a1[:12] + tokens(rng, 108))
        send("D", d2)
        send("A", history["A"] + tokens(rng, 20))
        send("B", history["B"] + tokens(rng, 30))
        send("D", d2)
        send("C", history["C"] + tokens(rng, 10))
    assert [(s, predicted) for s, predicted, _ in results] == [(s, reported) for s, _, reported in results]
    # The sequence exercises what the docstring says: the reported hits show each case happened.
    a2, c2 = len(a1) + 1, 30 + 150 + 1
    assert [r for _, _, r in results] == [0, 0, 30, a2, 0, c2, 0, 13, 0, 30, len(d2) - 1, 30]
