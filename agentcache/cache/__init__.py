"""Client-side models of servers' prefix (KV) caches: what each keeps, and what it reports as cached."""

from __future__ import annotations

from agentcache.cache.radix import EvictedLeaf, MatchResult, RadixCache, RadixNode, sglang_namespace

__all__ = ["EvictedLeaf", "MatchResult", "RadixCache", "RadixNode", "sglang_namespace"]
