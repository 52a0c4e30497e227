"""agentcache: make multi-turn and tree-search LLM agents hit the server's prefix (KV) cache."""

from __future__ import annotations

from agentcache.canon import CanonicalPolicy, VolatileSpan, canonical_json, canonicalize, find_volatile
from agentcache.tokens import Tokenizer, get_tokenizer

__version__ = "0.1.0"

__all__ = [
    "CanonicalPolicy",
    "Tokenizer",
    "VolatileSpan",
    "__version__",
    "canonical_json",
    "canonicalize",
    "find_volatile",
    "get_tokenizer",
]
