"""agentcache for LangChain and LangGraph: canonical requests and per-turn cache reports where users look.

- ``cache_aware(ChatOpenAI(...), server="sglang", model_dir=...)``: the model, sending through agentcache;
- ``AgentCacheMiddleware(server="sglang", model_dir=...)``: the same for the model of a ``create_agent`` agent;
- ``AgentCacheCallbackHandler()``: per-run reports and the per-turn table, for any graph.

Each call's :class:`CacheReport` lands in ``AIMessage.response_metadata["agentcache"]``, in the LLM run's metadata
(as tracers such as LangSmith's send it), and ``usage_metadata["input_token_details"]["cache_read"]`` holds the
server's own number. See docs/integrations.md.
"""

from __future__ import annotations

from agentcache_langgraph.callbacks import AgentCacheCallbackHandler, RunReport
from agentcache_langgraph.middleware import AgentCacheMiddleware
from agentcache_langgraph.model import CacheAware, Wiring, cache_aware, wire
from agentcache_langgraph.report import KEY, CacheReport

__all__ = [
    "KEY",
    "AgentCacheCallbackHandler",
    "AgentCacheMiddleware",
    "CacheAware",
    "CacheReport",
    "RunReport",
    "Wiring",
    "cache_aware",
    "wire",
]
