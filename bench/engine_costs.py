"""What a prefilled token and a decode step cost on the SGLang engine, against a one-token request, in one run.

Run: ``python bench/engine_costs.py [SGLANG_URL] [--rounds N]``. Without a URL it starts (or reuses) the project's
CPU engine with ``scripts/engines/engines.py`` (installing it the first time).

The ratio of the two decides how much of a cache hit shows in wall time: prefix caching saves prefill, so where a
decode step costs as much as hundreds of prefilled tokens, a run that saves thousands of prefill tokens but decodes
as much as before is barely faster (see docs/benchmarks.md, bench/mcts.py). Every request runs under a fresh cache
salt, so nothing is cached; the rounds interleave the shapes, so load on the machine hits them alike.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid

import sglang_engine

from agentcache.backends import SGLangClient

SHORT, LONG, STEPS = 10, 1500, 8
SHAPES = {"baseline": (SHORT, 1), "prefill": (LONG, 1), "decode": (SHORT, 1 + STEPS)}
"""(prompt tokens, new tokens): the baseline request, one with more prompt, one with more decode steps."""


def bench(url: str, rounds: int) -> int:
    rng = random.Random(0)
    times: dict[str, list[float]] = {name: [] for name in SHAPES}
    with SGLangClient(url) as client:
        for _ in range(rounds):
            for name, (prompt, new) in SHAPES.items():
                ids = [rng.randrange(1000, 100_000) for _ in range(prompt)]
                params = {"max_new_tokens": new, "temperature": 0, "ignore_eos": True}
                start = time.perf_counter()
                answer = client.generate(input_ids=ids, sampling_params=params, cache_salt=uuid.uuid4().hex)
                times[name].append(time.perf_counter() - start)
                if answer.cached_tokens != 0 or len(answer.output_ids) != new:
                    print(f"FAIL  {name}: cached {answer.cached_tokens}, {len(answer.output_ids)} new tokens")
                    return 1
    base, prefill, decode = (statistics.median(times[name]) * 1e3 for name in SHAPES)
    per_token = (prefill - base) / (LONG - SHORT)
    per_step = (decode - base) / STEPS
    if per_token <= 0 or per_step <= 0:
        print(f"FAIL  no cost above the baseline's noise (per token {per_token:.4f} ms, per step {per_step:.2f} ms)")
        return 1
    print(f"SGLang at {url}; {rounds} rounds, medians, nothing cached")
    rows = [
        (f"baseline request ({SHORT} prompt tokens, 1 new)", base, ""),
        (f"{LONG} prompt tokens, 1 new", prefill, f"{per_token:.3f} ms per prefilled token"),
        (f"{SHORT} prompt tokens, {1 + STEPS} new", decode, f"{per_step:.1f} ms per decode step"),
    ]
    for label, ms, cost in rows:
        print(f"{label:<45}{ms:8.1f} ms  {cost}")
    print(f"one decode step costs as much as {per_step / per_token:,.0f} prefilled tokens")
    return 0


def main() -> int:
    args = sglang_engine.arguments(__doc__, rounds=9).parse_args()
    return bench(sglang_engine.url(args.url), args.rounds)


if __name__ == "__main__":
    raise SystemExit(main())
