"""Tree-of-Thoughts as a LangGraph graph whose branches fan out with ``Send`` and fork through agentcache on SGLang.

Each level, the ``prime`` node puts every frontier state into SGLang's radix cache once (``prime_fork``); a
conditional edge then sends one ``branch`` task per child (``Send``), each continuing its parent's primed prefix
(``send_branch``), so siblings prefill only their own tokens however LangGraph schedules them. A reducer gathers
the branches, and ``select`` grows the search tree, scores the children and keeps the best ``beam`` of them for
the next level. The tree is agentcache's ``SearchTree``: the same accounting, JSON and DOT as ``MCTS``.

The graph state is plain data (``ForkPlan.to_dict()``, ``Branch.to_dict()``, ids and scores), so the graph runs
under a checkpointer: each ``select`` rebuilds the tree from what the state recorded, and so does the caller at the
end. The example compiles it with LangGraph's ``InMemorySaver``; any other saver takes the same state.

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

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from agentcache.backends import AsyncSGLangClient
from agentcache.fork import (
    Branch,
    Exchange,
    ForkPlan,
    ForkResult,
    State,
    branch_markers,
    prime_fork,
    send_branch,
)
from agentcache.search import SearchNode, SearchTree, ranked
from agentcache.search.fork import gather_all

PROBLEM = "Design a cache for an agent that re-sends its whole history every turn. Each step adds one idea.\nStep:"


Record = dict[str, Any]
"""Plain data that a checkpointer stores as it is: lists, numbers, strings."""


def gathered(old: list[Record], new: list[Record] | None) -> list[Record]:
    """The ``branches`` reducer: each ``branch`` task adds its result; ``None`` (from ``prime``) starts a level."""
    return [] if new is None else old + new


class ToT(TypedDict):
    root: list[int]
    grown: list[Record]
    """One record per expanded state, in the order they were grown: ``node``, ``plan`` (``ForkPlan.to_dict()``),
    ``branches`` (``Branch.to_dict()`` each, in branch order), the children's ``scores`` and ``judges`` (a model
    judge's request as ``Exchange.to_dict()``, else null)."""
    frontier: list[int]
    """Ids of the nodes to expand at this level."""
    plans: list[Record]
    """``node`` and ``plan`` for every state of the frontier, primed."""
    branches: Annotated[list[Record], gathered]
    """``node`` and ``branch``, one per ``branch`` task of this level."""


class BranchTask(TypedDict):
    """What one ``Send`` carries: a primed fork and which of its branches to run."""

    node: int
    plan: Record
    index: int


def recorded(record: Record, children: Sequence[SearchNode]) -> Record:
    """A level's record completed with what scoring its children gave: scores, and judges' requests."""
    judges = [None if child.judge is None else child.judge.to_dict() for child in children]
    return {**record, "scores": [child.score for child in children], "judges": judges}


def grow(tree: SearchTree, node: int, plan: Record, branches: Sequence[Record]) -> list[SearchNode]:
    """Add the children that a fork of ``node`` (its plain plan and branches, in branch order) produced."""
    fork = ForkPlan.from_dict(plan)
    result = ForkResult(fork.prefix, fork.primed, tuple(Branch.from_dict(branch) for branch in branches))
    return tree.grow(tree.nodes[node], result, fork.n)


