"""SGLang's RadixAttention prefix cache, modelled on the client.

SGLang keeps the KV of every finished request in one radix tree (a compressed trie over token ids) and reuses the
longest cached prefix of each new request. The model keeps the same tree without the KV, so it can say how many
tokens a request will find cached and what the server will keep afterwards. What it reproduces:

* matching is token-exact; with ``page_size > 1`` keys are cut to whole pages and compared page by page;
* a match or insert that ends inside an edge splits it, so a later eviction can drop the tail alone;
* the server reports at most ``len(prompt) - 1`` cached tokens: the last prompt token is always recomputed;
* a finished request leaves its prompt and every output token but the last (which never had KV) in the tree,
  split at the prompt's end so its output can be evicted before its prompt;
* different ``extra_key`` namespaces (cache_salt, LoRA id) never share a node;
* locked nodes (running requests) are never evicted; eviction takes unlocked leaves, LRU first by default.

Sources, rule by rule: docs/model-sglang.md.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from agentcache.cache.blockhash import token_array
from agentcache.errors import CacheModelError

EvictionPolicy = Literal["lru", "lfu", "fifo"]

_TOKEN_BYTES = array("I").itemsize


class RadixNode:
    """A node of the tree, and the handle :meth:`RadixCache.match_prefix` returns for :meth:`RadixCache.lock`.

    ``label`` is the edge into the node: its token ids packed as unsigned 32-bit integers, so a run of tokens is
    compared by one ``bytes.startswith`` in C instead of a Python loop, and stored at 4 bytes a token.
    """

    __slots__ = ("children", "created", "hits", "label", "last_access", "lock_ref", "parent", "stamp")

    def __init__(self, label: bytes, parent: RadixNode | None, clock: int) -> None:
        self.label = label
        self.parent = parent
        self.children: dict[bytes, RadixNode] | None = None
        """Children keyed by the first page of their label; None for a leaf, which saves most nodes a dict."""
        self.lock_ref = 0
        self.last_access = clock
        self.created = clock
        self.hits = 0
        self.stamp = 0
        """The stamp of this node's live entry in the eviction heap; entries with another stamp are stale."""


class _Root(RadixNode):
    """The empty root of one namespace. Never evicted, never locked."""

    __slots__ = ("namespace",)

    def __init__(self, namespace: Hashable) -> None:
        super().__init__(b"", None, 0)
        self.namespace = namespace


@dataclass(frozen=True, slots=True)
class MatchResult:
    """The longest cached prefix: its ``length`` in tokens and the ``node`` it ends on (a handle to lock)."""

    length: int
    node: RadixNode


@dataclass(frozen=True, slots=True)
class EvictedLeaf:
    """A leaf the cache dropped: the last ``length`` of ``tokens`` (the path from the root) are gone."""

    extra_key: Hashable
    tokens: tuple[int, ...]
    length: int


def sglang_namespace(
    extra_key: str | None = None, lora_id: str | None = None, cache_salt: str | None = None
) -> Hashable:
    """The namespace SGLang files a request under; pass it as ``extra_key`` to :class:`RadixCache`.

    SGLang appends the LoRA id to the request's ``extra_key`` string, so ``"ab"`` with LoRA ``"c"`` and ``"a"``
    with LoRA ``"bc"`` share cache; ``cache_salt`` separates on top of that. Empty strings count as absent.
    """
    key = extra_key or None
    if lora_id is not None:
        key = (key or "") + lora_id
    salt = cache_salt or None
    return key if salt is None else (key, salt)


