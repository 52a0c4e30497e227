"""The transport in front of a cluster: SMG (the Shepherd Model Gateway) and two real workers, SGLang servers in
one shared cluster and vLLM servers in the other (``each_cluster`` runs a test on both).

Each shared cluster's gateway hashes agentcache's routing keys (``consistent_hashing``), so each session stays on
one worker; a second gateway over the same workers routes ``round_robin``, so turns move, and the ledger must say
``worker_changed`` for each one that lost its prefix that way. On every turn, whatever the routing, the prediction
on the serving worker's own model must equal what that worker reports.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from agentcache.backends import AsyncOpenAICompatClient
from agentcache.cache.options import CacheOptions
from agentcache.drift.explain import explain
from agentcache.drift.trace import read_trace
from agentcache.fork import fork_chat
from agentcache.httpx import (
    SESSION_HEADER,
    AsyncCacheAwareTransport,
    CacheAwareTransport,
    Cluster,
    TraceRecorder,
    Turn,
)
from agentcache.predict import causes
from agentcache.predict.prompt import PromptTokenizer
from agentcache.predict.replay import Replay
from agentcache.tokens import get_tokenizer
from agentcache.transport.cluster import MAX_ROUTING_KEY_BYTES, SMG_ROUTING_KEY_HEADER, session_key
from agentcache.transport.tap import ERROR_EVENT
from tests.conftest import EngineInfo, engine_script, gateway
from tests.servers.test_kv_events import document
from tests.transport.test_server_events import assert_exact_through_the_eviction, through_an_eviction

TURNS = 4
SYSTEM = "You are a coding agent working in a repository. Use the tools; answer briefly."
GUIDE = SYSTEM + " " + " ".join(f"Rule {i}: module {i} stays small, typed and tested." for i in range(11))
"""A system prompt of about 170 tokens: a prefix several sessions share, five of vLLM's 32-token blocks."""


# --- without an engine --------------------------------------------------------------------------------


def test_session_key_is_the_session_when_a_header_can_carry_it_else_a_stable_digest() -> None:
    assert session_key("agent-7") == "agent-7"
    for awkward in ("séance", "a\nb", "x" * (MAX_ROUTING_KEY_BYTES + 1)):
        key = session_key(awkward)
        assert key == session_key(awkward) and key.isascii() and len(key) <= MAX_ROUTING_KEY_BYTES
    assert session_key("séance") != session_key("seance")


def test_the_worker_is_the_one_the_gateway_names_else_the_routing_key_pins_it_else_unknown() -> None:
    cluster = Cluster()
    told = httpx.Headers({"x-smg-routed-worker-id": "http://w1"})
    assert cluster.worker(told, "k") == ("http://w1", "header")
    assert cluster.worker(httpx.Headers(), "k") == ("routing-key:k", "routing_key")
    assert Cluster(routing_key_header=None).worker(httpx.Headers(), None) == (None, "unknown")


def test_routing_key_header_is_added_unless_the_request_brings_its_own() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"choices": []}, headers={"x-smg-routed-worker-id": "http://w1"})

    transport = CacheAwareTransport(httpx.MockTransport(answer), server="sglang", cluster=Cluster(), telemetry=False)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(transport=transport, base_url="http://gateway") as http:
        http.post("/v1/chat/completions", json=body, headers={"x-agentcache-session": "s1"})
        http.post(
            "/v1/chat/completions", json=body, headers={"x-agentcache-session": "s2", SMG_ROUTING_KEY_HEADER: "family"}
        )
    assert [r.headers[SMG_ROUTING_KEY_HEADER] for r in seen] == ["s1", "family"]
    assert [(t.routing_key, t.worker, t.worker_source) for t in transport.ledger.turns()] == [
        ("s1", "http://w1", "header"),
        ("family", "http://w1", "header"),
    ]


