"""Drift: where consecutive requests of a session stop sharing a prefix, why, and what it cost."""

from __future__ import annotations

from agentcache.drift.diff import Divergence
from agentcache.drift.explain import TurnReport, explain
from agentcache.drift.replay import CacheOptions
from agentcache.drift.trace import Trace, TraceProblem, TraceRecord, read_trace

__all__ = ["CacheOptions", "Divergence", "Trace", "TraceProblem", "TraceRecord", "TurnReport", "explain", "read_trace"]