class RadixCache:
    """SGLang's radix-tree prefix cache: what a server holds, and what it reports, request by request.

    ``page_size`` is the server's ``--page-size`` (1 by default). ``capacity`` is the KV pool in tokens
    (``--max-total-tokens``); ``None`` never evicts. ``policy`` is ``--radix-eviction-policy``. ``on_evict`` is
    told about every leaf dropped, whether by :meth:`evict` or to make room for an insert.

    Requests are modelled one at a time; a request that should stay running across calls is modelled by
    :meth:`lock` on its :class:`MatchResult` node until :meth:`unlock`.
    """

    def __init__(
        self,
        page_size: int = 1,
        capacity: int | None = None,
        policy: EvictionPolicy = "lru",
        on_evict: Callable[[EvictedLeaf], None] | None = None,
    ) -> None:
        if page_size < 1:
            raise CacheModelError(f"page_size must be at least 1, got {page_size}; SGLang's default is 1")
        if capacity is not None and capacity < page_size:
            raise CacheModelError(
                f"capacity must hold at least one page ({page_size} tokens), got {capacity}; pass the server's "
                "--max-total-tokens, or None for a pool that never evicts"
            )
        if policy not in _PRIORITY:
            raise CacheModelError(f"unknown eviction policy {policy!r}; use one of {sorted(_PRIORITY)}")
        self.page_size = page_size
        self.capacity = capacity
        self.policy = policy
        self._priority = _PRIORITY[policy]
        self._on_evict = on_evict
        self._page = page_size * _TOKEN_BYTES
        self._roots: dict[Hashable, _Root] = {}
        self._clock = 0
        self._stamps = 0
        self._heap: list[tuple[int, int, int, RadixNode]] = []
        """Evictable leaves by priority, with lazy deletion: an entry counts only while its stamp is current."""
        self._evictable = 0
        self._protected = 0
        self._nodes = 0
        self._evicted = 0
        self._requests = 0
        self._prompt_tokens = 0
        self._cached_tokens = 0

    def match_prefix(self, tokens: Sequence[int], extra_key: Hashable = None) -> MatchResult:
        """The longest cached prefix of ``tokens``, in whole pages; refreshes its recency as SGLang does."""
        key = self._key(tokens)
        node, matched = self._walk(self._root(extra_key), key, 0, len(key))
        self._offer(node)
        return MatchResult(matched // _TOKEN_BYTES, node)

    def match(self, tokens: Sequence[int], extra_key: Hashable = None) -> int:
        """Tokens of ``tokens`` cached now (what is stored, not what :meth:`serve` reports)."""
        return self.match_prefix(tokens, extra_key).length

    def peek(self, tokens: Sequence[int], extra_key: Hashable = None) -> int:
        """Tokens of ``tokens`` cached now, looking only (recency untouched): what a router asks of every worker
        before it sends the request to one."""
        key, pos, page = self._key(tokens), 0, self._page
        node: RadixNode | None = self._roots.get(extra_key)
        while node is not None and node.children and pos < len(key):
            node = node.children.get(key[pos : pos + page])
            if node is None:
                break
            if not key.startswith(node.label, pos):
                pos += self._common_prefix(key, pos, len(key), node.label)
                break
            pos += len(node.label)
        return pos // _TOKEN_BYTES

    def insert(self, tokens: Sequence[int], extra_key: Hashable = None) -> int:
        """Cache ``tokens`` (cut to whole pages), evicting to make room; returns how many were cached already."""
        key = self._key(tokens)
        return self._insert(self._root(extra_key), key, 0, len(key)) // _TOKEN_BYTES

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
        """One whole request: returns the ``cached_tokens`` SGLang reports, then keeps what SGLang keeps.

        The hit is looked up on the prompt without its last token (at least one token is recomputed to get
        logits), in whole pages. Then the request's own tokens are inserted below the hit, which stays pinned
        meanwhile: the prompt and all output tokens but the last, split at the prompt's end. ``now``,
        ``breakpoints`` and ``blocks`` are the hosted APIs' (see :class:`PrefixCacheModel`): unused.
        """
        if not prompt_tokens:
            raise CacheModelError("an empty prompt cannot be served (SGLang rejects it); send at least one token")
        prompt_bytes = len(prompt_tokens) * _TOKEN_BYTES
        computed = token_array(prompt_tokens)
        computed.extend(token_array(output_tokens[:-1]))
        key = computed.tobytes()
        node, cached = self._walk(self._root(extra_key), key, 0, self._align(prompt_bytes - _TOKEN_BYTES))
        kept = self._align(len(key))
        self._insert(node, key, cached, kept)
        boundary = self._align(prompt_bytes)
        if boundary < kept:
            self._walk(node, key, cached, boundary)
        self._requests += 1
        self._prompt_tokens += len(prompt_tokens)
        self._cached_tokens += cached // _TOKEN_BYTES
        return cached // _TOKEN_BYTES

    def minimum_tokens(self) -> int:
        return 0

    def lock(self, node: RadixNode) -> None:
        """Pin ``node`` and its ancestors against eviction, as a running request does (``inc_lock_ref``)."""
        self._check_handle(node)
        self._lock(node)

    def unlock(self, node: RadixNode) -> None:
        """Undo one :meth:`lock` of ``node`` (``dec_lock_ref``); unlocked leaves become evictable again."""
        self._check_handle(node)
        if node.parent is not None and node.lock_ref == 0:
            raise CacheModelError(
                "unlock() of a node that is not locked; every unlock() must pair with an earlier lock() of the "
                "same handle"
            )
        self._unlock(node)

    def evict(self, num_tokens: int) -> int:
        """Drop unlocked leaves, lowest priority first, until ``num_tokens`` are gone or none is left.

        Whole leaves go, so more than ``num_tokens`` may be freed; a parent left childless becomes a candidate
        in turn. Returns the tokens freed.
        """
        freed = 0
        heap = self._heap
        while freed < num_tokens and heap:
            _, _, stamp, node = heapq.heappop(heap)
            if stamp == node.stamp and self._is_evictable_leaf(node):
                freed += self._delete_leaf(node)
        return freed

    def namespaces(self) -> list[Hashable]:
        """The ``extra_key`` of every tree the cache holds (one per namespace served so far)."""
        return list(self._roots)

    def drop(self, tokens: Sequence[int], start: int, extra_key: Hashable = None) -> int:
        """Drop what is cached of ``tokens`` from token ``start`` on, and everything below it: the server said it
        evicted that part (its KV events). Nodes a request has locked stay. Returns the tokens dropped."""
        key = self._key(tokens)
        at = start * _TOKEN_BYTES
        node, reached = self._walk(self._root(extra_key), key, 0, at)
        child = node.children.get(key[at : at + self._page]) if node.children and reached == at else None
        if child is None:
            return 0  # the model does not hold that part of the path: nothing to drop
        below: list[RadixNode] = []
        stack = [child]
        while stack:
            current = stack.pop()
            below.append(current)
            stack.extend(current.children.values() if current.children else ())
        return sum(self._delete_leaf(n) for n in reversed(below) if self._is_evictable_leaf(n))

    def stats(self) -> dict[str, int]:
        """Counters over :meth:`serve` calls (``requests``, ``prompt_tokens``, ``cached_tokens``) and the tree:
        ``stored_tokens`` (= ``evictable_tokens`` + ``protected_tokens``, the locked ones), ``nodes``,
        ``evicted_tokens`` since creation."""
        return {
            "requests": self._requests,
            "prompt_tokens": self._prompt_tokens,
            "cached_tokens": self._cached_tokens,
            "stored_tokens": self._evictable + self._protected,
            "evictable_tokens": self._evictable,
            "protected_tokens": self._protected,
            "nodes": self._nodes,
            "evicted_tokens": self._evicted,
        }

    def _key(self, tokens: Sequence[int]) -> bytes:
        data = token_array(tokens).tobytes()
        return data[: self._align(len(data))]

    def _align(self, num_bytes: int) -> int:
        """Round a length in bytes down to whole pages (never below 0)."""
        return max(num_bytes - num_bytes % self._page, 0)

    def _root(self, extra_key: Hashable) -> _Root:
        root = self._roots.get(extra_key)
        if root is None:
            root = self._roots[extra_key] = _Root(extra_key)
        return root

    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    def _walk(self, node: RadixNode, key: bytes, pos: int, end: int) -> tuple[RadixNode, int]:
        """Follow ``key[pos:end]`` down from ``node`` (which ends at ``pos``), touching each node passed and
        splitting an edge the key stops inside.

        Returns the node the cached prefix ends on and its length in bytes. Only that node can be a leaf, so
        callers re-offer it to the eviction heap when its priority matters.
        """
        page = self._page
        while pos < end and node.children:
            child = node.children.get(key[pos : pos + page])
            if child is None:
                break
            label = child.label
            if key.startswith(label, pos, end):
                child.last_access = self._tick()
                node = child
                pos += len(label)
                continue
            common = self._common_prefix(key, pos, end, label)
            node = self._split(child, common)
            node.last_access = self._tick()
            pos += common
            break
        return node, pos

    def _common_prefix(self, key: bytes, pos: int, end: int, label: bytes) -> int:
        """Bytes of ``label`` that ``key[pos:end]`` matches, in whole pages, knowing the first page matches.

        Galloping then bisecting keeps the work proportional to the match, with every comparison in C.
        """
        page = self._page
        limit = min(len(label), end - pos)
        view = memoryview(label)
        low, step = page, page
        while low < limit:
            high = min(low + step, limit)
            if not key.startswith(view[low:high], pos + low):
                while high - low > page:
                    middle = low + (high - low) // (2 * page) * page
                    if key.startswith(view[low:middle], pos + low):
                        low = middle
                    else:
                        high = middle
                return low
            low = high
            step *= 2
        return low

    def _split(self, child: RadixNode, at: int) -> RadixNode:
        """Cut ``child``'s edge after ``at`` bytes. The new upper node inherits its locks, hits and creation
        time; the lower part counts as touched (SGLang 0.5.23 ``UnifiedTreeCore._split_node``)."""
        parent = child.parent
        assert parent is not None and parent.children is not None
        head = RadixNode(child.label[:at], parent, child.created)
        head.lock_ref = child.lock_ref
        head.hits = child.hits
        child.label = child.label[at:]
        child.parent = head
        child.last_access = self._tick()
        head.children = {child.label[: self._page]: child}
        parent.children[head.label[: self._page]] = head
        self._nodes += 1
        self._offer(child)
        return head

    def _insert(self, node: RadixNode, key: bytes, pos: int, end: int) -> int:
        """Add ``key[:end]``, known cached down to ``node`` at ``pos``; every node on its path counts a hit (LFU).

        Returns the bytes that were cached already.
        """
        node, matched = self._walk(node, key, pos, end)
        if matched < end:
            self._make_room(node, (end - matched) // _TOKEN_BYTES)
            leaf = RadixNode(key[matched:end], node, self._tick())
            if node.children is None:
                node.children = {}
            node.children[leaf.label[: self._page]] = leaf
            self._evictable += len(leaf.label) // _TOKEN_BYTES
            self._nodes += 1
            node = leaf
        on_path: RadixNode | None = node
        while on_path is not None and on_path.parent is not None:
            on_path.hits += 1
            on_path = on_path.parent
        self._offer(node)
        return matched

    def _make_room(self, node: RadixNode, new_tokens: int) -> None:
        """Evict so ``new_tokens`` more fit under ``capacity``, keeping the path to ``node`` (being extended)."""
        if self.capacity is None:
            return
        stored = self._evictable + self._protected
        overflow = stored + new_tokens - self.capacity
        if overflow <= 0:
            return
        self._lock(node)
        try:
            if overflow > self._evictable:
                raise CacheModelError(
                    f"cannot cache {new_tokens} more tokens: capacity is {self.capacity} and {self._protected} "
                    f"of the {stored} stored tokens are locked (by running requests, or as the prefix being "
                    "extended); SGLang would keep this request waiting -- unlock finished requests or raise capacity"
                )
            self.evict(overflow)
        finally:
            self._unlock(node)

    def _lock(self, node: RadixNode) -> None:
        while node.parent is not None:
            if node.lock_ref == 0:
                size = len(node.label) // _TOKEN_BYTES
                self._evictable -= size
                self._protected += size
            node.lock_ref += 1
            node = node.parent

    def _unlock(self, node: RadixNode) -> None:
        while node.parent is not None:
            node.lock_ref -= 1
            if node.lock_ref == 0:
                size = len(node.label) // _TOKEN_BYTES
                self._evictable += size
                self._protected -= size
                self._offer(node)
            node = node.parent

    def _check_handle(self, node: RadixNode) -> None:
        top = node
        while top.parent is not None:
            top = top.parent
        if not (isinstance(top, _Root) and self._roots.get(top.namespace) is top):
            raise CacheModelError(
                "this node is not in this cache (it was evicted, or comes from another RadixCache); call "
                "match_prefix() again for a current handle"
            )

    @staticmethod
    def _is_evictable_leaf(node: RadixNode) -> bool:
        return node.parent is not None and not node.children and node.lock_ref == 0

    def _offer(self, node: RadixNode) -> None:
        """(Re)enter ``node`` in the eviction heap if it is an evictable leaf; older entries become stale."""
        if not self._is_evictable_leaf(node):
            return
        self._stamps += 1
        node.stamp = self._stamps
        first, second = self._priority(node)
        heapq.heappush(self._heap, (first, second, node.stamp, node))
        if len(self._heap) > 2 * self._nodes + 64:
            self._compact()

    def _compact(self) -> None:
        """Rebuild the heap from the live leaves once stale entries outnumber them (amortised O(1) a push)."""
        entries: list[tuple[int, int, int, RadixNode]] = []
        stack: list[RadixNode] = list(self._roots.values())
        while stack:
            node = stack.pop()
            if node.children:
                stack.extend(node.children.values())
            elif self._is_evictable_leaf(node):
                first, second = self._priority(node)
                entries.append((first, second, node.stamp, node))
        heapq.heapify(entries)
        self._heap = entries

    def _delete_leaf(self, leaf: RadixNode) -> int:
        parent = leaf.parent
        assert parent is not None and parent.children is not None
        if self._on_evict is not None:
            self._on_evict(self._describe(leaf))
        del parent.children[leaf.label[: self._page]]
        if not parent.children:
            parent.children = None
        leaf.parent = None
        leaf.stamp = 0
        size = len(leaf.label) // _TOKEN_BYTES
        self._evictable -= size
        self._nodes -= 1
        self._evicted += size
        self._offer(parent)
        return size

    def _describe(self, leaf: RadixNode) -> EvictedLeaf:
        labels: list[bytes] = []
        node = leaf
        while node.parent is not None:
            labels.append(node.label)
            node = node.parent
        assert isinstance(node, _Root)
        path = array("I")
        path.frombytes(b"".join(reversed(labels)))
        return EvictedLeaf(node.namespace, tuple(path), len(leaf.label) // _TOKEN_BYTES)


def _lru(node: RadixNode) -> tuple[int, int]:
    return node.last_access, 0


def _lfu(node: RadixNode) -> tuple[int, int]:
    return node.hits, node.last_access


def _fifo(node: RadixNode) -> tuple[int, int]:
    return node.created, 0


_PRIORITY: dict[str, Callable[[RadixNode], tuple[int, int]]] = {"lru": _lru, "lfu": _lfu, "fifo": _fifo}
"""Eviction order per policy, lowest first, as SGLang's ``evict_policy.py`` strategies rank nodes."""
