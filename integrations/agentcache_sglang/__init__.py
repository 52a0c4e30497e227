"""agentcache for the SGLang frontend language: ``sgl.function`` programs with canonical prompt text and per-fork
cache reports. Install with ``pip install 'agentcache[sglang]'``."""

from __future__ import annotations

from agentcache_sglang.endpoint import CacheAwareEndpoint, CallReport, ForkReport

__all__ = ["CacheAwareEndpoint", "CallReport", "ForkReport"]
