"""An ``sgl.function`` Tree-of-Thoughts on the SGLang engine, the frontend alone against agentcache, in one run.

Run: ``python bench/sglang_frontend.py [SGLANG_URL] [--rounds N]``. The frontend needs the torch-bearing sglang
package, so the script re-runs itself on the SGLang engine's venv when this interpreter lacks it; without a URL it
starts (or reuses) the project's CPU engine with ``scripts/engines/engines.py``.

The program: a system prompt listing 3 tools (about 1,500 tokens), a question, then ``fork(4)``, branches of 8 new
tokens at temperature 0, in two shapes: ``flat`` (one level: the 4 branches run concurrently) and ``nested`` (each
branch forks 4 more: 20 branches). Two endpoints, each round from a flushed cache, in alternation:

- ``frontend``: ``CacheAwareEndpoint(prime_forks=False)``: the requests a plain ``RuntimeEndpoint`` sends,
  counted by the same reports;
- ``agentcache``: ``CacheAwareEndpoint()``: every fork primed.

Both send the text as the program wrote it (the endpoint's default).

Server prefill is ``prompt_tokens - cached_tokens`` summed over every request, as the server reported it.
Target: every branch of the agentcache run finds its whole fork prefix cached. Exits 1 when it does not.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

import sglang_engine

ROOT = sglang_engine.ROOT
WIDTH = 4
SHAPES = {"flat": 1, "nested": 2}


def rerun_on_engine_venv(url: str, rounds: int) -> int:
    """This script again, on the engine's interpreter, with the repository importable."""
    engine_script = sglang_engine.local_engine().engine_script
    paths = [str(ROOT), str(ROOT / "integrations"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    argv = [str(engine_script.Venv("sglang").python), __file__, url, "--rounds", str(rounds)]
    return subprocess.run(argv, env=env, check=False).returncode


def bench(url: str, rounds: int) -> int:
    import sglang as sgl
    import workload  # beside this script, so importable on either interpreter

    from agentcache_sglang import CacheAwareEndpoint

    system = "You can call these tools:\n" + json.dumps(workload.tools(3)) + "\n"
    greedy = {"max_tokens": 8, "temperature": 0}

    def expand(s: Any, depth: int) -> None:
        if depth == 0:
            return
        branches = s.fork(WIDTH)
        for i, branch in enumerate(branches):
            branch += f"Idea {i + 1}: " + sgl.gen("idea", **greedy) + "\n"
            expand(branch, depth - 1)
        branches.join()

    @sgl.function
    def tree(s: Any, depth: int) -> None:
        s += sgl.system(system)
        s += sgl.user("Which tools would you combine to plan a three-day trip on a budget, and in what order?")
        s += sgl.assistant_begin()
        s += "\n"
        expand(s, depth)

    endpoints = {
        "frontend": CacheAwareEndpoint(url, prime_forks=False),
        "agentcache": CacheAwareEndpoint(url),
    }
    uncovered = 0
    for shape, depth in SHAPES.items():
        results: dict[str, list[dict[str, float]]] = {name: [] for name in endpoints}
        for _ in range(rounds):
            for name, endpoint in endpoints.items():
                endpoint.flush_cache()
                endpoint.reset()
                start = time.perf_counter()
                state = tree.run(depth=depth, backend=endpoint)
                seconds = time.perf_counter() - start
                if state.error() is not None:  # the frontend turns a failed request into a warning
                    raise RuntimeError(f"the program failed on {name}: {state.error()}")
                calls = endpoint.calls
                results[name].append(
                    {
                        "requests": len(calls),
                        "prompt": sum(c.prompt_tokens for c in calls),
                        "prefill": sum(c.prompt_tokens - c.cached_tokens for c in calls),
                        "seconds": seconds,
                    }
                )
                if name == "agentcache":
                    uncovered += sum(len(f.branches) - f.covered for f in endpoint.forks)
        forks = endpoints["agentcache"].forks
        print(
            f"\n{shape}: fork({WIDTH}) {depth} level(s) deep, {rounds} rounds; root prefix {forks[0].prefix_tokens} "
            f"tokens; {len(forks)} forks, {sum(len(f.branches) for f in forks)} branches"
        )
        header = f"{'endpoint':<11} {'requests':>8} {'prompt tokens':>13} {'server prefill (min-max)':>25}"
        print(f"{header} {'wall s p50':>10}")
        for name, rows in results.items():
            prefill = [r["prefill"] for r in rows]
            print(
                f"{name:<11} {rows[0]['requests']:>8.0f} {rows[0]['prompt']:>13,.0f} "
                f"{f'{min(prefill):,.0f}-{max(prefill):,.0f}':>25} "
                f"{statistics.median(r['seconds'] for r in rows):>10.2f}"
            )
        frontend = statistics.median(r["prefill"] for r in results["frontend"])
        agentcache = statistics.median(r["prefill"] for r in results["agentcache"])
        print(f"prefill, frontend over agentcache (medians): {frontend / agentcache:.2f}x")
    if uncovered:
        print(f"MISSED: {uncovered} agentcache branches did not find their whole fork prefix cached")
        return 1
    return 0


def main() -> int:
    args = sglang_engine.arguments(__doc__, rounds=3).parse_args()
    try:
        import sglang  # noqa: F401
    except ImportError:
        if args.url is not None:
            sglang_engine.local_engine().engines("install", "sglang")  # the frontend comes from the engine's venv
        return rerun_on_engine_venv(sglang_engine.url(args.url), args.rounds)
    return bench(sglang_engine.url(args.url), args.rounds)


if __name__ == "__main__":
    sys.exit(main())
