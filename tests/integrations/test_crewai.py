"""The CrewAI integration against real engines: a real ``Crew`` (one agent, one task) whose LLM carries a
``CacheInterceptor``.

A task guardrail rejects the first outputs, so one task makes several LLM calls that share a prefix. Each call's
report must carry the usage the engine returned for that very call (as crewai read it into its
``LLMCallCompletedEvent``), the prediction must equal it (the model folder gives the server's own template and
tokenizer), and the reports must arrive on crewai's event bus. CrewAI's telemetry and tracing are switched off the
way crewai reads them, and every test checks that nothing but the local engine was connected to.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket
import sys
from collections.abc import Callable, Iterator
from typing import Any

os.environ.update(  # before crewai builds its telemetry: no telemetry, no trace upload, no version check
    CREWAI_DISABLE_TELEMETRY="true",  # not OTEL_SDK_DISABLED: it would disable every OpenTelemetry provider in the
    CREWAI_TRACING_ENABLED="false",  # test process, agentcache's own span tests included
    CREWAI_DISABLE_VERSION_CHECK="true",
)

import pytest
from crewai import LLM, Agent, Crew, Task
from crewai.events import crewai_event_bus
from crewai.events.types.llm_events import LLMCallCompletedEvent, LLMCallFailedEvent
from crewai.lite_agent_output import LiteAgentOutput
from crewai.tasks.task_output import TaskOutput
from crewai.tools import BaseTool, tool

from agentcache.httpx import session_scope
from agentcache.predict import causes
from agentcache_crewai import CacheInterceptor, CrewRunReport, LLMCacheReportEvent
from tests.conftest import EngineInfo

KNOWN_CAUSES = {value for name, value in vars(causes).items() if name.isupper() and isinstance(value, str)}

REJECTIONS = 2
"""Outputs the guardrail rejects: the task then makes REJECTIONS + 1 LLM calls."""

_connections: list[Any] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "socket.connect" and _connections is not None:
        _connections.append(args[1])


sys.addaudithook(_audit)  # hooks cannot be removed; this one records only while a test asks it to


@pytest.fixture(autouse=True)
def only_local_connections() -> Iterator[None]:
    """Fail a test in which anything (crewai telemetry, tracing, a version check) connected beyond this host."""
    global _connections
    _connections = []
    try:
        yield
    finally:
        seen, _connections = _connections, None
    remote = [address for address in seen if not _is_local(address)]
    assert not remote, f"connections beyond this host: {remote}"


def _is_local(address: Any) -> bool:
    if not isinstance(address, tuple):  # a Unix socket path
        return True
    try:
        return ipaddress.ip_address(address[0]).is_loopback
    except ValueError:
        return False


class Bus:
    """Records the crewai events of a test: each LLM call's completion or failure, and each cache report."""

    def __init__(self) -> None:
        self.completed: list[LLMCallCompletedEvent] = []
        self.failed: list[LLMCallFailedEvent] = []
        self.reports: list[LLMCacheReportEvent] = []
        self._handlers: list[tuple[Any, Callable[[Any, Any], None]]] = [
            (LLMCallCompletedEvent, lambda source, event: self.completed.append(event)),
            (LLMCallFailedEvent, lambda source, event: self.failed.append(event)),
            (LLMCacheReportEvent, lambda source, event: self.reports.append(event)),
        ]
        for event_type, handler in self._handlers:
            crewai_event_bus.on(event_type)(handler)

    def close(self) -> None:
        for event_type, handler in self._handlers:
            crewai_event_bus.off(event_type, handler)


@pytest.fixture
def bus() -> Iterator[Bus]:
    recorder = Bus()
    try:
        yield recorder
    finally:
        recorder.close()


def _interceptor(engine: EngineInfo, **options: Any) -> CacheInterceptor:
    return CacheInterceptor(server=engine.profile, model_dir=engine.model_dir, ask_output_ids=True, **options)


def _llm(url: str, interceptor: CacheInterceptor, **options: Any) -> LLM:
    return LLM(
        model="openai/tiny-llama-o200k",
        base_url=url + "/v1",
        api_key="-",
        temperature=0,
        max_tokens=8,
        interceptor=interceptor,
        **options,
    )


def _fixed_reply(engine: EngineInfo) -> dict[str, Any]:
    """LLM options that make llama-server write one fixed sentence (a grammar it honours), whatever the model.

    crewai sends a rejected output back in its retry prompt, and a random model's text, re-sent, is tokenized again
    by the server: llama-server's pre-tokenizer splits some strings such a model writes (runs of unusual Unicode)
    otherwise than tokenizer.json, and the prediction would miss by what the two tokenizers disagree on, which is
    not agentcache's. SGLang tokenizes with tokenizer.json itself: its replies are left as the model writes them.
    llama-server refuses a grammar beside tools: only a crew without tools can use this."""
    if engine.name != "llama-server":
        return {}
    return {"extra_body": {"grammar": 'root ::= "Hello, dear user."'}}


