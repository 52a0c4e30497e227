"""MCTS on the SGLang engine, forked against naive, in one run: server prefill tokens and wall time.

Run: ``python bench/mcts.py [SGLANG_URL] [--rounds N]``. Without a URL it starts (or reuses) the project's CPU
engine with ``scripts/engines/engines.py`` (installing it the first time).

Three ways to run the same search (UCT, branching 3, depth 3, 40 nodes, a deterministic user evaluation), each
round under fresh cache salts so no round helps another:

- ``forked``: every expansion primes the parent's state, then its 3 children run concurrently (agentcache.fork);
- ``unprimed``: the same concurrent children sharing one salt, without priming (a propose written by hand);
- ``naive``: every child's full prompt sent under a salt of its own, nothing shared.

Targets (issue 6): the runs build the same tree (naive: of the same token counts), and forked prefill is within
10% of the unique-token lower bound. Exits 1 when one is missed.
"""

from __future__ import annotations

import asyncio
import hashlib
import statistics
import uuid
from collections.abc import Callable

import sglang_engine

from agentcache.backends import AsyncSGLangClient
from agentcache.search import MCTS, ForkProposer, Propose, SearchNode, SearchTree
from agentcache.search.fork import ForkResult, State, branch_markers, fork

PARAMS = {"max_new_tokens": 8, "temperature": 0, "ignore_eos": True}
PROBLEM = (
    "You are planning moves for the Tower of Hanoi with four disks on peg A; move them all to peg C, never placing "
    "a larger disk on a smaller one. Propose the next move and justify it in one short sentence. "
)


def evaluate(node: SearchNode) -> float:
    """Deterministic in the state: the benchmark measures caching, not the (random-weight) model's judgement."""
    return hashlib.sha256(repr(node.state).encode()).digest()[0] / 256


def shape(tree: SearchTree) -> list[tuple[int, State, int]]:
    return [(n.id, n.state, n.visits) for n in tree.nodes]


def sizes(tree: SearchTree) -> list[tuple[int, int]]:
    """What a naive run must share with the forked one: it prefills the parents' outputs that the forked run reuses
    as decoded, a path whose rounding may flip a near-tied greedy token, so only the token counts must agree."""
    return sorted((n.depth, len(n.state)) for n in tree.nodes)


async def one_run(client: AsyncSGLangClient, root: list[int], markers: list[State], mode: str) -> SearchTree:
    salt = f"bench-{mode}-{uuid.uuid4().hex}"
    propose: Propose
    if mode == "unprimed":

        async def propose(state: State, k: int) -> ForkResult:
            return await fork(client, state, k, PARAMS, markers=markers[:k], prime=False, cache_salt=salt)

    else:
        propose = ForkProposer(client, markers, PARAMS, naive=mode == "naive", cache_salt=salt)
    tree: SearchTree = await MCTS(propose, evaluate, branching=3, max_depth=3, seed=1).run(root)
    return tree


async def bench(url: str, rounds: int, repeats: int) -> int:
    modes = ["forked", "unprimed", "naive"]
    trees: dict[str, list[SearchTree]] = {mode: [] for mode in modes}
    async with AsyncSGLangClient(url) as client:
        info = await client.server_info()
        root = await client.tokenize(PROBLEM * repeats)
        markers = await branch_markers(client, 3)
        await one_run(client, root, markers, "forked")  # warm-up: first requests after start-up are slow
        for _ in range(rounds):
            for mode in modes:  # interleaved, so load on the machine hits every mode alike
                trees[mode].append(await one_run(client, root, markers, mode))

    first: Callable[[str], SearchTree] = lambda mode: trees[mode][0]  # noqa: E731
    forked = first("forked").account()
    print(
        f"SGLang {info.get('version')} at {url}; root {len(root)} tokens, {len(first('forked').nodes)} nodes "
        f"(UCT, branching 3, depth 3, {PARAMS['max_new_tokens']} new tokens per step), {rounds} rounds"
    )
    print(f"unique prompt tokens in the tree: {forked.unique_tokens}; lower bound on prefill: {forked.lower_bound}")
    print(f"{'run':<10}{'requests':>9}{'prefill':>9}{'vs bound':>10}{'vs forked':>11}{'wall s p50':>12}{'min':>8}")
    for mode in modes:
        acc = first(mode).account()
        prefill = acc.server_prefill or 0
        walls = [tree.elapsed() for tree in trees[mode]]
        print(
            f"{mode:<10}{acc.requests:>9}{prefill:>9}{prefill / forked.lower_bound:>9.2f}x"
            f"{prefill / (forked.server_prefill or 1):>10.1f}x{statistics.median(walls):>12.2f}{min(walls):>8.2f}"
        )
    same = all(shape(tree) == shape(first("forked")) for mode in ("forked", "unprimed") for tree in trees[mode])
    like = all(sizes(tree) == sizes(first("forked")) for tree in trees["naive"])
    checks = [
        ("forked and unprimed build the same tree, every round", same),
        ("naive builds a tree of the same token counts, every round", like),
        ("forked prefill <= 1.1 x lower bound", (forked.server_prefill or 0) <= 1.1 * forked.lower_bound),
        ("every forked prefill equal", len({t.account().server_prefill for t in trees["forked"]}) == 1),
    ]
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    return 0 if all(ok for _, ok in checks) else 1


def main() -> int:
    parser = sglang_engine.arguments(__doc__, rounds=3)
    parser.add_argument("--repeats", type=int, default=10, help="copies of the problem text in the root prompt")
    args = parser.parse_args()
    return asyncio.run(bench(sglang_engine.url(args.url), args.rounds, args.repeats))


if __name__ == "__main__":
    raise SystemExit(main())
