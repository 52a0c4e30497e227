"""``sgl.function`` programs run against the real SGLang engine, for ``test_sglang_frontend.py``.

The frontend needs the torch-bearing ``sglang`` package, which lives in the engine's own venv, so the test runs
this file there (``EngineInfo.python``) with the repository on ``PYTHONPATH`` and reads one JSON document from
its standard output: the figures every scenario measured, as the server reported them.

Run by hand: ``python tests/integrations/sglang_programs.py URL``.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from typing import Any

import sglang as sgl
from sglang.lang.backend.runtime_endpoint import RuntimeEndpoint

from agentcache.canon import CanonicalPolicy
from agentcache_sglang import CacheAwareEndpoint

QUESTION = "How do I sort 10 GB of integers with 1 GB of RAM?"
GREEDY = {"max_tokens": 4, "temperature": 0}


@sgl.function
def tree(s: Any, system: str, width: int, depth: int) -> list[dict[str, Any]]:
    """Tree-of-Thoughts in miniature: each state forks ``width`` numbered approaches, ``depth`` levels deep.
    Returns every step's text and the counts the frontend itself kept (``get_meta_info``)."""
    s += sgl.system(system)
    s += sgl.user(QUESTION)
    s += sgl.assistant_begin()
    s += "\n"  # each prefix ends at a token boundary: a branch's first token cannot merge with the prefix's last
    return expand(s, width, depth, "")


def expand(s: Any, width: int, depth: int, path: str) -> list[dict[str, Any]]:
    if depth == 0:
        return []
    steps: list[dict[str, Any]] = []
    branches = s.fork(width)
    for i, branch in enumerate(branches):
        label = f"{path}{i + 1}."
        # Siblings differ from their first token on, so none can find another's tokens cached, however the
        # server schedules them: each finds exactly the prefix.
        branch += f"{i + 1}. Approach " + sgl.gen(f"step{label}", **GREEDY) + "\n"
        steps += expand(branch, width, depth - 1, label)
    branches.join()
    for i, branch in enumerate(branches):
        name = f"step{path}{i + 1}."
        steps.append({"label": name[4:], "text": branch[name], "cached": branch.get_meta_info(name)["cached_tokens"]})
    return steps


@sgl.function
def split(s: Any, width: int) -> None:
    """A fork whose branches start with a newline after a colon: o200k's pre-tokenizer joins the two, so the
    prefix's last token is not the branches' token there."""
    s += "Options for sorting 10 GB of integers with 1 GB of RAM:"
    branches = s.fork(width)
    for i, branch in enumerate(branches):
        branch += f"\n{i + 1}. " + sgl.gen("option", **GREEDY)
    branches.join()


@sgl.function
def choose(s: Any, width: int) -> None:
    """Branches that each pick an option by likelihood (``select``) instead of generating."""
    s += sgl.system("You are a careful planner.")
    s += sgl.user(QUESTION)
    branches = s.fork(width)
    for i, branch in enumerate(branches):
        branch += f"{i + 1}. Plan uses " + sgl.select("method", choices=["merge sort", "a heap", "buckets"])
    branches.join()


def figures(endpoint: CacheAwareEndpoint) -> dict[str, Any]:
    return {
        "calls": [dataclasses.asdict(call) for call in endpoint.calls],
        "forks": [
            {**dataclasses.asdict(fork), "covered": fork.covered, "prefill_saved": fork.prefill_saved}
            for fork in endpoint.forks
        ],
    }


def run(endpoint: RuntimeEndpoint, program: Any, **arguments: Any) -> dict[str, Any]:
    """One program run from an empty server cache unless told otherwise; figures from the endpoint's reports."""
    if isinstance(endpoint, CacheAwareEndpoint):
        endpoint.reset()
    state = program.run(backend=endpoint, **arguments)
    if arguments.get("stream"):  # the program runs in a thread; its text ends when it returns
        "".join(state.text_iter())
    return {"steps": state.ret_value, **(figures(endpoint) if isinstance(endpoint, CacheAwareEndpoint) else {})}


def split_tokens(endpoint: CacheAwareEndpoint) -> dict[str, list[int]]:
    """The model's own tokenization of ``split``'s prefix and of its branches' prompts, for the test to derive how
    much a branch can match."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(f"{endpoint.get_model_name()}/tokenizer.json")
    prefix = "Options for sorting 10 GB of integers with 1 GB of RAM:"
    texts = {"prefix": prefix, "branch 1": prefix + "\n1. ", "branch 2": prefix + "\n2. "}
    return {name: tokenizer.encode(text).ids for name, text in texts.items()}


def main(url: str) -> None:
    aware = CacheAwareEndpoint(url)
    normalizing = CacheAwareEndpoint(url, policy=CanonicalPolicy())
    plain = RuntimeEndpoint(url)
    lf, crlf = "You are a careful planner.\nThink step by step.", "You are a careful planner.\r\nThink step by step."
    stamped = "You are a careful planner. Now: 2026-11-30T07:{:02d}:00Z."
    out: dict[str, Any] = {}

    aware.flush_cache()
    out["fork"] = run(aware, tree, system=lf, width=3, depth=1)
    out["fork_again"] = run(aware, tree, system=lf, width=3, depth=1)

    aware.flush_cache()
    out["plain"] = run(plain, tree, system=lf, width=3, depth=1)

    aware.flush_cache()
    out["nested"] = run(aware, tree, system=lf, width=2, depth=2)

    aware.flush_cache()
    out["reporting_only"] = run(CacheAwareEndpoint(url, prime_forks=False), tree, system=lf, width=2, depth=2)

    aware.flush_cache()
    out["stream"] = run(aware, tree, system=lf, width=3, depth=1, stream=True)

    for name, endpoint in (("canonical", normalizing), ("as_sent", aware)):
        aware.flush_cache()
        run(endpoint, tree, system=lf, width=2, depth=1)
        out[name] = run(endpoint, tree, system=crlf, width=2, depth=1)

    aware.flush_cache()
    run(aware, tree, system=stamped.format(1), width=2, depth=1)
    out["volatile"] = run(aware, tree, system=stamped.format(2), width=2, depth=1)

    aware.flush_cache()
    out["select"] = run(aware, choose, width=3)

    aware.flush_cache()
    out["split"] = run(aware, split, width=2)
    out["split"]["tokens"] = split_tokens(aware)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
