"""Agent sessions and a tree search through SMG in front of two SGLang workers, under three routing policies.

Run: ``python bench/cluster.py [--sessions 16] [--turns 8] [--kv-pool 32768] [--cluster cluster-vllm]``. It uses
the project's cluster (``scripts/engines/engines.py start cluster --workers 2 --policy consistent_hashing``, or
with ``--cluster cluster-vllm`` the same with vLLM workers, where the tree search, which forks on SGLang's
``/generate``, is left out), started here (and stopped at the end) unless it is running already. For each
policy it routes by, other than the running gateway's own, it puts one more SMG over the same workers for the time
of that policy, then stops it.

Each policy gets the same workload, on caches flushed on both workers first:

- ``--sessions`` concurrent agent sessions of ``--turns`` turns (:func:`agentcache.demo.scenario.session`: a
  coding agent whose tools change order and whose schemas change key order between turns, with a clock in its
  system prompt), each with a ticket line of its own after the deployment's shared context, and fixed assistant
  turns (never what the random-weight model writes). They go through one
  :class:`~agentcache.httpx.AsyncCacheAwareTransport` (canonicalized, the clock relocated, a model per worker).
  Each session's first turn waits for the previous session's first turn to be answered; after that every
  session runs at once. Two requests that share a prefix not cached yet, run side by side, are prefilled side by
  side, and which finds the other's prefix is the server's timing (docs/model-sglang.md): agents that arrive one
  after another keep the deployment's shared prefix out of that race, and their own parts never share one;
- one MCTS (UCT, branching 3, depth 3, as in ``bench/mcts.py``) whose expansions are forks (a prime, then the
  siblings at once), on SGLang's ``/generate`` through the same gateway, running beside the sessions.

The policies:

- ``round_robin``: SMG alternates workers, whatever the request;
- ``cache_aware``: SMG's own approximate prefix tree, and no routing key sent;
- ``routing keys``: ``consistent_hashing`` on agentcache's keys: each session's id, and for the tree search one
  key for all its fork families (each family must land where its parent is cached, and the parent was computed
  by the family above it).

Printed per policy: the sessions' hit ratio (reported cached / reported prompt tokens) and server prefill
(reported prompt - cached), the p50 wall time of their requests, the turns whose prediction differs from the
serving worker's report, and the tree search's server prefill against the unique-token lower bound of a single
server. Targets (issue 16), printed PASS/FAIL, exit 1 on a miss: predicted equals reported on every turn of every
policy; the routing keys' hit ratio >= ``cache_aware``'s and well above ``round_robin``'s (at most 2/3 of its
uncached tokens); the tree search's prefill under routing keys within 10% of the lower bound.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
import mcts as single_server  # the same search, problem and evaluation as on one server

ROOT = Path(__file__).resolve().parent.parent
ENGINES_PY = ROOT / "scripts" / "engines" / "engines.py"
sys.path.insert(0, str(ENGINES_PY.parent))
import engines as engine_script  # noqa: E402  # the one place that knows the engines' folders

from agentcache.backends import AsyncSGLangClient  # noqa: E402
from agentcache.cache.options import CacheOptions  # noqa: E402
from agentcache.canon import CanonicalPolicy  # noqa: E402
from agentcache.demo.live import SCALE  # noqa: E402
from agentcache.demo.scenario import session  # noqa: E402
from agentcache.httpx import SESSION_HEADER, AsyncCacheAwareTransport, Cluster, Turn  # noqa: E402
from agentcache.predict import causes  # noqa: E402
from agentcache.search import MCTS, ForkProposer, SearchTree  # noqa: E402
from agentcache.search.fork import branch_markers  # noqa: E402
from agentcache.tokens import get_tokenizer  # noqa: E402
from agentcache.transport.cluster import (  # noqa: E402
    SMG_RETYPING_POLICIES,
    SMG_ROUTING_KEY_HEADER,
    SMG_WORKER_HEADER,
)


@dataclass(frozen=True)
class Policy:
    name: str
    gateway: str
    """SMG's ``--policy``."""
    keys: bool
    """Whether agentcache sends its routing keys."""


