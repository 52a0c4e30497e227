"""agentcache: make multi-turn and tree-search LLM agents hit the server's prefix (KV) cache."""

from __future__ import annotations

from agentcache.cache.blockhash import BlockHashCache
from agentcache.cache.hosted import AnthropicPromptCache, OpenAIPromptCache
from agentcache.cache.radix import RadixCache
from agentcache.canon import CanonicalPolicy, VolatileSpan, canonical_json, canonicalize, find_volatile
from agentcache.drift import CacheOptions, Divergence, TurnReport, explain, read_trace
from agentcache.tokens import Tokenizer, get_tokenizer

__version__ = "0.1.0"

__all__ = [
    "AnthropicPromptCache",
    "BlockHashCache",
    "CacheOptions",
    "CanonicalPolicy",
    "Divergence",
    "OpenAIPromptCache",
    "RadixCache",
    "Tokenizer",
    "TurnReport",
    "VolatileSpan",
    "__version__",
    "canonical_json",
    "canonicalize",
    "explain",
    "find_volatile",
    "get_tokenizer",
    "read_trace",
]
