"""A small MCTS whose expansions fork on SGLang, printed as a tree with each node's cache report.

Run: ``python examples/mcts_forked.py [SGLANG_URL] [--judge number|yes-no] [--dot FILE] [--json FILE]``.
Without a URL it starts (or reuses) the project's CPU engine via ``scripts/engines/engines.py start sglang``. The
test engine's model has random weights, so the steps are gibberish; the cache figures are what the example is
about.

``--judge`` scores states by asking the model instead of the default user function, which prefers plans that keep
saying something new: ``number`` parses a 0-10 rating (agentcache.search.ModelJudge), ``yes-no`` reads the model's
probability of answering Yes rather than No (agentcache.search.ProbabilityJudge).
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from pathlib import Path

from agentcache.backends import AsyncSGLangClient
from agentcache.fork import branch_markers
from agentcache.search import (
    MCTS,
    Budget,
    Evaluate,
    ForkProposer,
    ModelJudge,
    ProbabilityJudge,
    SearchNode,
    SearchTree,
)

PROBLEM = (
    "Plan a three-day trip to Lisbon for two people on a budget of 900 euros. Each step adds one decision "
    "(where to sleep, what to see, how to get around) and its cost.\nStep:"
)


def variety(node: SearchNode) -> float:
    """A user evaluation: the share of distinct tokens among everything the model wrote on the way to this state,
    so plans that keep repeating themselves score low."""
    written = [token for step in node.path() if step.branch is not None for token in step.branch.output]
    return len(set(written)) / len(written) if written else 0.0


def show(tree: SearchTree) -> None:
    best = {node.id for node in tree.best.path()}

    def line(node: SearchNode, indent: str) -> None:
        mark = "*" if node.id in best else " "
        if node.branch is None:
            primed = node.primed
            cache = "" if primed is None else f"primed: prefilled {primed.prefilled}"
            print(f"{mark} #{node.id} root, {len(node.state)} tokens  {cache}")
        else:
            ex = node.branch.exchange
            print(
                f"{mark} {indent}#{node.id} {node.text[:28]!r:<32} prompt {ex.prompt_tokens:>4} cached "
                f"{ex.cached_tokens:>4} prefilled {ex.prefilled:>2}  score {node.score:.2f} visits {node.visits}"
            )
        for child in node.children:
            line(child, indent + "  ")

    line(tree.root, "")
    acc = tree.account()
    print(
        f"\nserver prefill {acc.server_prefill} tokens; lower bound {acc.lower_bound}; naive (every prompt sent "
        f"alone) {acc.naive_prefill}, {acc.naive_over_server or 0:.1f}x more; {tree.elapsed():.2f} s"
    )


async def main(url: str, judge: str | None, dot: Path | None, json_path: Path | None) -> None:
    async with AsyncSGLangClient(url) as client:
        salt = f"example-{uuid.uuid4().hex}"  # a fresh cache namespace, so the figures are this run's alone
        root = await client.tokenize(PROBLEM)
        markers = await branch_markers(client, 3)
        # A frequency penalty makes greedy decoding avoid repeating itself; it stays deterministic.
        params = {"max_new_tokens": 8, "temperature": 0, "frequency_penalty": 1.0}
        proposer = ForkProposer(client, markers, params, cache_salt=salt)
        evaluate: Evaluate = variety
        if judge == "number":
            evaluate = ModelJudge(client, await client.tokenize("\nScore this plan from 0 to 10:"), cache_salt=salt)
        elif judge == "yes-no":
            question = await client.tokenize("\nIs this plan within budget? Answer Yes or No:")
            (yes,), (no,) = await client.tokenize(" Yes"), await client.tokenize(" No")  # one token each
            evaluate = ProbabilityJudge(client, question, [yes], [no], cache_salt=salt)
        search = MCTS(proposer, evaluate, branching=3, max_depth=3, budget=Budget(nodes=22), seed=0)
        tree = await search.run(root)
    show(tree)
    if dot is not None:
        dot.write_text(tree.to_dot())
    if json_path is not None:
        json_path.write_text(tree.to_json())


if __name__ == "__main__":
    from local_engine import start

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?")
    parser.add_argument("--judge", choices=["number", "yes-no"], help="let the model score each state")
    parser.add_argument("--dot", type=Path, help="write the tree as Graphviz DOT")
    parser.add_argument("--json", type=Path, help="write the tree as JSON")
    args = parser.parse_args()
    asyncio.run(main(args.url or start("sglang"), args.judge, args.dot, args.json))
