"""The cache-aware httpx transport: canonical requests out, per-turn cache accounting in.

:class:`CacheMiddleware` is the hook API (``begin``, ``wrap``, ``fail``, :class:`TurnListener`) the transports and
the framework integrations are built on.
"""

from __future__ import annotations

from agentcache.transport.background import settle
from agentcache.transport.call import Call, TurnListener
from agentcache.transport.cluster import Cluster
from agentcache.transport.ledger import Ledger, SessionSummary, Turn
from agentcache.transport.middleware import CacheMiddleware, CacheSettings
from agentcache.transport.recorder import TraceRecorder
from agentcache.transport.session import SESSION_HEADER, Scope, current_scope, session_of, session_scope
from agentcache.transport.transports import AsyncCacheAwareTransport, CacheAwareTransport

__all__ = [
    "SESSION_HEADER",
    "AsyncCacheAwareTransport",
    "CacheAwareTransport",
    "CacheMiddleware",
    "CacheSettings",
    "Call",
    "Cluster",
    "Ledger",
    "Scope",
    "SessionSummary",
    "TraceRecorder",
    "Turn",
    "TurnListener",
    "current_scope",
    "session_of",
    "session_scope",
    "settle",
]
