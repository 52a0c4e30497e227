"""What a crew run learns about its cache: one report per LLM call, gathered per kickoff.

A call's report joins what arrives separately: the agentcache turn of each request the call sent (more than one
when the SDK retried), recorded by the interceptor when the response body ends, and crewai's
``LLMCallCompletedEvent`` (or ``LLMCallFailedEvent``), which names the agent and task and carries the usage crewai
read. When all are in, the report is added to its crew run and announced on crewai's event bus as an
:class:`LLMCacheReportEvent`, so any crewai listener (and crewai's own event record) sees it.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from crewai.events import crewai_event_bus
from crewai.events.base_events import BaseEvent
from crewai.events.types.crew_events import CrewKickoffCompletedEvent, CrewKickoffFailedEvent, CrewKickoffStartedEvent
from crewai.events.types.llm_events import LLMCallCompletedEvent, LLMCallFailedEvent
from crewai.execution import get_execution_uuid

from agentcache.httpx import settle
from agentcache.totals import Cell, Totals, table, totals
from agentcache.transport import Turn


@dataclass(frozen=True)
class CallCacheReport:
    """One LLM call: what crewai says it was, what the server reported, what agentcache predicted and why."""

    call_id: str
    """crewai's id of the call (``LLMCallCompletedEvent.call_id``)."""
    run_id: str | None
    """crewai's execution id of the crew kickoff the call belongs to; None outside a crew run."""
    agent_role: str | None
    task_name: str | None
    model: str | None
    usage: dict[str, Any] | None
    """The usage crewai put on its event (``prompt_tokens``, ``cached_prompt_tokens``, ...)."""
    turn: Turn
    """agentcache's record of the request that answered the call (the last, when the SDK retried)."""
    attempts: int
    """HTTP requests the call sent (more than one when the SDK retried)."""
    error: str | None = None
    """crewai's error when the call failed."""

    @property
    def session(self) -> str:
        return self.turn.session

    @property
    def prompt_tokens(self) -> int | None:
        return self.turn.reported_prompt_tokens

    @property
    def cached_tokens(self) -> int | None:
        """Cached prompt tokens the server reported."""
        return self.turn.reported_cached

    @property
    def predicted_cached(self) -> int | None:
        return self.turn.predicted_cached

    @property
    def hit_ratio(self) -> float | None:
        return self.turn.hit_ratio

    @property
    def cause(self) -> str | None:
        """Drift cause against the previous call of the session (codes of ``agentcache.predict.causes``)."""
        return self.turn.cause


class LLMCacheReportEvent(BaseEvent):
    """Emitted on crewai's event bus once per LLM call that went through a :class:`CacheInterceptor`."""

    type: Literal["agentcache_llm_cache_report"] = "agentcache_llm_cache_report"
    call_id: str
    report: CallCacheReport


@dataclass(frozen=True)
class CrewRunReport:
    """The calls of one crew kickoff, in the order they completed, with the run's totals."""

    run_id: str | None
    crew_name: str | None
    crew_id: str | None
    status: str
    """``running``, ``completed`` or ``failed`` (``unknown`` for calls made outside a crew run)."""
    error: str | None
    calls: tuple[CallCacheReport, ...]

    @functools.cached_property
    def totals(self) -> Totals:
        """Over the run's calls: the server's counts where it reported them, the predictions, waste, causes."""
        return totals(c.turn for c in self.calls)

    @property
    def prompt_tokens(self) -> int:
        """Over the calls whose server reported cached tokens."""
        return self.totals.reported_prompt_tokens

    @property
    def cached_tokens(self) -> int:
        return self.totals.reported_cached

    @property
    def predicted_cached(self) -> int:
        return self.totals.predicted_cached

    @property
    def wasted_tokens(self) -> int:
        """Tokens a call prefilled again that the previous call of its session had already sent."""
        return self.totals.wasted_tokens

    @property
    def hit_ratio(self) -> float | None:
        return self.totals.hit_ratio

    @property
    def causes(self) -> dict[str, int]:
        return self.totals.causes

    def table(self) -> str:
        """The per-call cache table, then the run's totals."""
        header = ("call", "agent", "task", "prompt", "cached", "predicted", "hit", "cause")
        rows: list[tuple[Cell, ...]] = [
            (
                number,
                _clip(call.agent_role),
                _clip(call.task_name),
                call.prompt_tokens,
                call.cached_tokens,
                call.predicted_cached,
                call.hit_ratio,
                call.cause or call.error or call.turn.error or "-",
            )
            for number, call in enumerate(self.calls, 1)
        ]
        run = self.totals
        causes = ", ".join(f"{cause} x{count}" for cause, count in sorted(run.causes.items()))
        sums = (run.reported_prompt_tokens, run.reported_cached, run.predicted_cached, run.hit_ratio)
        rows.append(("total", "", "", *sums, causes or "-"))
        title = f"crew {self.crew_name!r}, run {self.run_id}" if self.run_id else "calls outside a crew run"
        return "\n".join([f"{title}: {self.status}", table(header, rows)])


def _clip(text: str | None, width: int = 24) -> str:
    text = " ".join((text or "-").split())
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass
class _Call:
    run_id: str | None
    sent: int = 0
    """Requests the call sent; its report waits for the turn of each."""
    turns: list[Turn] = field(default_factory=list)
    event: LLMCallCompletedEvent | LLMCallFailedEvent | None = None
    source: Any = None


