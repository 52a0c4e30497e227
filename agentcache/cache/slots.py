"""llama.cpp's ``llama-server`` prompt cache: a few slots, each keeping the tokens of the last request it served.

Unlike SGLang's radix tree, a request can only reuse the prefix it shares with the one slot it is given, so which
slot it gets decides its hit. ``llama-server`` (``get_available_slot``, llama.cpp as vendored by
llama-cpp-python 0.3.36) picks:

1. among idle slots holding tokens, the one whose longest common prefix with the prompt is the largest fraction
   of the prompt, if that fraction exceeds ``--slot-prompt-similarity`` (0.1); the first slot wins a tie;
2. otherwise the least recently used idle slot (the last of equals).

The hit is that common prefix, less one token when it covers the whole prompt (the last prompt token is always
computed, for its logits). The slot then holds the prompt and every output token but the last (the last sampled
token is never decoded into the cache).

Modelled with ``--cache-ram 0``: by default llama-server also keeps evicted slot contents in host RAM and may
restore one into the chosen slot, a second level this model leaves out, so with it the server can report more
than predicted. The slots share one KV pool of ``-c`` cells; when it fills, llama-server purges idle slots in
slot-id order, which this model leaves out too (size ``-c`` to hold every slot). Requests are modelled one at a
time (a slot busy with another request is not considered).
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from agentcache.cache.blockhash import token_array
from agentcache.cache.prefix import common_prefix
from agentcache.errors import CacheModelError

DEFAULT_SLOTS = 4
DEFAULT_SIMILARITY = 0.1


@dataclass
class Slot:
    tokens: array[int] = field(default_factory=lambda: array("I"))
    extra_key: Hashable = None
    last_used: int = -1


class SlotCache:
    """``slots`` is llama-server's ``--parallel`` (4 when left to choose); ``similarity`` its
    ``--slot-prompt-similarity``."""

    def __init__(self, slots: int = DEFAULT_SLOTS, similarity: float = DEFAULT_SIMILARITY) -> None:
        if slots < 1:
            raise CacheModelError(f"slots must be at least 1, got {slots}; pass llama-server's --parallel")
        if not 0.0 <= similarity <= 1.0:
            raise CacheModelError(f"similarity must be between 0 and 1, got {similarity} (--slot-prompt-similarity)")
        self.slots = [Slot() for _ in range(slots)]
        self.similarity = similarity
        self._clock = 0
        self._requests = 0
        self._prompt_tokens = 0
        self._cached_tokens = 0

    def select(self, tokens: Sequence[int], extra_key: Hashable = None) -> Slot:
        """The slot llama-server gives a prompt: best prefix similarity above the threshold, else least recent."""
        prompt = token_array(tokens)
        best: Slot | None = None
        best_similarity = 0.0
        if self.similarity != 0.0 and prompt:
            for slot in self.slots:
                if not slot.tokens:
                    continue
                similarity = self._shared(slot, prompt, extra_key) / len(prompt)
                if similarity > best_similarity and similarity > self.similarity:
                    best, best_similarity = slot, similarity
        if best is not None:
            return best
        lru = self.slots[0]
        for slot in self.slots[1:]:
            if slot.last_used <= lru.last_used:
                lru = slot
        return lru

    def match(self, tokens: Sequence[int], extra_key: Hashable = None) -> int:
        """Tokens of ``tokens`` the chosen slot holds now (what is stored, not what :meth:`serve` reports)."""
        return self._shared(self.select(tokens, extra_key), token_array(tokens), extra_key)

    def serve(
        self,
        prompt_tokens: Sequence[int],
        output_tokens: Sequence[int] = (),
        extra_key: Hashable = None,
        *,
        now: float | None = None,
        breakpoints: Sequence[int] | None = None,
        blocks: Sequence[int] | None = None,
    ) -> int:
        """One whole request: the ``cached_tokens`` llama-server reports, then the slot keeps the new tokens.
        ``now``, ``breakpoints`` and ``blocks`` are the hosted APIs' (see :class:`PrefixCacheModel`): unused."""
        if not prompt_tokens:
            raise CacheModelError("an empty prompt cannot be served; send at least one token")
        prompt = token_array(prompt_tokens)
        slot = self.select(prompt, extra_key)
        cached = min(self._shared(slot, prompt, extra_key), len(prompt) - 1)
        kept = array("I", prompt)
        kept.extend(token_array(output_tokens[:-1]))
        self._clock += 1
        slot.tokens, slot.extra_key, slot.last_used = kept, extra_key, self._clock
        self._requests += 1
        self._prompt_tokens += len(prompt)
        self._cached_tokens += cached
        return cached

    def minimum_tokens(self) -> int:
        return 0

    def erase(self) -> None:
        """Empty every slot, as ``POST /slots/{id}?action=erase`` does for each."""
        for slot in self.slots:
            slot.tokens, slot.extra_key = array("I"), None

    def stats(self) -> dict[str, int]:
        return {
            "slots": len(self.slots),
            "cached_in_slots": sum(len(s.tokens) for s in self.slots),
            "requests": self._requests,
            "prompt_tokens": self._prompt_tokens,
            "cached_tokens": self._cached_tokens,
        }

    @staticmethod
    def _shared(slot: Slot, prompt: array[int], extra_key: Hashable) -> int:
        return common_prefix(slot.tokens, prompt) if slot.extra_key == extra_key else 0