def test_a_gateway_error_naming_a_worker_marks_it_lost_and_the_session_s_next_turn_elsewhere_is_worker_lost() -> None:
    answers = iter([(200, "http://a"), (502, "http://a"), (200, "http://b")])

    def answer(request: httpx.Request) -> httpx.Response:
        status, worker = next(answers)
        usage = {"prompt_tokens": 1, "completion_tokens": 1}
        return httpx.Response(status, json={"choices": [], "usage": usage}, headers={"x-smg-routed-worker-id": worker})

    cluster = Cluster(workers_path=None)  # only the error tells: the gateway's list is not asked
    transport = CacheAwareTransport(httpx.MockTransport(answer), server="sglang", cluster=cluster, telemetry=False)
    with httpx.Client(transport=transport, base_url="http://gateway") as http:
        for body in [*_turns(2)[:1], *_turns(2)[1:], *_turns(2)[1:]]:
            http.post("/v1/chat/completions", json=body, headers={SESSION_HEADER: "s"})
    _, failed, retried = transport.ledger.turns()
    assert (failed.status, failed.worker, failed.cause) == (502, "http://a", None)
    # What the client was told (the 502 named a, the answer named b) decides the cause; no model output is read.
    assert retried.worker == "http://b" and retried.cause == causes.WORKER_LOST, retried
    assert retried.detail is not None and "http://a" in retried.detail


def _replay() -> Replay:
    return Replay(CacheOptions("sglang"), PromptTokenizer(get_tokenizer("o200k_base")))


