"""Turns are predicted and recorded after the response reached the caller, and none is lost on the way."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import httpx
import pytest

from agentcache.drift import read_trace
from agentcache.httpx import AsyncCacheAwareTransport, CacheAwareTransport, settle
from agentcache.tokens import get_tokenizer
from agentcache.transport import Call, Turn, TurnListener, process
from agentcache.transport.process import PredictIn
from tests.conftest import EngineInfo


class Gate(TurnListener):
    """Holds the recording of every turn until opened, and counts the turns it saw."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.seen: list[Turn] = []

    def on_turn(self, call: Call, turn: Turn) -> None:
        assert self.open.wait(60), "the gate was never opened"
        self.seen.append(turn)


def body(engine: EngineInfo, text: str) -> dict[str, object]:
    return {"model": engine.model, "messages": [{"role": "user", "content": text}], "max_tokens": 1}


def test_the_caller_has_its_response_while_its_turn_is_still_being_recorded(llama_server: EngineInfo) -> None:
    gate = Gate()
    transport = CacheAwareTransport(server="llama.cpp", model_dir=llama_server.model_dir, listeners=[gate])
    with httpx.Client(transport=transport, base_url=llama_server.url, timeout=120) as http:
        answer = http.post("/v1/chat/completions", json=body(llama_server, "Say hi."))
        assert answer.status_code == 200 and answer.json()["usage"]["prompt_tokens"] > 0
        assert gate.seen == [] and not settle(timeout=0.2)  # the response is read; its turn is not in yet
        gate.open.set()
        (turn,) = transport.ledger.turns()  # a read waits for the turns on their way
    assert gate.seen == [turn] and turn.predicted_prompt_tokens == turn.reported_prompt_tokens


def test_the_event_loop_runs_while_turns_are_recorded(llama_server: EngineInfo) -> None:
    gate = Gate()
    transport = AsyncCacheAwareTransport(server="llama.cpp", model_dir=llama_server.model_dir, listeners=[gate])

    async def main() -> tuple[int, int]:
        async with httpx.AsyncClient(transport=transport, base_url=llama_server.url, timeout=120) as http:
            answers = await asyncio.gather(
                *(http.post("/v1/chat/completions", json=body(llama_server, f"Count to {n}.")) for n in range(3))
            )
            ticks = 0
            for _ in range(5):  # the loop is free while the three turns wait at the gate
                await asyncio.sleep(0.01)
                ticks += 1
            gate.open.set()
        return sum(answer.status_code == 200 for answer in answers), ticks

    assert asyncio.run(main()) == (3, 5)
    assert len(gate.seen) == 3 and len(transport.ledger.turns()) == 3  # closing the client waited for them


def test_a_listener_may_read_the_ledger_it_is_told_about(llama_server: EngineInfo) -> None:
    """On the background thread a read does not wait for the jobs queued behind it (which would never run)."""
    seen: list[list[Turn]] = []
    transport = CacheAwareTransport(server="llama.cpp", model_dir=llama_server.model_dir)

    class Reader(TurnListener):
        def on_turn(self, call: Call, turn: Turn) -> None:
            seen.append(transport.ledger.turns())

    transport.middleware.add_listener(Reader())
    with httpx.Client(transport=transport, base_url=llama_server.url, timeout=120) as http:
        for n in range(2):
            http.post("/v1/chat/completions", json=body(llama_server, f"Step {n}."))
    assert [len(turns) for turns in seen] == [1, 2]


@pytest.mark.parametrize("client", ["sync", "async"])
def test_a_script_that_ends_right_after_its_call_loses_no_turn(
    llama_server: EngineInfo, tmp_path: Path, client: str
) -> None:
    trace = tmp_path / "trace.jsonl"
    call = {
        "sync": "httpx.Client(transport=CacheAwareTransport(**options)).post(url, json=body)",
        "async": "asyncio.run(httpx.AsyncClient(transport=AsyncCacheAwareTransport(**options)).post(url, json=body))",
    }[client]
    script = textwrap.dedent(
        f"""
        import asyncio
        import httpx
        from agentcache.httpx import AsyncCacheAwareTransport, CacheAwareTransport, TraceRecorder
        options = dict(server="llama.cpp", model_dir={str(llama_server.model_dir)!r},
                       recorder=TraceRecorder({str(trace)!r}), telemetry=False)
        url = {llama_server.url + "/v1/chat/completions"!r}
        body = {body(llama_server, "Say hi.")!r}
        {call}
        """
    )  # the client is never closed and nothing is read: the process ends with the turn still queued
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    (record,) = read_trace(trace).records
    assert record.usage is not None and record.usage["prompt_tokens"] > 0


