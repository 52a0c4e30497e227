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
from agentcache.transport import Call, Turn, TurnListener
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