def _turns(n: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
    bodies = []
    for i in range(n):
        history = [*history, {"role": "user", "content": f"step {i}: read module {i}"}]
        bodies.append({"model": "m", "messages": history})
        history = [*history, {"role": "assistant", "content": f"module {i} is fine"}]
    return bodies


def test_a_turn_moved_to_a_worker_without_its_prefix_is_worker_changed_and_worker_lost_once_it_went_away() -> None:
    replay = _replay()  # the client-side model alone, on fixed bodies: nothing here is the server's or a model's
    first, second, third, fourth = _turns(4)
    opened = replay.diagnose_turn(first, session="s", worker="a")
    assert opened.cause == causes.NEW_SESSION and opened.predicted_cached == 0
    same = replay.diagnose_turn(second, session="s", worker="a")  # extends the first turn on the worker that holds it
    assert same.cause == causes.NONE and same.predicted_cached == opened.predicted_prompt_tokens
    moved = replay.diagnose_turn(third, session="s", worker="b")
    assert moved.cause == causes.WORKER_CHANGED and moved.predicted_cached == 0
    assert "b held 0 of the" in moved.detail and "left on a" in moved.detail
    replay.worker_lost("b")
    lost = replay.diagnose_turn(fourth, session="s", worker="a")
    assert lost.cause == causes.WORKER_LOST and "b went away" in lost.detail
    assert replay.model_of("a") is not replay.model_of("b") is not replay.model


def test_a_move_to_a_worker_that_holds_the_prefix_is_no_miss() -> None:
    replay = _replay()
    first, second = _turns(2)
    replay.diagnose_turn(first, session="warm-b", worker="b")  # another session left this prefix on b
    replay.diagnose_turn(first, session="s", worker="a")
    assert replay.diagnose_turn(second, session="s", worker="b").cause == causes.NONE


def test_a_turn_that_changed_and_moved_is_named_by_what_re_billed_more() -> None:
    """The guarantee: a turn that both changed and moved to a worker without its prefix is named by the larger of
    what the move re-billed (the prefix before the change, less what the new worker held) and what the change
    re-billed (the previous prompt after it). Both sides are exercised: a late change (the last user message
    edited) re-bills less than the move; an early one (the system prompt's first word) more."""
    long = {"role": "user", "content": " ".join(f"read module {i} and note what it exports" for i in range(60))}
    first = {"model": "m", "messages": [{"role": "system", "content": SYSTEM}, long]}
    late = {"model": "m", "messages": [*first["messages"][:-1], {**long, "content": long["content"] + " carefully"}]}
    early = {"model": "m", "messages": [{"role": "system", "content": "Hello. " + SYSTEM}, long]}
    replay = _replay()
    named_by_the_move = []
    for session, changed in (("late", late), ("early", early)):
        replay.diagnose_turn(first, session=session, worker="a")
        turn = replay.diagnose_turn(changed, session=session, worker="b")
        assert turn.divergence is not None and turn.divergence_token is not None, turn
        moved = turn.divergence_token - turn.predicted_cached
        if moved > turn.wasted_tokens:
            assert turn.cause == causes.WORKER_CHANGED and "it also changed (" in turn.detail, turn
        else:
            assert turn.cause not in (causes.WORKER_CHANGED, causes.WORKER_LOST, causes.NONE), turn
        named_by_the_move.append(moved > turn.wasted_tokens)
    assert named_by_the_move == [True, False]


# --- through the real gateway and workers -------------------------------------------------------------


@dataclass
class _Agent:
    """One agent session: each turn extends the last, with a fixed answer re-sent (not the random model's text)."""

    session: str
    model: str
    history: list[dict[str, Any]] = field(default_factory=lambda: [{"role": "system", "content": SYSTEM}])

    def step(self, http: httpx.Client, **params: Any) -> None:
        step = len(self.history) // 2
        self.history.append({"role": "user", "content": f"Step {step} of {self.session}: look at module {step}."})
        body = {"model": self.model, "messages": self.history, "max_tokens": 3, "temperature": 0, **params}
        response = http.post("/v1/chat/completions", json=body, headers={SESSION_HEADER: self.session})
        assert response.status_code == 200, response.text
        self.history.append({"role": "assistant", "content": f"Module {step} looks fine; moving on."})


def _rounds(url: str, transport: CacheAwareTransport, agents: list[_Agent], rounds: int = TURNS) -> None:
    """Each agent takes a step per round, one request at a time: two requests that share a prefix and run at once
    are prefilled side by side, and which of them finds the other's prefix is the server's timing, not its cache."""
    with httpx.Client(base_url=url, timeout=300, transport=_shared(transport)) as http:
        for _ in range(rounds):
            for agent in agents:
                agent.step(http)


class _shared(httpx.BaseTransport):
    """Lends one cache-aware transport to several clients without closing it with each."""

    def __init__(self, inner: CacheAwareTransport) -> None:
        self.inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.inner.handle_request(request)


def _cluster_transport(cluster: EngineInfo, recorder: TraceRecorder | None = None) -> CacheAwareTransport:
    return CacheAwareTransport(
        server=cluster.profile,
        cache=cluster.cache_options,
        cluster=Cluster(),
        ask_output_ids=True,
        telemetry=False,
        recorder=recorder,
    )


def _assert_exact(turns: list[Turn], workers: tuple[str, ...]) -> None:
    """Every answered turn ran on a worker the gateway named, and was predicted exactly on that worker's model."""
    for turn in turns:
        assert turn.status == 200 and turn.exact and turn.output_ids_known, turn
        assert turn.worker in workers and turn.worker_source == "header", turn
        assert turn.predicted_prompt_tokens == turn.reported_prompt_tokens, turn
        assert turn.predicted_cached == turn.reported_cached, repr(turn)  # whole, not cut short


def test_each_worker_s_kv_events_keep_its_model_in_step_through_an_eviction(each_cluster: EngineInfo) -> None:
    """Every session on one worker (one routing key), three long documents in its 4,096-token pool: the worker's
    events, found by the name the gateway gives the worker, keep that worker's model exact through the eviction."""
    cluster = each_cluster
    events = dict(cluster.worker_events)
    assert set(events) == set(cluster.workers)
    cluster.empty_cache()
    transport = CacheAwareTransport(
        server=cluster.profile, cache=cluster.cache_options, cluster=Cluster(), kv_events=events, telemetry=False
    )
    through_an_eviction(cluster.url, transport, cluster.model, {SMG_ROUTING_KEY_HEADER: "one-worker"})
    assert_exact_through_the_eviction(transport)
    assert len({turn.worker for turn in transport.ledger.turns()}) == 1


def test_routing_keys_keep_each_session_on_one_worker_and_predictions_equal_reports(
    each_cluster: EngineInfo,
) -> None:
    cluster = each_cluster
    cluster.empty_cache()
    transport = _cluster_transport(cluster)
    sessions = [f"agent-{i}" for i in range(4)]
    _rounds(cluster.url, transport, [_Agent(session, cluster.model) for session in sessions])
    turns = transport.ledger.turns()
    assert len(turns) == len(sessions) * TURNS
    _assert_exact(turns, cluster.workers)
    for session in sessions:
        mine = transport.ledger.turns(session)
        assert len({t.worker for t in mine}) == 1, mine  # the routing key pinned it
        assert {t.routing_key for t in mine} == {session}
        assert [t.cause for t in mine] == [causes.NEW_SESSION] + [causes.NONE] * (TURNS - 1)
        assert all(t.reported_cached for t in mine[1:])  # each later turn reused its session's prefix


def test_round_robin_moves_turns_and_every_miss_it_causes_is_worker_changed(
    each_cluster: EngineInfo, tmp_path: Path
) -> None:
    """And the trace names each turn's worker, so that ``explain`` replays it on that worker's model and finds the
    same moves offline (it has no output ids: the moves, not the exact counts, are what must agree)."""
    cluster = each_cluster
    cluster.empty_cache()
    transport = _cluster_transport(cluster, TraceRecorder(tmp_path / "trace.jsonl"))
    with gateway(cluster, "round_robin") as url:
        for session in ("rr-0", "rr-1"):  # one after the other: consecutive turns alternate between the workers
            _rounds(url, transport, [_Agent(session, cluster.model)])
    turns = transport.ledger.turns()
    _assert_exact(turns, cluster.workers)
    moved = 0
    for session in ("rr-0", "rr-1"):
        mine = transport.ledger.turns(session)
        assert mine[0].cause == causes.NEW_SESSION
        for before, turn in itertools.pairwise(mine):
            if turn.worker == before.worker:
                assert turn.cause == causes.NONE, turn
            else:
                moved += 1
                assert turn.cause == causes.WORKER_CHANGED and turn.worker in (turn.detail or ""), turn
    assert moved > 0, "round_robin alternates workers, so some turn must have moved"
    trace = read_trace(tmp_path / "trace.jsonl")
    assert not trace.problems
    in_order = sorted(turns, key=lambda t: t.started)  # one request at a time: the order the trace has them in
    assert [(r.session, r.worker) for r in trace.records] == [(t.session, t.worker) for t in in_order]
    offline = explain(trace, cache=cluster.cache_options)
    assert [(r.session, r.turn, r.worker, r.cause) for r in offline] == [
        (t.session, t.turn, t.worker, t.cause) for t in in_order
    ]


def test_concurrent_sessions_under_memory_pressure_are_predicted_exactly_from_the_workers_events(
    each_cluster: EngineInfo,
) -> None:
    """Eight sessions at once through round robin, each with a document of its own after a guide they all share:
    their working set, about 12,000 tokens, is three times what each worker's 4,096-token pool holds, so the
    workers evict while other sessions' requests are in flight, and a session's turns move between workers. The
    shared guide (several of vLLM's blocks) is prefilled by whichever request comes first, and found by the others
    while the first is still running, or not: the workers' KV events say which, so every prediction equals the
    report (deliver 3: memory pressure)."""
    cluster = each_cluster
    cluster.empty_cache()
    transport = AsyncCacheAwareTransport(
        server=cluster.profile,
        cache=cluster.cache_options,
        cluster=Cluster(routing_key_header=None),
        kv_events=dict(cluster.worker_events),
        ask_output_ids=True,
        telemetry=False,
    )

    async def session(http: httpx.AsyncClient, index: int) -> None:
        name = f"pressure-{index}"
        history = [{"role": "system", "content": GUIDE}, {"role": "user", "content": document(name)}]
        for step in range(TURNS):
            body = {"model": cluster.model, "messages": history, "max_tokens": 3, "temperature": 0}
            response = await http.post("/v1/chat/completions", json=body, headers={SESSION_HEADER: name})
            assert response.status_code == 200, response.text
            history += [{"role": "assistant", "content": f"Read part {step}."}, {"role": "user", "content": "Go on."}]

    async def run(url: str) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=300, transport=transport) as http:
            await asyncio.gather(*(session(http, index) for index in range(8)))

    with gateway(cluster, "round_robin") as url:
        asyncio.run(run(url))
    turns = transport.middleware.ledger.turns()
    assert len(turns) == 8 * TURNS
    _assert_exact(turns, cluster.workers)