def conversation(engine: EngineInfo, turns: int) -> list[dict[str, object]]:
    """One session's requests, each extending the last, and a last one whose tool list changed (a divergence
    to diagnose and send back)."""
    function: dict[str, object] = {"name": "look", "parameters": {"type": "object", "properties": {}}}
    tool = {"type": "function", "function": function}
    history: list[dict[str, str]] = []
    requests: list[dict[str, object]] = []
    for n in range(turns):
        history = [*history, {"role": "user", "content": f"Step {n}."}]
        requests.append({"model": engine.model, "messages": history, "tools": [tool], "max_tokens": 1})
        history = [*history, {"role": "assistant", "content": "ok"}]
    renamed = {"type": "function", "function": {**function, "name": "glance"}}
    requests.append({**requests[-1], "tools": [renamed]})
    return requests


def test_the_prediction_process_predicts_what_this_process_would(llama_server: EngineInfo) -> None:
    ledgers = {}
    wheres: tuple[PredictIn, ...] = ("process", "thread")
    for where in wheres:
        transport = CacheAwareTransport(
            server="llama.cpp", model_dir=llama_server.model_dir, predict_in=where, telemetry=False
        )
        with httpx.Client(transport=transport, base_url=llama_server.url, timeout=120) as http:
            for request in conversation(llama_server, 3):
                http.post("/v1/chat/completions", json=request, headers={"x-agentcache-session": "s"})
        assert transport.middleware.predictions.where == where and transport.middleware.predictions.reason is None
        ledgers[where] = [
            (t.predicted_prompt_tokens, t.predicted_cached, t.cause, t.divergence) for t in transport.ledger.turns()
        ]
        assert all(t.predicted_prompt_tokens == t.reported_prompt_tokens for t in transport.ledger.turns())
    assert ledgers["process"] == ledgers["thread"]
    assert ledgers["process"][-1][3] is not None  # the renamed tool's divergence came back from the process


def test_a_tokenizer_given_as_an_object_is_predicted_in_this_process(llama_server: EngineInfo) -> None:
    transport = CacheAwareTransport(server="llama.cpp", tokenizer=get_tokenizer("o200k_base"), telemetry=False)
    assert transport.middleware.predictions.where == "thread"
    assert "tokenizer" in (transport.middleware.predictions.reason or "")
    with httpx.Client(transport=transport, base_url=llama_server.url, timeout=120) as http:
        http.post("/v1/chat/completions", json=body(llama_server, "Say hi."))
    (turn,) = transport.ledger.turns()
    assert turn.predicted_prompt_tokens is not None and turn.prediction_error is None


def test_a_prediction_process_that_dies_loses_no_turn(llama_server: EngineInfo) -> None:
    """Fault injection: the process is killed between two turns. The turn it would have predicted is recorded
    with why it has no prediction; the next ones are predicted in this process; a new middleware gets a new
    process."""
    transport = CacheAwareTransport(server="llama.cpp", model_dir=llama_server.model_dir, telemetry=False)
    requests = conversation(llama_server, 3)
    with httpx.Client(transport=transport, base_url=llama_server.url, timeout=120) as http:
        http.post("/v1/chat/completions", json=requests[0])
        assert settle(timeout=300)
        running = process._CHANNEL._process
        assert running is not None
        running.kill()
        running.wait()
        with pytest.warns(UserWarning, match="prediction process ended"):
            http.post("/v1/chat/completions", json=requests[1])
            assert settle(timeout=300)
        http.post("/v1/chat/completions", json=requests[2])
    first, lost, after = transport.ledger.turns()
    assert first.predicted_cached is not None and first.prediction_error is None
    assert lost.predicted_cached is None and "prediction process ended" in (lost.prediction_error or "")
    assert after.predicted_prompt_tokens == after.reported_prompt_tokens and after.prediction_error is None
    assert transport.middleware.predictions.where == "thread"
    assert "prediction process ended" in (transport.middleware.predictions.reason or "")
    fresh = CacheAwareTransport(server="llama.cpp", model_dir=llama_server.model_dir, telemetry=False)
    with httpx.Client(transport=fresh, base_url=llama_server.url, timeout=120) as http:
        http.post("/v1/chat/completions", json=requests[0])
    (turn,) = fresh.ledger.turns()
    assert fresh.middleware.predictions.where == "process" and process._CHANNEL._process not in (None, running)
    assert turn.predicted_prompt_tokens == turn.reported_prompt_tokens
