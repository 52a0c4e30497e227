"""Canonicalization cost against ``json.dumps(request, sort_keys=True)`` on the same input, in one run.

Run: ``python bench/canon.py``. Targets (issue 2): warm >= 10x faster than the baseline and warm p50 <= 0.25 ms;
cold <= 2x the baseline. Exits 1 when a target is missed.
"""

from __future__ import annotations

import gc
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).parent))
import workload

from agentcache import canonicalize, get_tokenizer
from agentcache.canon import CanonicalPolicy
from agentcache.canon.request import Canonicalizer


def interleaved(cases: dict[str, Callable[[Any], object]], body: bytes, rounds: int) -> dict[str, list[float]]:
    """Seconds per call for each case. Each round parses a fresh copy of the body (agents rebuild their request
    every turn), then times every case on it in turn, so load on the machine hits all cases alike. The garbage
    collector is off while timing, as in ``timeit``: the copies are freed by reference counting."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    gc.disable()
    try:
        for _ in range(rounds):
            for name, run in cases.items():
                request = orjson.loads(body)
                start = time.perf_counter()
                run(request)
                times[name].append(time.perf_counter() - start)
    finally:
        gc.enable()
    return times


def main() -> int:
    request = workload.request()
    encoder = get_tokenizer("o200k_base")
    schema_tokens = encoder.count(json.dumps(request["tools"]))
    body = orjson.dumps(request)
    rounds = 300
    policy = CanonicalPolicy()
    canonicalize(request)  # warm the memo with the same content, as turn 1 of a session would
    turn = itertools.count()

    def next_turn(r: dict[str, Any]) -> object:
        return canonicalize({**r, "messages": [*r["messages"], {"role": "user", "content": f"turn {next(turn)}"}]})

    times = interleaved(
        {
            "baseline": lambda r: json.dumps(r, sort_keys=True),
            "cold": lambda r: Canonicalizer(policy).canonicalize(r),
            "warm": canonicalize,
            # Same tools, history one message longer than anything seen before (one message memo miss).
            "next": next_turn,
        },
        body,
        rounds,
    )
    baseline, cold, warm, grown = times["baseline"], times["cold"], times["warm"], times["next"]

    def ms(xs: list[float]) -> float:
        return statistics.median(xs) * 1e3

    base = ms(baseline)
    print(
        f"request: {len(request['tools'])} tools ({schema_tokens:,} o200k tokens of schemas), "
        f"{len(request['messages'])} messages, {len(body):,} bytes; {rounds} rounds, a fresh copy per call"
    )
    print(f"{'case':<34}{'p50 ms':>10}{'vs baseline':>14}")
    rows = [
        ("json.dumps(sort_keys=True) baseline", base),
        ("canonicalize cold (empty memo)", ms(cold)),
        ("canonicalize warm (same request)", ms(warm)),
        ("canonicalize next turn (+1 message)", ms(grown)),
    ]
    for name, value in rows:
        print(f"{name:<34}{value:>10.3f}{base / value:>13.1f}x")
    checks = [
        ("schemas >= 20k tokens", schema_tokens >= 20_000),
        ("warm >= 10x faster than baseline", base / ms(warm) >= 10),
        ("warm p50 <= 0.25 ms", ms(warm) <= 0.25),
        ("cold <= 2x baseline", ms(cold) <= 2 * base),
    ]
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
