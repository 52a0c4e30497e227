"""Client-side models of servers' prefix (KV) caches: what each keeps, and what it reports as cached.

Every model implements :class:`PrefixCacheModel`; :class:`CacheOptions` names a server and builds its model.
"""

from __future__ import annotations

from agentcache.cache.base import PrefixCacheModel
from agentcache.cache.options import CACHE_KINDS, CacheKind, CacheOptions
from agentcache.cache.radix import EvictedLeaf, MatchResult, RadixCache, RadixNode, sglang_namespace

__all__ = [
    "CACHE_KINDS",
    "CacheKind",
    "CacheOptions",
    "EvictedLeaf",
    "MatchResult",
    "PrefixCacheModel",
    "RadixCache",
    "RadixNode",
    "sglang_namespace",
]
