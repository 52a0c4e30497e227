"""The ledger numbers each session's turns 1, 2, 3... even when threads send at once, and sums them right."""

from __future__ import annotations

import random
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import httpx

from agentcache.httpx import SESSION_HEADER, CacheAwareTransport, Ledger, Turn

SESSIONS = ["alpha", "beta", "gamma"]


def make_turn(session: str, number: int, **fields: Any) -> Turn:
    base = Turn(
        session=session, turn=number, session_source="header", path="/v1/chat/completions", model="tiny",
        stream=False, canonicalized=True, passthrough=None, status=200, error=None, reported_prompt_tokens=None,
        reported_cached=None, predicted_prompt_tokens=None, predicted_cached=None, exact=False, output_ids_known=False,
        cause=None, detail=None, divergence_token=None, divergence=None, wasted_tokens=0, started=0.0, seconds=0.0,
    )
    return replace(base, **fields)


def test_numbering_per_session_under_threads() -> None:
    """Many threads number and record turns of a few sessions: each session gets exactly 1..n, no gaps."""
    ledger = Ledger()
    per_thread, threads = 60, 8
    barrier = threading.Barrier(threads)
    plan = [[random.Random(seed * 1000 + i).choice(SESSIONS) for i in range(per_thread)] for seed in range(threads)]

    def work(sessions: list[str]) -> list[tuple[str, int]]:
        barrier.wait()
        numbered = []
        for session in sessions:
            number = ledger.next_turn(session)
            ledger.record(make_turn(session, number))
            numbered.append((session, number))
        return numbered

    with ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(work, plan))

    sent = Counter(session for sessions in plan for session in sessions)
    for session, count in sent.items():
        numbers = sorted(n for numbered in results for s, n in numbered if s == session)
        assert numbers == list(range(1, count + 1))
        assert [t.turn for t in ledger.turns(session)] == numbers
    for numbered in results:  # each thread saw its own turns of a session in increasing order
        for session in sent:
            mine = [n for s, n in numbered if s == session]
            assert mine == sorted(mine)
    assert ledger.sessions() == sorted(sent)
    assert len(ledger.turns()) == per_thread * threads


def test_transport_numbers_concurrent_requests_per_session() -> None:
    """Threads share one transport (the engine answers 503, so no engine is needed): numbering holds."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(503, headers={"content-type": "application/json"}, stream=httpx.ByteStream(b"{}"))

    transport = CacheAwareTransport(httpx.MockTransport(handler), server="sglang")
    body = b'{"model": "tiny", "messages": [{"role": "user", "content": "Hi"}]}'
    plan = [SESSIONS[i % len(SESSIONS)] for i in range(48)]
    with httpx.Client(transport=transport) as client, ThreadPoolExecutor(6) as pool:
        statuses = list(pool.map(
            lambda s: client.post("http://engine/v1/chat/completions", content=body,
                                  headers={SESSION_HEADER: s}).status_code, plan))
    assert statuses == [503] * len(plan)
    for session, count in Counter(plan).items():
        assert [t.turn for t in transport.ledger.turns(session)] == list(range(1, count + 1))


def test_turns_sorted_by_session_then_number_whatever_the_completion_order() -> None:
    ledger = Ledger()
    turns = [make_turn(s, n) for s in ("b", "a") for n in (2, 1, 3)]
    for turn in turns:
        ledger.record(turn)
    assert [(t.session, t.turn) for t in ledger.turns()] == sorted((t.session, t.turn) for t in turns)
    assert [t.turn for t in ledger.turns("b")] == [1, 2, 3]


def test_on_turn_sees_every_recorded_turn() -> None:
    seen: list[Turn] = []
    ledger = Ledger(on_turn=seen.append)
    turns = [make_turn("a", 1), make_turn("b", 1)]
    for turn in turns:
        ledger.record(turn)
    assert seen == turns


def test_summary_arithmetic() -> None:
    turns = [
        make_turn("s", 1, reported_prompt_tokens=100, reported_cached=0, predicted_cached=0, cause="new_session"),
        make_turn("s", 2, reported_prompt_tokens=150, reported_cached=96, predicted_cached=96, cause="none"),
        make_turn("s", 3, reported_prompt_tokens=160, reported_cached=32, predicted_cached=48, cause="tools_reordered",
                  wasted_tokens=112),
        # reported no cached count: its prompt must not dilute the hit ratio
        make_turn("s", 4, reported_prompt_tokens=170, reported_cached=None, predicted_cached=150, cause="none"),
        make_turn("s", 5, status=503, passthrough=None),
        make_turn("s", 6, passthrough="body is not JSON (...)", canonicalized=False, status=400),
        make_turn("other", 1, reported_prompt_tokens=999, reported_cached=999, predicted_cached=999, cause="none"),
    ]
    ledger = Ledger()
    for turn in turns:
        ledger.record(turn)
    summary = ledger.summary("s")
    mine = [t for t in turns if t.session == "s"]
    reported = [t for t in mine if t.reported_cached is not None and t.reported_prompt_tokens is not None]
    assert summary.turns == len(mine)
    assert summary.reported_prompt_tokens == sum(t.reported_prompt_tokens or 0 for t in reported)
    assert summary.reported_cached == sum(t.reported_cached or 0 for t in reported)
    assert summary.predicted_cached == sum(t.predicted_cached or 0 for t in mine)
    assert summary.wasted_tokens == sum(t.wasted_tokens for t in mine)
    assert summary.passed_through == sum(t.passthrough is not None for t in mine)
    assert summary.causes == dict(Counter(t.cause for t in mine if t.cause))
    assert summary.hit_ratio == summary.reported_cached / summary.reported_prompt_tokens
    # the unreported turn is left out
    assert summary.reported_prompt_tokens < sum(t.reported_prompt_tokens or 0 for t in mine)


def test_summary_of_an_unknown_session_is_empty() -> None:
    summary = Ledger().summary("nobody")
    figures = (summary.turns, summary.reported_prompt_tokens, summary.reported_cached, summary.hit_ratio)
    assert figures == (0, 0, 0, None)
    assert summary.causes == {}


def test_turn_hit_ratio_and_json() -> None:
    turn = make_turn("s", 1, reported_prompt_tokens=64, reported_cached=48)
    assert turn.hit_ratio == 48 / 64
    assert turn.to_json()["hit_ratio"] == turn.hit_ratio
    assert make_turn("s", 2, reported_prompt_tokens=0, reported_cached=0).hit_ratio is None
    assert make_turn("s", 3, reported_prompt_tokens=10, reported_cached=None).hit_ratio is None
