"""The crewai side of the transport: a ``BaseInterceptor`` that canonicalizes what an LLM sends and records each
turn, and reports every LLM call's cache figures through crewai's event bus.

crewai 1.15 takes no httpx client for its OpenAI-compatible and Anthropic providers (``client_params`` would hand
the same client to the sync and the async SDK, and one of them refuses it); what it does take is an
``interceptor``, which it wraps around its own httpx transports, sync and async. The interceptor sees the request
before it is sent and the response before its body is read, which is all :class:`CacheMiddleware` needs. It does
not see an exception the transport raises: such a request is recorded when crewai reports the call failed, or
when the same context sends its next request.

Each request is tied to crewai's LLM call id (``crewai.llms.base_llm._current_call_id``, the context variable
crewai sets around a call and puts on the call's events) and to the crew run
(``crewai.execution.get_execution_uuid()``): that is how a turn meets its ``LLMCallCompletedEvent``. Its session is
the crew run and the task being executed, unless the caller named one with ``agentcache.httpx.session_scope``.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx
from crewai.context import get_current_task_id
from crewai.execution import get_execution_uuid
from crewai.llms.base_llm import _current_call_id
from crewai.llms.hooks import BaseInterceptor

from agentcache.transport import (
    CacheMiddleware,
    CacheSettings,
    Call,
    Ledger,
    Turn,
    TurnListener,
    current_scope,
    session_scope,
)
from agentcache_crewai.report import CrewRunReport, RunCollector

if TYPE_CHECKING:
    from typing_extensions import Unpack

NO_RESPONSE = "no response: the request raised before one arrived (crewai's interceptor is not told the exception)"


@dataclass
class _InFlight:
    """A request between ``on_outbound`` and ``on_inbound``: they run in the same context, one after the other."""

    owner: CacheInterceptor
    call: Call
    settled: bool = False


_CALL_ID = "crewai.call_id"
_IN_FLIGHT: ContextVar[_InFlight | None] = ContextVar("agentcache_crewai_in_flight", default=None)


class CacheInterceptor(BaseInterceptor[httpx.Request, httpx.Response], TurnListener):
    """Pass to ``crewai.LLM(..., interceptor=CacheInterceptor(server=..., model_dir=...))``.

    Options are those of ``agentcache.httpx.CacheAwareTransport`` (``server``, ``model_dir``, ``canonicalize``,
    ``policy``, ``cache``, ``recorder``, ``ask_output_ids``, ``ledger``, ...). It listens to the middleware to tie
    each turn to its LLM call. One interceptor can serve several LLMs; it listens on crewai's event bus until
    :meth:`close`.
    """

    def __init__(self, **options: Unpack[CacheSettings]) -> None:
        self.middleware = CacheMiddleware(**options)
        self.middleware.add_listener(self)
        self._lock = threading.Lock()
        self._collector = RunCollector(settle=self._settle_failed)

    @property
    def ledger(self) -> Ledger:
        return self.middleware.ledger

    def runs(self, crew: Any = None) -> list[CrewRunReport]:
        """The crew runs this interceptor served, oldest first (only ``crew``'s when given), each with its calls."""
        return self._collector.runs(crew)

    def last_run(self, crew: Any = None) -> CrewRunReport | None:
        runs = self.runs(crew)
        return runs[-1] if runs else None

    def close(self) -> None:
        """Stop listening on crewai's event bus (the LLM keeps canonicalizing and recording turns)."""
        self._collector.close()

    def __enter__(self) -> CacheInterceptor:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def on_outbound(self, message: httpx.Request) -> httpx.Request:
        _settle_leftover()
        if not self.middleware.handles(message):
            return message
        message.read()
        return self._prepare(message)

    async def aon_outbound(self, message: httpx.Request) -> httpx.Request:
        _settle_leftover()
        if not self.middleware.handles(message):
            return message
        await message.aread()
        return self._prepare(message)

    def on_inbound(self, message: httpx.Response) -> httpx.Response:
        call = self._settled_call()
        return message if call is None else self.middleware.wrap(call, message)

    async def aon_inbound(self, message: httpx.Response) -> httpx.Response:
        call = self._settled_call()
        return message if call is None else self.middleware.wrap_async(call, message)

    def _prepare(self, request: httpx.Request) -> httpx.Request:
        """Canonicalize, in the session crewai's context names, and tie the request to its LLM call."""
        outer = current_scope()
        session = None if outer is not None and outer.session else _crew_session()
        if session is None:
            call = self.middleware.begin(request)
        else:
            with session_scope(session):
                call = self.middleware.begin(request)
            call.scope = outer  # the caller's own collecting scope, if any, still gets the turn
        call_id = _current_call_id.get()  # crewai's public getter would log and invent an id outside a call
        if call_id is not None:
            self._collector.expect(call_id, get_execution_uuid())
            call.context[_CALL_ID] = call_id
        _IN_FLIGHT.set(_InFlight(self, call))
        return call.request

    def _settled_call(self) -> Call | None:
        """The call whose response arrived, unless it was settled already (or none is in flight)."""
        flight = _IN_FLIGHT.get()
        _IN_FLIGHT.set(None)
        if flight is None or not self._claim(flight):
            return None
        return flight.call

    def _claim(self, flight: _InFlight) -> bool:
        """Mark the request settled; False when it already was."""
        with self._lock:
            if flight.settled:
                return False
            flight.settled = True
            return True

    def _settle(self, flight: _InFlight, error: str) -> None:
        """Record a request that got no response (the transport raised)."""
        if self._claim(flight):
            self.middleware.fail(flight.call, error)

    def _settle_failed(self, error: str) -> None:
        """crewai reported the call failed: a request of this context left without a response failed with it.

        Runs in crewai's copy of the failing call's context, so it sees that call's request in flight."""
        flight = _IN_FLIGHT.get()
        if flight is not None and flight.owner is self:
            self._settle(flight, error)

    def on_turn(self, call: Call, turn: Turn) -> None:
        call_id = call.context.get(_CALL_ID)
        if call_id is not None:
            self._collector.turn(call_id, turn)


def _settle_leftover() -> None:
    """A request of this context still in flight when the next one goes out got no response: record it so."""
    flight = _IN_FLIGHT.get()
    if flight is not None:
        _IN_FLIGHT.set(None)
        flight.owner._settle(flight, NO_RESPONSE)


def _crew_session() -> str | None:
    """The crew run and the task being executed, when there is one (else the transport's own rules apply)."""
    run_id = get_execution_uuid()
    if run_id is None:
        return None
    task_id = get_current_task_id()
    return run_id if task_id is None else f"{run_id}/task-{task_id}"