@dataclass
class _Run:
    crew_name: str | None = None
    crew_id: str | None = None
    status: str = "running"
    error: str | None = None
    calls: list[CallCacheReport] = field(default_factory=list)


class RunCollector:
    """Joins turns and crewai's LLM events into per-call reports, per crew run. Listens on the global event bus
    from construction until :meth:`close`, and only keeps calls its interceptor announced with :meth:`expect`."""

    def __init__(self, settle: Callable[[str], None]) -> None:
        self._settle = settle
        """Called with crewai's error when a call fails, in the call's context, before its report is made."""
        self._lock = threading.Lock()
        self._calls: dict[str, _Call] = {}
        self._runs: dict[str | None, _Run] = {}
        self._handlers: list[tuple[type[BaseEvent], Any]] = [
            (LLMCallCompletedEvent, self._on_call_event),
            (LLMCallFailedEvent, self._on_call_event),
            (CrewKickoffStartedEvent, self._on_kickoff_started),
            (CrewKickoffCompletedEvent, self._on_kickoff_ended),
            (CrewKickoffFailedEvent, self._on_kickoff_ended),
        ]
        for event_type, handler in self._handlers:
            crewai_event_bus.on(event_type)(handler)

    def close(self) -> None:
        for event_type, handler in self._handlers:
            crewai_event_bus.off(event_type, handler)

    def expect(self, call_id: str, run_id: str | None) -> None:
        """A request of this call is on its way (called by the interceptor, in the call's own context, so always
        before crewai reports the call completed or failed)."""
        with self._lock:
            self._calls.setdefault(call_id, _Call(run_id)).sent += 1

    def turn(self, call_id: str, turn: Turn) -> None:
        """The turn of one request of the call was recorded."""
        with self._lock:
            call = self._calls.get(call_id)
            if call is None:
                return
            call.turns.append(turn)
            report = self._complete(call_id, call)
        self._announce(report, call)

    def runs(self, crew: Any = None) -> list[CrewRunReport]:
        """Snapshots of the runs with at least one call, oldest first; only ``crew``'s when given. Waits for crewai's
        pending event handlers, so call it from your code, not from inside a crewai event handler."""
        settle()  # turns are recorded in the background after each response: let the last ones in
        crewai_event_bus.flush()  # handlers run on crewai's thread pool: let the last ones land
        crew_id = None if crew is None else str(crew.id)
        with self._lock:
            return [
                CrewRunReport(run_id, run.crew_name, run.crew_id, run.status, run.error, tuple(run.calls))
                for run_id, run in self._runs.items()
                if run.calls and (crew_id is None or run.crew_id == crew_id)
            ]

    def _on_call_event(self, source: Any, event: LLMCallCompletedEvent | LLMCallFailedEvent) -> None:
        if isinstance(event, LLMCallFailedEvent):
            self._settle(event.error)
        with self._lock:
            call = self._calls.get(event.call_id)
            if call is None or call.event is not None:
                return
            call.event, call.source = event, source
            report = self._complete(event.call_id, call)
        self._announce(report, call)

    def _complete(self, call_id: str, call: _Call) -> CallCacheReport | None:
        """The report once crewai's event and the turn of every request are in (under the lock), filed under its
        run."""
        event = call.event
        if event is None or len(call.turns) < call.sent:
            return None
        del self._calls[call_id]
        report = CallCacheReport(
            call_id=call_id,
            run_id=call.run_id,
            agent_role=event.agent_role,
            task_name=event.task_name,
            model=event.model,
            usage=event.usage if isinstance(event, LLMCallCompletedEvent) else None,
            turn=max(call.turns, key=lambda turn: turn.turn),
            attempts=len(call.turns),
            error=event.error if isinstance(event, LLMCallFailedEvent) else None,
        )
        run = self._runs.setdefault(call.run_id, _Run(status="running" if call.run_id else "unknown"))
        run.calls.append(report)
        return report

    def _announce(self, report: CallCacheReport | None, call: _Call) -> None:
        if report is not None:
            crewai_event_bus.emit(
                call.source,
                LLMCacheReportEvent(
                    call_id=report.call_id,
                    report=report,
                    agent_role=report.agent_role,
                    task_name=report.task_name,
                ),
            )

    def _on_kickoff_started(self, source: Any, event: CrewKickoffStartedEvent) -> None:
        run_id = get_execution_uuid()  # the handler runs in a copy of the kickoff's context
        with self._lock:
            run = self._runs.setdefault(run_id, _Run())
            run.crew_name, run.crew_id = event.crew_name, str(getattr(source, "id", "")) or None

    def _on_kickoff_ended(self, source: Any, event: CrewKickoffCompletedEvent | CrewKickoffFailedEvent) -> None:
        run_id = get_execution_uuid()
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return
            if not run.calls and not any(call.run_id == run_id for call in self._calls.values()):
                del self._runs[run_id]  # a crew that never used this interceptor: nothing to keep
                return
            failed = isinstance(event, CrewKickoffFailedEvent)
            run.status = "failed" if failed else "completed"
            run.error = event.error if isinstance(event, CrewKickoffFailedEvent) else None
