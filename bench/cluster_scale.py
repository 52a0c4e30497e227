"""How a cluster's hit ratio scales with its workers, per routing policy: a large agent trace replayed over N
client-side worker models (what ``agentcache simulate --workers N --route R`` runs), for N up to 32.

Run: ``python bench/cluster_scale.py [--sessions 128] [--turns 12] [--apps 4] [--capacity 65536]
[--workers 1,2,4,8,16,32]``.

The trace: ``--sessions`` agent sessions of ``--turns`` requests, interleaved as concurrent agents' are (each
round, the sessions that take a step go in a shuffled order). Each session belongs to one of ``--apps``
deployments, whose system prompt and tools (about 7,000 tokens) all its sessions share; each turn adds a tool call
and its result (about 490 tokens). Every worker has the same KV pool (``--capacity`` tokens, SGLang's radix
model), so a cluster of N workers holds N pools. The policies are those of agentcache.predict.routing:
``round_robin``, ``session`` (the routing keys agentcache sends, hashed to workers as SMG's ``consistent_hashing``
does) and ``cache_aware`` (the worker holding the longest prefix above SMG's 0.3 threshold, else the emptiest; it
sees each worker's cache exactly, and without load it never spills to another worker). The single-server row has
one pool of that size.

Prints, per policy and cluster size, the hit ratio, the prefill (uncached prompt tokens) and the requests each
worker served at most and at least (the balance).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import workload

from agentcache.cache.options import CacheOptions
from agentcache.drift.trace import Trace, TraceRecord
from agentcache.predict.prompt import PromptTokenizer
from agentcache.predict.replay import Replay
from agentcache.predict.routing import POLICIES, router
from agentcache.tokens import get_tokenizer


def build_trace(sessions: int, turns: int, apps: int, seed: int = 5) -> Trace:
    """The interleaved requests of every session (see the module's docstring)."""
    rng = random.Random(seed)
    systems = [
        f"You are the release agent of deployment {app}. "
        + " ".join(
            f"Rule {i}: check item {i * 7 + app} of the checklist and cite the file it touches." for i in range(80)
        )
        for app in range(apps)
    ]
    toolsets = [workload.tools(12, seed=200 + app) for app in range(apps)]
    histories = [workload.messages(1 + 3 * turns, seed=s) for s in range(sessions)]
    steps = [0] * sessions
    records: list[TraceRecord] = []
    while any(step < turns for step in steps):
        active = [s for s in range(sessions) if steps[s] < turns and rng.random() < 0.8]
        rng.shuffle(active)
        for s in active:
            steps[s] += 1
            app = s % apps
            # the app's system prompt, then the session's turns: each adds a tool call and its result
            messages = [{"role": "system", "content": systems[app]}, *histories[s][1 : 3 * steps[s] - 1]]
            request = {"model": "agent", "tools": toolsets[app], "messages": messages}
            records.append(TraceRecord(len(records) + 1, f"session-{s}", request))
    return Trace(records, [])


def replay_once(trace: Trace, capacity: int, route: str | None, workers: int) -> dict[str, Any]:
    replay = Replay(CacheOptions("sglang", capacity=capacity), PromptTokenizer(get_tokenizer("o200k_base")))
    chooser = None if route is None else router(route, workers)
    prompt = cached = 0
    served_by: dict[str | None, int] = {}
    for record in trace.records:
        worker = None if chooser is None else chooser.route(record, replay)
        served = replay.serve(record.request, record.ts, record.session, worker=worker)
        prompt, cached = prompt + served.prompt_tokens, cached + served.cached
        served_by[worker] = served_by.get(worker, 0) + 1
    counts = [served_by.get(w, 0) for w in ([None] if chooser is None else [f"worker-{i}" for i in range(workers)])]
    return {"hit_ratio": cached / prompt, "prefill": prompt - cached, "most": max(counts), "least": min(counts)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=128)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--apps", type=int, default=4)
    parser.add_argument("--capacity", type=int, default=65_536, help="each worker's KV pool, in tokens")
    parser.add_argument("--workers", default="1,2,4,8,16,32", help="cluster sizes, comma-separated")
    args = parser.parse_args()
    sizes = [int(n) for n in args.workers.split(",")]
    trace = build_trace(args.sessions, args.turns, args.apps)
    started = time.perf_counter()
    base = replay_once(trace, args.capacity, None, 1)
    prompt = base["prefill"] / (1 - base["hit_ratio"]) if base["hit_ratio"] < 1 else 0
    print(
        f"{len(trace.records):,} requests in {args.sessions} sessions of {args.turns} turns, {args.apps} deployments, "
        f"{prompt:,.0f} prompt tokens; each worker's pool {args.capacity:,} tokens"
    )
    print(f"{'policy':<14}{'workers':>8}{'hit ratio':>11}{'prefill':>14}{'vs 1 server':>13}{'most/least':>12}")
    print(f"{'one server':<14}{1:>8}{base['hit_ratio']:>11.1%}{base['prefill']:>14,}{1:>12.2f}x{'':>12}")
    for route in POLICIES:
        for size in sizes:
            row = replay_once(trace, args.capacity, route, size)
            balance = f"{row['most']}/{row['least']}"
            print(
                f"{route:<14}{size:>8}{row['hit_ratio']:>11.1%}{row['prefill']:>14,}"
                f"{row['prefill'] / base['prefill']:>12.2f}x{balance:>12}"
            )
    print(f"replayed in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