def test_a_fork_family_shares_one_routing_key_so_every_sibling_lands_on_the_parent_s_worker(
    each_cluster: EngineInfo,
) -> None:
    cluster = each_cluster
    cluster.empty_cache()
    transport = AsyncCacheAwareTransport(
        server=cluster.profile, cache=cluster.cache_options, cluster=Cluster(), ask_output_ids=True, telemetry=False
    )
    families = ("family-a", "family-b")

    async def run(family: str) -> None:
        headers = {SMG_ROUTING_KEY_HEADER: family, SESSION_HEADER: family}
        client = AsyncOpenAICompatClient(cluster.url, model=cluster.model, transport=transport, headers=headers)
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"Plan {family}: 3 options."}]
        body = {"messages": messages, "max_tokens": 3, "temperature": 0.7}
        await fork_chat(client, body, 3, seeds=[1, 2, 3], concurrency=1)  # one at a time: see _rounds

    async def both() -> None:
        for family in families:
            await run(family)
        await transport.aclose()

    asyncio.run(both())
    turns = transport.ledger.turns()
    _assert_exact(turns, cluster.workers)
    for family in families:
        prime, *siblings = transport.ledger.turns(family)
        assert len(siblings) == 2 and {t.routing_key for t in (prime, *siblings)} == {family}
        assert {t.worker for t in siblings} == {prime.worker}  # where the parent is cached
        # each found the whole parent there: all of the prompt but its last token (SGLang), in whole blocks (vLLM)
        assert all(t.reported_cached == cluster.reusable(t.reported_prompt_tokens) for t in siblings), siblings


