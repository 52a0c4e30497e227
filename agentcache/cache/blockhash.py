"""vLLM's Automatic Prefix Caching (v1 engine), modelled on the client.

vLLM does not keep a tree. It cuts every sequence into fixed-size blocks and names each *full* block by a hash
chained over (parent block's hash, the block's tokens, extra keys), so one dictionary lookup per block finds the
longest cached prefix: a block can only hit if every block before it hit too. Consequences the model reproduces:

* hits come in whole blocks, and a partial last block is never cached;
* when the whole prompt is cached, the last token is still recomputed (the sampler needs its logits), so a hit
  is at most ``prompt_len - 1`` tokens, rounded down to blocks -- a 64-token prompt repeated at block size 32
  reports 32 cached, not 64;
* a finished request's blocks are freed tail first, so under memory pressure a conversation loses its newest
  blocks before its shared head;
* identical blocks computed twice are not de-duplicated: both copies hold memory.

Requests are modelled one at a time (each finishes before the next starts), which is how an agent loop talks to
the server. Sources, rule by rule: docs/model-vllm.md.
"""

from __future__ import annotations

import hashlib
from array import array
from collections import OrderedDict
from collections.abc import Hashable, Iterator, Sequence
from itertools import count

from agentcache.errors import CacheModelError

DEFAULT_BLOCK_SIZE = 16
"""vLLM's default ``--block-size`` on GPU. Its CPU backend needs a multiple of 32."""

_DIGEST_SIZE = 16


def token_array(tokens: Sequence[int]) -> array[int]:
    """Pack token ids as unsigned 32-bit integers: the bytes every hash in agentcache.cache is taken over.

    A list goes through ``fromlist``, which reads the ints without touching their reference counts: on a long
    prompt whose ints are no longer in the CPU cache that saves about a quarter of the time."""
    try:
        if type(tokens) is list:
            packed = array("I")
            packed.fromlist(tokens)
            return packed
        return array("I", tokens)
    except (OverflowError, TypeError) as exc:
        raise CacheModelError(
            f"token ids must be integers in [0, 2**32) ({exc}); pass the ids the server's tokenizer produced"
        ) from exc


def root_hash(extra_key: Hashable) -> bytes:
    """The parent hash of a sequence's first block (vLLM's ``NONE_HASH``), salted by ``extra_key``.

    vLLM mixes ``cache_salt`` into the first block only and LoRA names into every block; because each hash
    chains over its parent, both simply partition the cache, which salting the root reproduces. ``None`` and
    ``""`` mean no key (vLLM ignores an empty salt); a string keys by its text, anything else by its ``repr``, so
    use strings, ints or tuples of them. Unlike vLLM's random per-process seed, this root is fixed, so two runs
    of the model agree.
    """
    if extra_key is None or extra_key == "":
        material = b"none"
    elif isinstance(extra_key, str):
        material = b"str:" + extra_key.encode("utf-8", "surrogatepass")
    else:
        material = b"repr:" + repr(extra_key).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(material, digest_size=_DIGEST_SIZE).digest()


def block_hashes(tokens: Sequence[int], block_size: int, extra_key: Hashable = None) -> list[bytes]:
    """Chained hashes of every full block of ``tokens`` (vLLM's ``hash_block_tokens``); a partial tail has none."""
    packed = token_array(tokens)
    parent = root_hash(extra_key)
    hashes: list[bytes] = []
    for start in range(0, len(packed) - block_size + 1, block_size):
        digest = hashlib.blake2b(parent, digest_size=_DIGEST_SIZE)
        digest.update(packed[start : start + block_size])
        parent = digest.digest()
        hashes.append(parent)
    return hashes


