"""Drift: where consecutive requests of a session stop sharing a prefix, why, and what it cost."""

from __future__ import annotations

from agentcache.cache.options import CacheOptions
from agentcache.drift.explain import TurnReport, explain
from agentcache.drift.trace import Trace, TraceProblem, TraceRecord, read_trace
from agentcache.predict.diff import Divergence

__all__ = ["CacheOptions", "Divergence", "Trace", "TraceProblem", "TraceRecord", "TurnReport", "explain", "read_trace"]