def test_a_killed_worker_loses_no_turn_and_the_ledger_names_the_turns_its_loss_cost(each_cluster: EngineInfo) -> None:
    """Runs last: it kills one of the shared workers in the middle of a streamed answer, and starts it again
    (empty) on its port before it ends."""
    cluster = each_cluster
    cluster.empty_cache()
    transport = _cluster_transport(cluster)
    agents = [_Agent(f"fault-{i}", cluster.model) for i in range(4)]
    _rounds(cluster.url, transport, agents, rounds=2)
    placed = {agent.session: transport.ledger.turns(agent.session)[-1].worker for agent in agents}
    victim = placed[agents[0].session]
    assert victim is not None
    index = cluster.workers.index(victim)
    # The first agent's next step is a long answer (the model never stops on its own with ignore_eos), streamed
    # on its worker, which is killed after its first events: the gateway ends the stream with an error event.
    agent = agents[0]
    agent.history.append({"role": "user", "content": "Write the full report."})
    body = {"model": cluster.model, "messages": agent.history, "max_tokens": 2000, "ignore_eos": True, "stream": True}
    try:
        with httpx.Client(base_url=cluster.url, timeout=300, transport=_shared(transport)) as http:
            headers = {SESSION_HEADER: agent.session}
            with http.stream("POST", "/v1/chat/completions", json=body, headers=headers) as response:
                assert response.headers["x-smg-routed-worker-id"] == victim
                for events, _ in enumerate(response.iter_lines()):
                    if events == 4:
                        engine_script.stop(engine_script.worker_name(cluster.name, index), grace=0.0)  # SIGKILL
            _wait_unhealthy(cluster.url, victim)
            killed = time.time()
            retry = {"model": cluster.model, "messages": agent.history, "max_tokens": 3, "temperature": 0}
            assert http.post("/v1/chat/completions", json=retry, headers=headers).status_code == 200  # as agents do
        agent.history.append({"role": "assistant", "content": "The report is written."})
        _rounds(cluster.url, transport, agents, rounds=2)
    finally:  # back on its port, empty; not waited for: the gateway re-admits it once its health check passes
        record = engine_script.running(cluster.name) or {}
        pool = int(str(record.get("kv_pool", engine_script.CONTEXT)))
        engine_script.spawn_worker(cluster.name, index, int(victim.rsplit(":", 1)[1]), pool)

    turns = transport.ledger.turns()
    cut = [t for t in turns if t.error is not None]
    assert [(t.session, t.worker) for t in cut] == [(agents[0].session, victim)]
    assert (cut[0].error or "").startswith(ERROR_EVENT.format(""))  # not a reply without usage
    _assert_exact([t for t in turns if t.error is None], cluster.workers)
    assert len(turns) == len(agents) * 4 + 2  # no turn lost, none sent twice (the cut one and its retry)
    for agent in agents:
        mine = [t for t in transport.ledger.turns(agent.session) if t.error is None]
        after = [t for t in mine if t.started > killed]
        assert len(after) == (3 if agent is agents[0] else 2) and all(t.worker != victim for t in after), after
        if placed[agent.session] == victim:  # its first answer elsewhere missed because the worker went away
            assert after[0].cause == causes.WORKER_LOST and victim in (after[0].detail or ""), after[0]
            # Guaranteed: the routing key keeps the session on its new worker, and only the first turn there is
            # the dead worker's to pay for.
            assert {t.worker for t in after} == {after[0].worker}, after
            assert not {t.cause for t in after[1:]} & {causes.WORKER_LOST, causes.WORKER_CHANGED}, after
        else:
            assert all(t.cause == causes.NONE for t in mine[1:]), mine


def _wait_unhealthy(url: str, worker: str, timeout: float = 60.0) -> None:
    """Wait until the gateway's health check (every second) has taken ``worker`` out of the rotation."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listing = httpx.get(f"{url}/workers", timeout=10).json()["workers"]
        if not any(w["url"] == worker and w["is_healthy"] for w in listing):
            return
        time.sleep(0.5)
    raise AssertionError(f"the gateway still routes to {worker} {timeout:.0f} s after it was killed")