def _crew(llm: LLM, tools: list[BaseTool] | None = None, rejections: int = 0) -> Crew:
    """One agent, one task; the task's guardrail rejects the first ``rejections`` outputs."""
    outputs: list[str] = []

    # no return annotation: crewai checks it at run time, and with postponed annotations it is a string it refuses
    def guardrail(output: TaskOutput | LiteAgentOutput):  # type: ignore[no-untyped-def]
        outputs.append(output.raw)
        if len(outputs) > rejections:
            return True, output.raw
        return False, "Answer in one short sentence."

    agent = Agent(
        role="Researcher", goal="Greet the user", backstory="A terse assistant.", llm=llm, tools=tools or [], max_iter=2
    )
    task = Task(
        description="Say hello to the user.",
        expected_output="A greeting",
        agent=agent,
        guardrail=guardrail,
        guardrail_max_retries=rejections,
    )
    return Crew(agents=[agent], tasks=[task])


def _check_run(run: CrewRunReport, bus: Bus, calls: int) -> None:
    """Each call's report holds the engine's usage for that call and an exact prediction; totals add up.

    ``calls`` is the least the task makes (its guardrail's rejections, then the answer): crewai also re-runs a
    task whose reply came back empty, which a random model does now and then, so the count is crewai's."""
    assert run.status == "completed"
    assert len(run.calls) >= calls, "fewer calls than the guardrail's rejections plus the answer"
    calls = len(run.calls)
    completed = {event.call_id: event for event in bus.completed}
    assert set(completed) == {call.call_id for call in run.calls}
    announced = {event.call_id: event for event in bus.reports}
    for call in run.calls:
        usage = completed[call.call_id].usage  # the engine's usage for this call, as crewai read it
        assert usage is not None
        assert call.usage == usage
        assert (call.prompt_tokens, call.cached_tokens) == (usage["prompt_tokens"], usage["cached_prompt_tokens"])
        assert call.turn.exact and call.turn.canonicalized and call.turn.status == 200
        assert call.predicted_cached == call.cached_tokens
        assert call.attempts == 1 and call.error is None
        assert (call.agent_role, call.task_name) == ("Researcher", "Say hello to the user.")
        assert call.run_id == run.run_id and call.session.startswith(f"{run.run_id}/task-")
        assert announced[call.call_id].report == call  # the report came through crewai's event bus
        assert announced[call.call_id].agent_role == "Researcher"
    assert [call.turn.turn for call in run.calls] == list(range(1, calls + 1))
    assert run.calls[0].cause == causes.NEW_SESSION
    assert run.prompt_tokens == sum(event.usage["prompt_tokens"] for event in bus.completed if event.usage)
    assert run.cached_tokens == sum(event.usage["cached_prompt_tokens"] for event in bus.completed if event.usage)
    assert run.predicted_cached == run.cached_tokens
    assert run.hit_ratio == run.cached_tokens / run.prompt_tokens
    assert sum(run.causes.values()) == calls
    table = run.table()
    assert len(table.splitlines()) == calls + 3  # title, header, one row per call, totals
    assert run.run_id is not None and run.run_id in table


def _kickoff(crew: Crew, mode: str) -> None:
    if mode == "async":
        asyncio.run(crew.akickoff())
    else:
        crew.kickoff()


def _guardrail_retries(engine: EngineInfo, bus: Bus, mode: str) -> None:
    engine.empty_cache()
    with _interceptor(engine) as interceptor:
        llm = _llm(engine.url, interceptor, stream=mode == "stream", **_fixed_reply(engine))
        crew = _crew(llm, rejections=REJECTIONS)
        _kickoff(crew, mode)
        run = interceptor.last_run(crew)
    assert run is not None
    _check_run(run, bus, REJECTIONS + 1)
    assert all(call.turn.stream == (mode == "stream") for call in run.calls)
    assert run.cached_tokens > 0  # the retries repeat the agent's system prompt and the task


@pytest.mark.parametrize("mode", ["sync", "async", "stream"])
def test_crew_reports_each_call_with_the_engines_usage_llama_server(
    llama_server: EngineInfo, bus: Bus, mode: str
) -> None:
    _guardrail_retries(llama_server, bus, mode)


@pytest.mark.parametrize("mode", ["sync", "async", "stream"])
def test_crew_reports_each_call_with_the_engines_usage_sglang(sglang: EngineInfo, bus: Bus, mode: str) -> None:
    _guardrail_retries(sglang, bus, mode)


@tool("word_count")
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