class BlockHashCache:
    """vLLM's prefix cache: full blocks named by chained hashes, evicted least-recently-freed first.

    ``num_blocks`` is the KV pool size the server logs at start-up (its KV cache size in tokens divided by the
    block size); ``None`` models an unbounded pool that never evicts. As in vLLM, block 0 is a reserved null
    block, so ``num_blocks - 1`` blocks hold KV.

    Free blocks come in two kinds. Blocks without a hash (never full, or evicted) are spare and are reused first;
    cached blocks whose request has finished wait in LRU order and are evicted, front first, only when no spare
    block is left. A finished request's cached blocks join the back of that queue last block first, so its tail
    is evicted before its head.
    """

    def __init__(self, block_size: int = DEFAULT_BLOCK_SIZE, num_blocks: int | None = None) -> None:
        if block_size < 1:
            raise CacheModelError(f"block_size must be at least 1, got {block_size}; vLLM's default is 16")
        if num_blocks is not None and num_blocks < 2:
            raise CacheModelError(
                f"num_blocks must be at least 2 (block 0 is vLLM's null block), got {num_blocks}; "
                "pass the block count the server logs, or None for an unbounded pool"
            )
        self.block_size = block_size
        self.num_blocks = num_blocks
        self._hash_of: dict[int, bytes] = {}
        """Block id -> its hash, for every block that holds a cached full block."""
        self._blocks_of: dict[bytes, list[int]] = {}
        """Hash -> blocks holding it; a lookup takes the first (vLLM's ``cached_block_hash_to_block``)."""
        self._evictable: OrderedDict[int, None] = OrderedDict()
        """Free cached blocks, next victim first."""
        self._spare: list[int] = [] if num_blocks is None else list(range(num_blocks - 1, 0, -1))
        self._new_ids: Iterator[int] = count(1)
        self._requests = 0
        self._prompt_tokens = 0
        self._cached_tokens = 0
        self._evicted_blocks = 0
        self._namespaces: dict[Hashable, None] = {}

    def match(self, tokens: Sequence[int], extra_key: Hashable = None) -> int:
        """Tokens of ``tokens`` cached now, in whole blocks. Looks only: LRU order is untouched."""
        return len(self._hit_blocks(block_hashes(tokens, self.block_size, extra_key))) * self.block_size

    peek = match  # vLLM's match looks only: the name a router's question has on every engine model

    def insert(self, tokens: Sequence[int], extra_key: Hashable = None) -> int:
        """Compute ``tokens`` the way a request would and keep their full blocks; returns the tokens that hit."""
        return self._run(tokens, len(tokens), extra_key)

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
        """One whole request: returns ``usage.prompt_tokens_details.cached_tokens`` as vLLM reports it.

        The hit is capped at ``len(prompt_tokens) - 1`` and rounded down to blocks (``get_computed_blocks``).
        Afterwards the full blocks of the prompt and of all output tokens but the last are cached: the last
        sampled token is returned without ever being fed back, so it has no KV. vLLM omits
        ``prompt_tokens_details`` when nothing hit; read that as 0. ``now``, ``breakpoints`` and ``blocks`` are
        the hosted APIs' (see :class:`PrefixCacheModel`): unused.
        """
        if not prompt_tokens:
            raise CacheModelError("an empty prompt cannot be served (vLLM rejects it); send at least one token")
        computed = [*prompt_tokens, *output_tokens[:-1]]
        cached = self._run(computed, len(prompt_tokens) - 1, extra_key)
        self._requests += 1
        self._prompt_tokens += len(prompt_tokens)
        self._cached_tokens += cached
        return cached

    def minimum_tokens(self) -> int:
        return 0

    def evict(self, num_tokens: int) -> int:
        """Evict free cached blocks, next victim first, until ``num_tokens`` are gone; returns tokens evicted."""
        evicted = 0
        while evicted < num_tokens and self._evictable:
            block, _ = self._evictable.popitem(last=False)
            self._drop_hash(block)
            self._release_spare(block)
            evicted += self.block_size
        return evicted

    def namespaces(self) -> list[Hashable]:
        """The ``extra_key`` of every request served so far."""
        return list(self._namespaces)

    def drop(self, tokens: Sequence[int], start: int, extra_key: Hashable = None) -> int:
        """The server evicted the blocks of ``tokens`` from token ``start`` on (its KV events): drop one copy of each
        that a free block holds. Returns the tokens dropped.

        Unlike SGLang's tree, nothing after them goes: vLLM evicts single free blocks as it reuses them
        (``BlockPool.get_new_blocks``), and a later block keeps its hash. The lookup stops at the first missing block,
        so that block cannot hit until a request computes the missing one again; the lookup then reaches it again,
        and the copy computed beside it is a second copy of the same hash, as the model's own ``serve`` makes."""
        dropped = 0
        for block_hash in block_hashes(tokens, self.block_size, extra_key)[start // self.block_size :]:
            free = [block for block in self._blocks_of.get(block_hash, ()) if block in self._evictable]
            if free:
                del self._evictable[free[0]]
                self._drop_hash(free[0])
                self._release_spare(free[0])
                dropped += self.block_size
        return dropped

    def stats(self) -> dict[str, int]:
        """Counters: ``requests``, ``prompt_tokens``, ``cached_tokens`` (over :meth:`serve` calls) and the pool:
        ``stored_blocks`` / ``stored_tokens`` (cached blocks, duplicates included), ``evicted_blocks``."""
        return {
            "requests": self._requests,
            "prompt_tokens": self._prompt_tokens,
            "cached_tokens": self._cached_tokens,
            "stored_blocks": len(self._hash_of),
            "stored_tokens": len(self._hash_of) * self.block_size,
            "evicted_blocks": self._evicted_blocks,
        }

    def _hit_blocks(self, hashes: Sequence[bytes]) -> list[int]:
        """Blocks of the longest cached chain: the walk stops at the first hash nobody holds."""
        hits: list[int] = []
        for block_hash in hashes:
            holders = self._blocks_of.get(block_hash)
            if not holders:
                break
            hits.append(holders[0])
        return hits

    def _run(self, tokens: Sequence[int], max_hit_tokens: int, extra_key: Hashable) -> int:
        """Admit a request that computes ``tokens``, let it finish, free its blocks; returns the tokens that hit."""
        hashes = block_hashes(tokens, self.block_size, extra_key)
        self._namespaces[extra_key] = None
        hits = self._hit_blocks(hashes[: max_hit_tokens // self.block_size])
        needed = -(-len(tokens) // self.block_size)
        if self.num_blocks is not None and needed > self.num_blocks - 1:
            raise CacheModelError(
                f"a request of {len(tokens)} tokens needs {needed} blocks of {self.block_size} but the pool has "
                f"{self.num_blocks - 1} usable (num_blocks={self.num_blocks}, one is the null block); vLLM would "
                "never schedule it: raise num_blocks or shorten the request"
            )
        for block in hits:  # touch: a hit block is in use, so it cannot be evicted by this request's allocations
            self._evictable.pop(block)
        blocks = hits + [self._allocate() for _ in range(needed - len(hits))]
        for block, block_hash in zip(blocks[len(hits) :], hashes[len(hits) :], strict=False):
            self._hash_of[block] = block_hash
            self._blocks_of.setdefault(block_hash, []).append(block)
        for block in reversed(blocks):
            if block in self._hash_of:
                self._evictable[block] = None
            else:
                self._release_spare(block)
        return len(hits) * self.block_size

    def _allocate(self) -> int:
        """A block for new KV: a spare one if any, else the next victim (whose hash is dropped)."""
        if self._spare:
            return self._spare.pop()
        if self.num_blocks is None:
            return next(self._new_ids)
        block, _ = self._evictable.popitem(last=False)
        self._drop_hash(block)
        return block

    def _drop_hash(self, block: int) -> None:
        block_hash = self._hash_of.pop(block)
        holders = self._blocks_of[block_hash]
        holders.remove(block)
        if not holders:
            del self._blocks_of[block_hash]
        self._evicted_blocks += 1

    def _release_spare(self, block: int) -> None:
        """An unbounded pool forgets spare blocks (it can always make more); a bounded one keeps them for reuse."""
        if self.num_blocks is not None:
            self._spare.append(block)
