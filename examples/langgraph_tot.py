"""Tree-of-Thoughts as a LangGraph graph whose branches fan out with ``Send`` and fork through agentcache on SGLang.

Each level, the ``prime`` node puts every frontier state into SGLang's radix cache once (``prime_fork``); a
conditional edge then sends one ``branch`` task per child (``Send``), each continuing its parent's primed prefix
(``send_branch``), so siblings prefill only their own tokens however LangGraph schedules them. A reducer gathers
the branches, and ``select`` grows the search tree, scores the children and keeps the best ``beam`` of them for
the next level. The tree is agentcache's ``SearchTree``: the same accounting, JSON and DOT as ``MCTS``.

Run: ``python examples/langgraph_tot.py [SGLANG_URL] [--naive] [--dot FILE]``. Without a URL it starts (or
reuses) the project's CPU engine. The test model has random weights: the thoughts are gibberish, the cache
figures are the point.
"""

from __future__ import annotations

import argparse
import asyncio
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from agentcache.backends import AsyncSGLangClient
from agentcache.fork import Branch, ForkPlan, ForkResult, State, branch_markers, gather_all, prime_fork, send_branch
from agentcache.search import SearchNode, SearchTree

PROBLEM = "Design a cache for an agent that re-sends its whole history every turn. Each step adds one idea.\nStep:"


def gathered(old: list[tuple[int, Branch]], new: list[tuple[int, Branch]] | None) -> list[tuple[int, Branch]]:
    """The ``branches`` reducer: each ``branch`` task adds its result; ``None`` (from ``prime``) starts a level."""
    return [] if new is None else old + new


class ToT(TypedDict):
    tree: SearchTree
    """Grown in place by ``select``: the graph runs without a checkpointer, so state is never serialized."""
    frontier: list[int]
    """Ids of the nodes to expand at this level."""
    plans: list[tuple[int, ForkPlan]]
    branches: Annotated[list[tuple[int, Branch]], gathered]


class BranchTask(TypedDict):
    """What one ``Send`` carries: a primed fork and which of its branches to run."""

    node: int
    plan: ForkPlan
    index: int


def distinct_share(node: SearchNode) -> float:
    """A user evaluation: the share of distinct tokens in what the model wrote at this step."""
    output = node.branch.output if node.branch is not None else ()
    return len(set(output)) / len(output) if output else 0.0


def build(
    client: AsyncSGLangClient,
    markers: Sequence[State],
    sampling_params: Mapping[str, Any],
    *,
    depth: int,
    beam: int,
    naive: bool = False,
    cache_salt: str | None = None,
) -> Any:
    """The compiled graph. ``naive`` sends every branch alone under a fresh cache salt, unprimed: the baseline."""
    width = len(markers)

    async def prime(state: ToT) -> dict[str, Any]:
        tree = state["tree"]
        plans = await gather_all(
            prime_fork(
                client,
                tree.nodes[node].state,
                width,
                sampling_params,
                markers=markers,
                prime=not naive,
                isolate=naive,
                cache_salt=cache_salt,
            )
            for node in state["frontier"]
        )
        return {"plans": list(zip(state["frontier"], plans, strict=True)), "branches": None}

    def fan_out(state: ToT) -> list[Send]:
        """One ``branch`` task per child of every primed state."""
        plans = state["plans"]
        return [Send("branch", BranchTask(node=n, plan=plan, index=i)) for n, plan in plans for i in range(plan.n)]

    async def branch(state: BranchTask) -> dict[str, Any]:
        return {"branches": [(state["node"], await send_branch(client, state["plan"], state["index"]))]}

    async def select(state: ToT) -> dict[str, Any]:
        tree, children = state["tree"], []
        for node, plan in state["plans"]:
            got = sorted((b for n, b in state["branches"] if n == node), key=lambda b: b.index)
            children += tree.grow(tree.nodes[node], ForkResult(plan.prefix, plan.primed, tuple(got)), plan.n)
        await tree.score(children, distinct_share)
        ranked = sorted(children, key=lambda c: (-(c.score or 0.0), c.id))
        tree.best = ranked[0]  # the best of the deepest level reached, as TreeOfThoughts picks it
        return {"frontier": [c.id for c in ranked[:beam] if not c.finished]}

    def next_level(state: ToT) -> str:
        frontier = state["frontier"]
        return "prime" if frontier and state["tree"].nodes[frontier[0]].depth < depth else END

    graph = StateGraph(ToT)
    graph.add_node("prime", prime)
    graph.add_node("branch", branch, input_schema=BranchTask)
    graph.add_node("select", select)
    graph.add_edge(START, "prime")
    graph.add_conditional_edges("prime", fan_out, ["branch"])
    graph.add_edge("branch", "select")
    graph.add_conditional_edges("select", next_level, ["prime", END])
    return graph.compile()


async def search(
    url: str, *, width: int = 3, depth: int = 2, beam: int = 2, naive: bool = False
) -> tuple[SearchTree, list[str]]:
    """Run the graph from ``PROBLEM``; the tree, and the node names LangGraph ran, in order."""
    async with AsyncSGLangClient(url) as client:
        salt = f"example-{uuid.uuid4().hex}"  # a fresh cache namespace, so the figures are this run's alone
        root = await client.tokenize(PROBLEM)
        markers = await branch_markers(client, width)
        params = {"max_new_tokens": 8, "temperature": 0, "frequency_penalty": 1.0}
        graph = build(client, markers, params, depth=depth, beam=beam, naive=naive, cache_salt=salt)
        tree = SearchTree(root)
        ran: list[str] = []
        initial: ToT = {"tree": tree, "frontier": [0], "plans": [], "branches": []}
        async for update in graph.astream(initial, stream_mode="updates"):
            ran += list(update)
        tree.stop(tree.best)
    return tree, ran


def show(tree: SearchTree, ran: Sequence[str]) -> None:
    best = {node.id for node in tree.best.path()}
    for node in tree.nodes[1:]:
        assert node.branch is not None and node.parent is not None
        ex = node.branch.exchange
        print(
            f"{'*' if node.id in best else ' '} {'  ' * node.depth}#{node.id} (of #{node.parent.id}) "
            f"{node.text[:24]!r:<28} prompt "
            f"{ex.prompt_tokens:>3} cached {ex.cached_tokens:>3} prefilled {ex.prefilled:>2}  score {node.score:.2f}"
        )
    acc = tree.account()
    steps = {name: ran.count(name) for name in dict.fromkeys(ran)}
    print(
        f"\nLangGraph tasks {steps}; server prefill {acc.server_prefill} tokens, lower bound {acc.lower_bound}, "
        f"naive (every prompt alone) {acc.naive_prefill}; {tree.elapsed():.2f} s"
    )


if __name__ == "__main__":
    from local_engine import start

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", help="a running SGLang server (default: start the project's CPU engine)")
    parser.add_argument("--naive", action="store_true", help="send every branch alone, unprimed and unshared")
    parser.add_argument("--dot", type=Path, help="write the tree as Graphviz DOT")
    args = parser.parse_args()
    tree, ran = asyncio.run(search(args.url or start("sglang"), naive=args.naive))
    show(tree, ran)
    if args.dot is not None:
        args.dot.write_text(tree.to_dot())