POLICIES = (
    Policy("round_robin", "round_robin", keys=False),
    Policy("cache_aware", "cache_aware", keys=False),
    Policy("routing keys", "consistent_hashing", keys=True),
)
MAX_TOKENS = 3
KEYS_OVER_ROUND_ROBIN = 2 / 3
"""``well above round_robin``: the routing keys leave at most this share of round_robin's uncached tokens."""


@dataclass(frozen=True)
class Result:
    policy: Policy
    turns: list[Turn]
    tree: SearchTree | None
    """The tree search's, on SGLang workers (None on vLLM's)."""
    tree_workers: set[str]
    seconds: float

    @property
    def prompt(self) -> int:
        return sum(t.reported_prompt_tokens or 0 for t in self.turns)

    @property
    def prefill(self) -> int:
        return self.prompt - sum(t.reported_cached or 0 for t in self.turns)

    @property
    def hit_ratio(self) -> float:
        return 1 - self.prefill / self.prompt if self.prompt else 0.0

    @property
    def p50(self) -> float:
        """Median seconds from sending a session's request to having its answer."""
        return statistics.median(t.seconds for t in self.turns)

    @property
    def split(self) -> str:
        """The sessions' turns on each worker."""
        return "/".join(str(n) for _, n in sorted(Counter(t.worker for t in self.turns if t.worker).items()))

    @property
    def moved(self) -> int:
        """Turns that landed on a worker lacking what their session's previous turn left on its own."""
        return sum(t.cause in (causes.WORKER_CHANGED, causes.WORKER_LOST) for t in self.turns)

    @property
    def mispredicted(self) -> list[Turn]:
        """Turns without an exact prediction equal to what the serving worker reported."""
        return [
            t
            for t in self.turns
            if not (
                t.status == 200
                and t.exact
                and t.worker_source == "header"
                and t.predicted_prompt_tokens == t.reported_prompt_tokens
                and t.predicted_cached == t.reported_cached
            )
        ]


def workload(sessions: int, turns: int) -> list[list[dict[str, Any]]]:
    """Each session's requests: the demo's drifting coding agent, one of the deployment's sessions, with a ticket
    line of its own right after the deployment's shared context (sessions with the same task would otherwise send
    the same history, differing only in their clocks)."""
    tokenizer = get_tokenizer("o200k_base")
    out = []
    for index in range(sessions):
        requests = session(tokenizer, turns, drift=True, scale=SCALE, index=index)
        shared = requests[0]["messages"][1]
        context, _, task = shared["content"].rpartition("\n\n")
        own = {**shared, "content": f"{context}\n\nTicket SHOP-{4100 + index}. {task}"}
        out.append(
            [
                {
                    **body,
                    "model": engine_script.SERVED_NAME,
                    "max_tokens": MAX_TOKENS,
                    "messages": [own if message is shared else message for message in body["messages"]],
                }
                for body in requests
            ]
        )
    return out


class _Routed(httpx.AsyncBaseTransport):
    """The tree search's transport: sends on, and notes which worker the gateway named for each request."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.workers: set[str] = set()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self.inner.handle_async_request(request)
        self.workers.add(response.headers.get(SMG_WORKER_HEADER, "(not named)"))
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


async def agents(url: str, transport: AsyncCacheAwareTransport, requests: list[list[dict[str, Any]]]) -> None:
    """Every session at once, each first turn after the previous session's (see the module docstring)."""
    arrived = [asyncio.Event() for _ in range(len(requests) + 1)]
    arrived[0].set()

    async def agent(index: int, http: httpx.AsyncClient) -> None:
        await arrived[index].wait()
        try:
            for body in requests[index]:
                response = await http.post(
                    "/v1/chat/completions", json=body, headers={SESSION_HEADER: f"agent-{index}"}
                )
                response.raise_for_status()
                arrived[index + 1].set()  # once this session's first turn is answered, the next one arrives
        finally:
            arrived[index + 1].set()  # even when it failed, so the others still run

    async with httpx.AsyncClient(base_url=url, transport=transport, timeout=600) as http:
        await asyncio.gather(*(agent(index, http) for index in range(len(requests))))


