"""The cache-aware httpx transport: canonical requests out, per-turn cache accounting in."""

from __future__ import annotations

from agentcache.transport.ledger import Ledger, SessionSummary, Turn
from agentcache.transport.middleware import CacheMiddleware
from agentcache.transport.recorder import TraceRecorder
from agentcache.transport.session import SESSION_HEADER, Scope, session_of, session_scope
from agentcache.transport.transports import AsyncCacheAwareTransport, CacheAwareTransport

__all__ = [
    "SESSION_HEADER",
    "AsyncCacheAwareTransport",
    "CacheAwareTransport",
    "CacheMiddleware",
    "Ledger",
    "Scope",
    "SessionSummary",
    "TraceRecorder",
    "Turn",
    "session_of",
    "session_scope",
]
