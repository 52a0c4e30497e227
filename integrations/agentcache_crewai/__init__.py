"""CrewAI integration (``agentcache[crewai]``): canonical requests and per-call cache reports for a crew.

One line wraps an LLM: ``crewai.LLM(..., interceptor=CacheInterceptor(server="sglang", model_dir=...))``. Every
LLM call then gets an :class:`LLMCacheReportEvent` on crewai's event bus, and ``interceptor.last_run()`` gives the
crew run's per-call table and totals.
"""

from __future__ import annotations

from agentcache_crewai.interceptor import CacheInterceptor
from agentcache_crewai.report import CallCacheReport, CrewRunReport, LLMCacheReportEvent

__all__ = ["CacheInterceptor", "CallCacheReport", "CrewRunReport", "LLMCacheReportEvent"]
