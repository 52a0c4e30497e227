"""Canonicalization cost against ``json.dumps(request, sort_keys=True)`` on the same input, in one run.

Run: ``python bench/canon.py``. Targets (issue 2): warm >= 10x faster than the baseline and warm p50 <= 0.25 ms;
cold <= 2x the baseline. Exits 1 when a target is missed.
"""

from __future__ import annotations

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


def timed(run: Callable[[Any], object], inputs: list[Any]) -> list[float]:
    """Seconds per call, each call on its own fresh copy (agents rebuild their request every turn)."""
    out = []
    for item in inputs:
        start = time.perf_counter()
        run(item)
        out.append(time.perf_counter() - start)
    return out


def main() -> int:
    request = workload.request()
    encoder = get_tokenizer("o200k_base")
    schema_tokens = encoder.count(json.dumps(request["tools"]))
    body = orjson.dumps(request)
    rounds = 300
    fresh = [orjson.loads(body) for _ in range(rounds)]
    policy = CanonicalPolicy()
    canonicalize(request)  # warm the memo with the same content, as turn 1 of a session would
    baseline = timed(lambda r: json.dumps(r, sort_keys=True), fresh)
    cold = timed(lambda r: Canonicalizer(policy).canonicalize(r), fresh)
    warm = timed(canonicalize, fresh)
    # A new turn: same tools, history one message longer than anything seen.
    grown = [{**r, "messages": [*r["messages"], {"role": "user", "content": f"turn {i}"}]} for i, r in enumerate(fresh)]
    next_turn = timed(canonicalize, grown)

    def ms(xs: list[float]) -> float:
        return statistics.median(xs) * 1e3

    base = ms(baseline)
    print(
        f"request: {len(request['tools'])} tools ({schema_tokens:,} o200k tokens of schemas), "
        f"{len(request['messages'])} messages, {len(body):,} bytes; {rounds} fresh copies per case"
    )
    print(f"{'case':<34}{'p50 ms':>10}{'vs baseline':>14}")
    rows = [
        ("json.dumps(sort_keys=True) baseline", base),
        ("canonicalize cold (empty memo)", ms(cold)),
        ("canonicalize warm (same request)", ms(warm)),
        ("canonicalize next turn (+1 message)", ms(next_turn)),
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
