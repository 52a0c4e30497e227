"""Routing a trace over N worker models (``agentcache simulate --workers``): each policy sends requests where the
gateway's would, and a cluster's hit ratio follows from where they went."""

from __future__ import annotations

import collections

import pytest

from agentcache.cache.options import CacheOptions
from agentcache.drift.trace import TraceRecord
from agentcache.errors import InputError
from agentcache.predict.prompt import PromptTokenizer
from agentcache.predict.replay import Replay
from agentcache.predict.routing import router, worker_names
from agentcache.tokens import get_tokenizer

SYSTEM = "You are a release assistant. Follow the checklist, cite file paths, and never skip a step. " * 12


def turn(session: str, turns: int, system: str = SYSTEM) -> TraceRecord:
    messages = [{"role": "system", "content": system}]
    for index in range(turns):
        messages += [
            {"role": "user", "content": f"{session}: step {index}, read module {index}."},
            {"role": "assistant", "content": f"Module {index} of {session} reads cleanly."},
        ]
    return TraceRecord(0, session, {"model": "m", "messages": messages[:-1]})


def replay(kind: str = "sglang") -> Replay:
    return Replay(CacheOptions(kind), PromptTokenizer(get_tokenizer("o200k_base")))  # type: ignore[arg-type]


def routed(route: str, records: list[TraceRecord], workers: int = 4, kind: str = "sglang") -> list[str | None]:
    """The worker of each record, each served there as the route chose."""
    chooser, cluster, chosen = router(route, workers), replay(kind), []
    for record in records:
        worker = chooser.route(record, cluster)
        cluster.serve(record.request, session=record.session, worker=worker)
        chosen.append(worker)
    return chosen


def test_round_robin_takes_the_workers_in_turn() -> None:
    records = [turn("a", n) for n in range(1, 7)]
    assert routed("round_robin", records, workers=3) == worker_names(3) * 2


def test_session_routing_keeps_a_session_on_one_worker_and_spreads_sessions() -> None:
    records = [turn(f"agent-{s}", n) for n in range(1, 4) for s in range(32)]
    chosen = routed("session", records)
    by_session = collections.defaultdict(set)
    for record, worker in zip(records, chosen, strict=True):
        by_session[record.session].add(worker)
    assert all(len(workers) == 1 for workers in by_session.values())
    assert {w for (w,) in by_session.values()} == set(worker_names(4))


@pytest.mark.parametrize("kind", ["sglang", "vllm"])
def test_cache_aware_follows_the_worker_that_holds_the_prefix_else_the_emptiest(kind: str) -> None:
    """A new session whose prompt is mostly the shared system prompt follows the worker that holds it; one with
    a prompt of its own (below the threshold) goes to the worker holding least; a session's later turns stay."""
    other = "A different deployment entirely, with its own instructions. " * 2
    records = [turn("a", 1), turn("b", 1), turn("c", 1, system=other), turn("a", 2), turn("c", 2, system=other)]
    a, b, c, a2, c2 = routed("cache_aware", records, kind=kind)
    assert b == a and c != a and a2 == a and c2 == c


def test_recorded_uses_the_trace_s_worker() -> None:
    records = [TraceRecord(1, "s", turn("s", 1).request, worker="w-9"), turn("s", 2)]
    assert routed("recorded", records) == ["w-9", None]


def test_a_worker_count_below_one_or_an_unknown_route_is_an_input_error() -> None:
    with pytest.raises(InputError, match="at least one worker"):
        router("session", 0)
    with pytest.raises(InputError, match="unknown route 'sticky'"):
        router("sticky", 2)


def test_routing_asks_only_engine_models() -> None:
    with pytest.raises(InputError, match=r"SGLang and vLLM workers, not llama\.cpp"):
        routed("cache_aware", [turn("a", 1)], kind="llama.cpp")


def test_a_cluster_s_hit_ratio_follows_the_routing() -> None:
    """Sessions that move between workers lose their prefix on every move: round robin keeps less than session
    routing, which keeps what one server keeps while every session fits its worker."""
    records = [turn(f"agent-{s}", n) for n in range(1, 6) for s in range(6)]  # 6 of 4: round robin moves them

    def hit_ratio(route: str | None) -> float:
        cluster, cached, prompt = replay(), 0, 0
        chooser = None if route is None else router(route, 4)
        for record in records:
            worker = None if chooser is None else chooser.route(record, cluster)
            served = cluster.serve(record.request, session=record.session, worker=worker)
            cached, prompt = cached + served.cached, prompt + served.prompt_tokens
        return cached / prompt

    one_server = hit_ratio(None)
    assert hit_ratio("round_robin") < hit_ratio("session") <= one_server
    assert hit_ratio("cache_aware") == one_server  # unbounded workers: following the prefix loses nothing
