"""``create_agent(model, tools, middleware=[AgentCacheMiddleware(server="sglang")])``: the one line for an agent.

Each model call goes to the same model rebuilt on agentcache's transport (:func:`~agentcache_langgraph.wire`),
so whatever model the request carries, the agent's own or one another middleware picked, is canonicalized and
reported. Put it last in the list: middleware wrap in order, so the last one sees the model that is called.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import httpx
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage

from agentcache.httpx import Ledger
from agentcache.transport import CacheSettings
from agentcache_langgraph.model import Wiring, wire

if TYPE_CHECKING:
    from typing_extensions import Unpack

Result = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


class AgentCacheMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Options as :func:`~agentcache_langgraph.cache_aware`. All the models it wraps share one client-side model of
    the server's cache and one ``ledger`` (``ledger.summary(thread_id)`` for a thread's totals).

    ``breakpoints=True`` places cache breakpoints on each model request, per thread, with the transport's own
    placement (:class:`~agentcache.transport.CacheMiddleware`, :func:`agentcache.breakpoints.place`), instead of a
    fixed tagging such as LangChain's ``AnthropicPromptCachingMiddleware``: do not use both, the budget of 4 is
    shared. What was placed is each report's ``breakpoints``."""

    def __init__(
        self,
        *,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        **options: Unpack[CacheSettings],
    ) -> None:
        super().__init__()
        self.wiring = Wiring.build(transport, async_transport, **options)
        self._wired: dict[int, tuple[BaseChatModel, BaseChatModel]] = {}
        """id of a model the agent called -> (that model, kept alive so the id stays its own; its wired twin)."""
        self._lock = threading.Lock()

    @property
    def ledger(self) -> Ledger:
        return self.wiring.ledger

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> Result:
        return handler(self._wired_request(request))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> Result:
        return await handler(self._wired_request(request))

    def _wired_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        model = request.model
        with self._lock:
            known = self._wired.get(id(model))
            if known is None or known[0] is not model:
                known = self._wired[id(model)] = (model, wire(model, self.wiring))
        return request.override(model=known[1])