async def search(url: str, worker: str, keys: bool) -> tuple[SearchTree, set[str]]:
    """The MCTS through the gateway, its root and markers tokenized by a worker (the gateway has no tokenizer)."""
    async with AsyncSGLangClient(worker) as tokenizer:
        root = await tokenizer.tokenize(single_server.PROBLEM * 10)
        markers = await branch_markers(tokenizer, 3)
    routed = _Routed()
    headers = {SMG_ROUTING_KEY_HEADER: "mcts"} if keys else None
    async with AsyncSGLangClient(url, transport=routed, headers=headers, timeout=600) as client:
        propose = ForkProposer(client, markers, single_server.PARAMS)
        tree: SearchTree = await MCTS(propose, single_server.evaluate, branching=3, max_depth=3, seed=1).run(root)
    return tree, routed.workers


async def one_policy(
    url: str, cluster: Running, policy: Policy, requests: list[list[dict[str, Any]]], events: dict[str, str]
) -> Result:
    block = {"block_size": engine_script.VLLM_BLOCK} if cluster.engine == "vllm" else {}
    transport = AsyncCacheAwareTransport(
        server=cluster.engine,
        cache=CacheOptions(cluster.engine, model_dir=str(engine_script.MODEL_DIR), **block),  # type: ignore[arg-type]
        cluster=Cluster(
            routing_key_header=SMG_ROUTING_KEY_HEADER if policy.keys else None,
            retypes=policy.gateway in SMG_RETYPING_POLICIES,  # the worker renders the gateway's body
        ),
        policy=CanonicalPolicy(relocate_volatile=True),
        ask_output_ids=True,
        telemetry=False,
        kv_events=events or None,
    )
    began = time.monotonic()
    if cluster.engine != "sglang":
        await agents(url, transport, requests)
        return Result(policy, transport.middleware.ledger.turns(), None, set(), time.monotonic() - began)
    _, (tree, tree_workers) = await asyncio.gather(
        agents(url, transport, requests), search(url, cluster.workers[0], policy.keys)
    )
    seconds = time.monotonic() - began
    return Result(policy, transport.middleware.ledger.turns(), tree, tree_workers, seconds)


@dataclass(frozen=True)
class Running:
    """One of the project's clusters, from its run record."""

    name: str
    url: str
    policy: str
    workers: tuple[str, ...]
    kv_pool: int
    events: dict[str, str]
    """Where each worker publishes its KV cache events, by its URL (the name the gateway gives it)."""

    @classmethod
    def read(cls, name: str) -> Running | None:
        record = engine_script.running(name)
        if record is None:
            return None
        workers = record["workers"]
        assert isinstance(workers, list)
        records = (engine_script.running(engine_script.worker_name(name, i)) or {} for i in range(len(workers)))
        events = {str(r["url"]): str(r["kv_events"]) for r in records if r.get("kv_events")}
        pool = int(str(record["kv_pool"]))
        return cls(name, str(record["url"]), str(record["policy"]), tuple(map(str, workers)), pool, events)

    @property
    def engine(self) -> str:
        """What the workers run: ``sglang`` or ``vllm``."""
        return str(engine_script.CLUSTERS[self.name])

    @contextmanager
    def gateway(self, policy: str) -> Iterator[str]:
        """The running gateway's URL when it routes by ``policy``, else one more SMG over the same workers (started
        in about a second, stopped on leaving)."""
        if self.policy == policy:
            yield self.url
            return
        name, port = f"{self.name}-gateway-{policy}", engine_script.free_port()
        _, process, url = engine_script.spawn(name, engine_script.launch_gateway(port, self.workers, policy), {}, port)
        try:
            engine_script.wait_gateway(name, process, url, len(self.workers))
            yield url
        finally:
            engine_script.stop(name)


