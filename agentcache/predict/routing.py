"""Where a gateway would send each request of a trace, for the what-if of a cluster (``agentcache simulate
--workers N --route R``).

A cluster caches a prefix only on the worker that computed it, so its hit ratio depends on the routing as much as
on the requests. These routers replay a trace over N client-side worker models (:meth:`Replay.model_of`), one
request at a time, as the policies of SMG, the gateway agentcache works with (docs/cluster.md), would route it:

- ``round_robin``: the next worker for each request;
- ``session``: each session to one worker by hashing its id, as ``consistent_hashing`` does with the routing
  keys agentcache sends (rendezvous hashing here: any even, stable spread of sessions gives the same cache);
- ``cache_aware``: the worker holding the longest prefix of the request, when it holds at least ``threshold`` of
  it (SMG's ``--cache-threshold``, 0.3); otherwise the worker holding the fewest tokens. SMG matches text in an
  approximate tree of its own, takes the least-loaded worker on a miss, and spills a matched worker's request
  elsewhere when its in-flight load is far above the mean (by 64 requests and 1.5 times); a replay has no load,
  so the router here sees each worker's cache exactly and never spills;
- ``recorded``: the worker the trace recorded (docs/trace-format.md).
"""

from __future__ import annotations

import hashlib
from typing import Protocol

from agentcache.drift.trace import TraceRecord
from agentcache.errors import InputError
from agentcache.predict.replay import Replay

__all__ = ["CACHE_THRESHOLD", "POLICIES", "ROUTED_KINDS", "ROUTES", "Router", "router", "worker_names"]

POLICIES = ("round_robin", "session", "cache_aware")
"""The gateway policies a replay can route by."""
ROUTES = (*POLICIES, "recorded")
ROUTED_KINDS = ("sglang", "vllm")
"""The engines a gateway fronts: the models a router can ask what they hold (:meth:`Replay.held`)."""
CACHE_THRESHOLD = 0.3
"""SMG's default ``--cache-threshold``: the share of a prompt a worker must hold for cache-aware routing to
follow it."""


class Router(Protocol):
    def route(self, record: TraceRecord, replay: Replay) -> str | None:
        """The worker to serve ``record`` on (None: the single server's model)."""
        ...


def worker_names(count: int) -> list[str]:
    return [f"worker-{index}" for index in range(count)]


class _RoundRobin:
    def __init__(self, workers: list[str]) -> None:
        self.workers = workers
        self.sent = 0

    def route(self, record: TraceRecord, replay: Replay) -> str | None:
        self.sent += 1
        return self.workers[(self.sent - 1) % len(self.workers)]


class _Session:
    def __init__(self, workers: list[str]) -> None:
        self.workers = workers

    def route(self, record: TraceRecord, replay: Replay) -> str | None:
        def weight(worker: str) -> bytes:
            return hashlib.blake2b(f"{worker}\0{record.session}".encode(), digest_size=8).digest()

        return max(self.workers, key=weight)


class _CacheAware:
    def __init__(self, workers: list[str], threshold: float) -> None:
        self.workers = workers
        self.threshold = threshold

    def route(self, record: TraceRecord, replay: Replay) -> str | None:
        held, length = replay.held(record.request, record.session, self.workers, record.ts)
        best = max(self.workers, key=held.__getitem__)  # the first of equals: deterministic
        if held[best] and held[best] >= self.threshold * length:
            return best
        return min(self.workers, key=lambda w: replay.model_of(w).stats()["stored_tokens"])


class _Recorded:
    def route(self, record: TraceRecord, replay: Replay) -> str | None:
        return record.worker


def router(route: str, workers: int, threshold: float = CACHE_THRESHOLD) -> Router:
    """The router ``route`` (one of :data:`ROUTES`) over ``workers`` workers named ``worker-0`` ...; ``recorded``
    ignores the count."""
    if workers < 1:
        raise InputError(f"a cluster has at least one worker, got {workers}")
    names = worker_names(workers)
    if route == "round_robin":
        return _RoundRobin(names)
    if route == "session":
        return _Session(names)
    if route == "cache_aware":
        return _CacheAware(names, threshold)
    if route == "recorded":
        return _Recorded()
    raise InputError(f"unknown route {route!r}: choose one of {', '.join(ROUTES)}")