def replay(root: Sequence[int], grown: Sequence[Record], tree: SearchTree | None = None) -> SearchTree:
    """The search tree the records describe, grown on ``tree`` (a bare root) or a new one, with each child's score
    and the request of a model judge, if one scored it."""
    if tree is None:
        tree = SearchTree(root)
    if len(tree.nodes) != 1 or list(tree.root.state) != list(root):
        raise ValueError("replay() grows a bare tree of this root")
    for record in grown:
        children = grow(tree, record["node"], record["plan"], record["branches"])
        for child, score, judge in zip(children, record["scores"], record["judges"], strict=True):
            child.score = score
            if judge is not None:
                child.judge = Exchange.from_dict(judge)
                tree.exchanges.append(child.judge)
    return tree


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
    pause: bool = False,
) -> Any:
    """The compiled graph. ``naive`` sends every branch alone under a fresh cache salt, unprimed: the baseline.
    ``pause`` stops the graph after each level, so that it goes on from its checkpoint."""
    width = len(markers)

    async def prime(state: ToT) -> dict[str, Any]:
        tree = replay(state["root"], state["grown"])
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
        planned = zip(state["frontier"], plans, strict=True)
        return {"plans": [{"node": node, "plan": plan.to_dict()} for node, plan in planned], "branches": None}

    def fan_out(state: ToT) -> list[Send]:
        """One ``branch`` task per child of every primed state."""
        return [
            Send("branch", BranchTask(node=p["node"], plan=p["plan"], index=i))
            for p in state["plans"]
            for i in range(len(p["plan"]["suffixes"]))
        ]

    async def branch(state: BranchTask) -> dict[str, Any]:
        got = await send_branch(client, ForkPlan.from_dict(state["plan"]), state["index"])
        return {"branches": [{"node": state["node"], "branch": got.to_dict()}]}

    async def select(state: ToT) -> dict[str, Any]:
        tree = replay(state["root"], state["grown"])
        level: list[tuple[Record, list[SearchNode]]] = []
        for planned in state["plans"]:
            mine = [b["branch"] for b in state["branches"] if b["node"] == planned["node"]]
            record = {**planned, "branches": sorted(mine, key=lambda b: b["index"])}
            level.append((record, grow(tree, record["node"], record["plan"], record["branches"])))
        children = [child for _, grew in level for child in grew]
        await tree.score(children, distinct_share)
        grown = [*state["grown"], *(recorded(record, grew) for record, grew in level)]
        frontier = [c.id for c in ranked(children)[:beam] if not c.finished]
        deepest = tree.nodes[state["frontier"][0]].depth + 1  # the level just grown
        return {"grown": grown, "frontier": frontier if deepest < depth else []}

    def next_level(state: ToT) -> str:
        return "prime" if state["frontier"] else END

    graph = StateGraph(ToT)
    graph.add_node("prime", prime)
    graph.add_node("branch", branch, input_schema=BranchTask)
    graph.add_node("select", select)
    graph.add_edge(START, "prime")
    graph.add_conditional_edges("prime", fan_out, ["branch"])
    graph.add_edge("branch", "select")
    graph.add_conditional_edges("select", next_level, ["prime", END])
    return graph.compile(checkpointer=InMemorySaver(), interrupt_after=["select"] if pause else None)


PARAMS = {"max_new_tokens": 8, "temperature": 0, "frequency_penalty": 1.0}
"""Greedy steps; the penalty keeps the random-weight model from repeating one token. On SGLang 0.5.23 it also
makes the steps depend on how requests are batched (measured: 2 runs of 6 grew another tree), so runs that must
repeat each other pass ``{"max_new_tokens": 8, "temperature": 0}``."""


async def search(
    url: str,
    *,
    width: int = 3,
    depth: int = 2,
    beam: int = 2,
    naive: bool = False,
    pause: bool = False,
    sampling_params: Mapping[str, Any] = PARAMS,
) -> tuple[SearchTree, list[str], ToT]:
    """Run the graph from ``PROBLEM`` under a checkpointer; the tree, the node names LangGraph ran, in order, and
    the graph's final state as the checkpointer holds it. With ``pause`` the graph stops after each level and
    resumes from its checkpoint, as a run does that a person reviews or a restarted process picks up."""
    async with AsyncSGLangClient(url) as client:
        salt = f"example-{uuid.uuid4().hex}"  # a fresh cache namespace, so the figures are this run's alone
        root = await client.tokenize(PROBLEM)
        markers = await branch_markers(client, width)
        graph = build(
            client, markers, sampling_params, depth=depth, beam=beam, naive=naive, cache_salt=salt, pause=pause
        )
        tree = SearchTree(root)  # created now, so that its clock times the whole run
        ran: list[str] = []
        initial: ToT = {"root": root, "grown": [], "frontier": [0], "plans": [], "branches": []}
        config: RunnableConfig = {"configurable": {"thread_id": salt}}
        start: ToT | None = initial
        while start is initial or (await graph.aget_state(config)).next:  # None resumes from the checkpoint
            async for update in graph.astream(start, config, stream_mode="updates"):
                ran += [name for name in update if not name.startswith("__")]  # not "__interrupt__"
            start = None
        final: ToT = (await graph.aget_state(config)).values
        replay(root, final["grown"], tree)
    deepest = [node for node in tree.nodes if node.depth == tree.nodes[-1].depth]
    tree.stop(ranked(deepest)[0])  # the best of the deepest level, as TreeOfThoughts picks
    return tree, ran, final


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
    tree, ran, _ = asyncio.run(search(args.url or start("sglang"), naive=args.naive))
    show(tree, ran)
    if args.dot is not None:
        args.dot.write_text(tree.to_dot())