def engines_py(*args: str) -> str:
    done = subprocess.run([sys.executable, str(ENGINES_PY), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"engines.py {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout.strip()


def report(results: list[Result], sessions: int, turns: int) -> int:
    trees = [r.tree for r in results if r.tree is not None]
    print(
        f"{'policy':<14}{'hit ratio':>10}{'prefill':>9}{'p50 s':>7}{'run s':>7}{'mispredicted':>13}{'moved':>6}"
        f"{'turns/worker':>13}{'MCTS prefill':>13}{'vs bound':>9}{'MCTS workers':>13}"
    )
    for r in results:
        tree = "{:>13}{:>9}{:>13}".format("-", "-", "-")
        if r.tree is not None:
            acc = r.tree.account()
            prefill = acc.server_prefill or 0
            tree = f"{prefill:>13,}{prefill / acc.lower_bound:>8.2f}x{len(r.tree_workers):>13}"
        print(
            f"{r.policy.name:<14}{r.hit_ratio:>10.3f}{r.prefill:>9,}{r.p50:>7.2f}{r.seconds:>7.1f}"
            f"{len(r.mispredicted):>13}{r.moved:>6}{r.split:>13}{tree}"
        )
    if trees:
        first = trees[0].account()
        print(
            f"MCTS: {len(trees[0].nodes)} nodes, {first.requests} requests, lower bound {first.lower_bound:,} "
            f"of {first.unique_tokens:,} unique prompt tokens; the same tree under every policy: "
            f"{all(single_server.shape(tree) == single_server.shape(trees[0]) for tree in trees)}"
        )
    else:
        print("MCTS: not run (it forks on SGLang's /generate; these workers are vLLM's)")
    for r in results:
        for t in r.mispredicted[:3]:
            print(
                f"  {r.policy.name} mispredicted: {t.session} turn {t.turn} on {t.worker}: predicted "
                f"{t.predicted_cached}/{t.predicted_prompt_tokens}, reported {t.reported_cached}/"
                f"{t.reported_prompt_tokens} ({t.cause}: {t.detail or t.prediction_error or t.error})"
            )
    by = {r.policy.name: r for r in results}
    keys, aware, robin = by["routing keys"], by["cache_aware"], by["round_robin"]
    checks = [
        (
            "every turn recorded, predicted == reported, under every policy",
            all(len(r.turns) == sessions * turns and not r.mispredicted for r in results),
        ),
        ("routing keys' hit ratio >= cache_aware's", keys.hit_ratio >= aware.hit_ratio),
        (
            f"routing keys' uncached tokens <= {KEYS_OVER_ROUND_ROBIN:.2f} x round_robin's",
            keys.prefill <= KEYS_OVER_ROUND_ROBIN * robin.prefill,
        ),
    ]
    if keys.tree is not None:
        bound = keys.tree.account()
        checks.append(
            (
                "MCTS prefill under routing keys <= 1.1 x lower bound",
                (bound.server_prefill or 0) <= 1.1 * bound.lower_bound,
            )
        )
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    return 0 if all(ok for _, ok in checks) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument(
        "--kv-pool", type=int, default=32768, help="each worker's KV pool in tokens, when this run starts the cluster"
    )
    parser.add_argument(
        "--no-kv-events",
        action="store_true",
        help="model each worker's evictions instead of reading its KV events (the pool must then hold the working set)",
    )
    parser.add_argument(
        "--cluster", choices=engine_script.CLUSTERS, default="cluster", help="cluster-vllm: vLLM workers, no MCTS"
    )
    args = parser.parse_args()
    started = Running.read(args.cluster) is None
    if started:
        engines_py("install", args.cluster)
        start = ("--workers", "2", "--policy", "consistent_hashing", "--kv-pool", str(args.kv_pool))
        engines_py("start", args.cluster, *start)
    cluster = Running.read(args.cluster) or sys.exit(f"the cluster did not start: see engines.py status {args.cluster}")
    requests = workload(args.sessions, args.turns)
    results = []
    try:
        for policy in POLICIES:
            for worker in cluster.workers:  # each policy from empty caches, as a fresh client-side model assumes
                engine_script.empty_cache(cluster.engine, worker)
            with cluster.gateway(policy.gateway) as url:
                events = {} if args.no_kv_events else cluster.events
                results.append(asyncio.run(one_policy(url, cluster, policy, requests, events)))
    finally:
        if started:
            engines_py("stop", args.cluster)
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    print(
        f"{args.sessions} concurrent drifting sessions x {args.turns} turns"
        f"{' + one MCTS (b=3, d=3)' if cluster.engine == 'sglang' else ''}, through SMG over "
        f"{len(cluster.workers)} {cluster.engine} workers (KV pool {cluster.kv_pool} tokens each, KV events "
        f"{'off' if args.no_kv_events or not cluster.events else 'read'}); load average {load}"
    )
    return report(results, args.sessions, args.turns)


if __name__ == "__main__":
    raise SystemExit(main())
