"""Public home of the httpx integration: ``from agentcache.httpx import CacheAwareTransport``."""

from __future__ import annotations

from agentcache.transport import (
    SESSION_HEADER,
    AsyncCacheAwareTransport,
    CacheAwareTransport,
    Cluster,
    Ledger,
    SessionSummary,
    TraceRecorder,
    Turn,
    session_scope,
    settle,
)

__all__ = [
    "SESSION_HEADER",
    "AsyncCacheAwareTransport",
    "CacheAwareTransport",
    "Cluster",
    "Ledger",
    "SessionSummary",
    "TraceRecorder",
    "Turn",
    "session_scope",
    "settle",
]