@tool("add_numbers")
def add_numbers(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_tool_order_is_canonicalized_away_or_reported_as_the_cause(llama_server: EngineInfo, bus: Bus) -> None:
    """Two kickoffs of the same agent, tools in another order, in one session the caller names: canonicalized, the
    second kickoff's first request is the first kickoff's first request again; sent raw, the drift is reported as
    ``tool_order`` and costs hits.

    Each kickoff makes as many calls as crewai decides (it re-runs a task whose random reply came back empty), so
    the counts are taken from what was recorded, and the second kickoff's first call is compared with the session
    as the first kickoff left it: every token of it already sent (``none``, or ``history_rewritten`` when crewai's
    extra calls of the first kickoff are what it drops), never a tool-order miss."""
    second: dict[bool, Any] = {}
    made: list[str] = []  # call ids of every call the crews made
    orders: list[list[BaseTool]] = [[word_count, add_numbers], [add_numbers, word_count]]
    for canonical in (False, True):
        llama_server.empty_cache()
        with _interceptor(llama_server, canonicalize=canonical) as interceptor, session_scope("researcher") as scope:
            for tools in orders:
                _crew(_llm(llama_server.url, interceptor), tools=tools).kickoff()
            runs = interceptor.runs()
            turns = interceptor.ledger.turns()
        assert len(runs) == 2 and all(run.calls for run in runs)
        calls = [call for run in runs for call in run.calls]
        made += [call.call_id for call in calls]
        assert len(turns) == len(scope.turns) == len(calls)  # one turn recorded per call made, all in the scope
        assert {turn.session for turn in scope.turns} == {"researcher"}  # the caller's scope collects
        assert {call.session for call in calls} == {"researcher"}
        assert all(call.predicted_cached == call.cached_tokens for call in calls)
        assert all(call.cause in KNOWN_CAUSES - {causes.EVICTED} for call in calls)
        first, second[canonical] = runs[0].calls[0], runs[1].calls[0]
        assert (first.cause, first.turn.canonicalized) == (causes.NEW_SESSION, canonical)
        if canonical:
            assert second[canonical].prompt_tokens == first.prompt_tokens  # the same request, tools in one order
    assert second[False].cause == causes.TOOL_ORDER
    again = second[True]
    assert again.cause in (causes.NONE, causes.HISTORY_REWRITTEN)
    assert again.turn.divergence_token in (None, again.prompt_tokens)  # nothing of it differs from what was sent
    assert again.cached_tokens is not None and second[False].cached_tokens is not None
    assert again.cached_tokens > second[False].cached_tokens
    assert sorted(event.call_id for event in bus.reports) == sorted(made)  # one report per call made


def test_a_call_outside_a_crew_is_reported_under_no_run(llama_server: EngineInfo, bus: Bus) -> None:
    llama_server.empty_cache()
    with _interceptor(llama_server) as interceptor:
        answer = _llm(llama_server.url, interceptor).call("Say hello.")
        runs = interceptor.runs()
    assert isinstance(answer, str)
    assert [(run.run_id, run.status, len(run.calls)) for run in runs] == [(None, "unknown", 1)]
    call, event = runs[0].calls[0], bus.completed[0]
    assert call.call_id == event.call_id and event.usage is not None
    assert call.prompt_tokens == event.usage["prompt_tokens"] and call.predicted_cached == call.cached_tokens == 0
    assert call.session == "default"  # no crew, no scope: the transport's own rules


def _refused_url() -> str:
    """A local port nothing listens on: connecting to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def test_calls_whose_requests_raise_are_reported_with_crewais_error(bus: Bus) -> None:
    """crewai's interceptor never sees the exception: each attempt is still recorded, each call is reported with
    crewai's error, and the run as failed (crewai retries the agent, so there are several calls)."""
    with CacheInterceptor(server="llama.cpp") as interceptor:
        crew = _crew(_llm(_refused_url(), interceptor, max_retries=1))
        with pytest.raises(Exception, match="Connection error"):
            crew.kickoff()
        run = interceptor.last_run(crew)
    assert run is not None and run.status == "failed" and run.error
    assert bus.failed and not bus.completed
    failures: dict[str, set[str]] = {}  # crewai emits two failure events per call (provider, then call)
    for event in bus.failed:
        failures.setdefault(event.call_id, set()).add(event.error)
    assert sorted(call.call_id for call in run.calls) == sorted(failures)
    assert all(call.error in failures[call.call_id] for call in run.calls)
    assert all(call.attempts == 2 for call in run.calls)  # the SDK retried each call once
    turns = interceptor.ledger.turns()
    assert len(turns) == 2 * len(run.calls)
    assert all(
        t.status is None and t.error and t.reported_prompt_tokens is None and t.predicted_cached is None for t in turns
    )
    assert sorted(event.call_id for event in bus.reports) == sorted(call.call_id for call in run.calls)
    assert "Connection error" in run.table()
