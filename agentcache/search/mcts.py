"""Monte Carlo tree search (UCT) whose expansions are forks, so siblings share their parent's cached prefix.

Each iteration selects a leaf by UCT, asks ``propose(state, k)`` for k children at once (one fork: the parent's
state is computed once, the k continuations run concurrently), evaluates every child, and backs each value up
to the root. A node whose subtree can grow no further (maximum depth, the model stopped, or nothing proposed) is
never selected again, so every iteration adds nodes until the budget or the tree runs out.

Also here: :class:`ForkProposer`, the default ``propose``. Model-judged ``evaluate`` functions are in
:mod:`agentcache.search.judge`.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

from agentcache.backends import AsyncSGLangClient
from agentcache.errors import InputError
from agentcache.search.fork import ForkResult, State, check_markers, fork
from agentcache.search.tree import Budget, Evaluate, Propose, SearchNode, SearchTree


class ForkProposer:
    """``propose(state, k)`` by :func:`~agentcache.fork.fork`: k continuations of the state, branch i after
    ``markers[i]``. ``naive`` sends each branch under a fresh cache salt without priming, the baseline that shares
    nothing; run the same search both ways to measure what forking saves."""

    def __init__(
        self,
        client: AsyncSGLangClient,
        markers: Sequence[Sequence[int]],
        sampling_params: Mapping[str, Any] | None = None,
        *,
        naive: bool = False,
        cache_salt: str | None = None,
    ) -> None:
        self.client = client
        self.markers = check_markers(markers, len(markers))
        self.sampling_params = dict(sampling_params or {})
        self.naive = naive
        self.cache_salt = cache_salt

    async def __call__(self, state: State, k: int) -> ForkResult:
        if k > len(self.markers):
            raise InputError(f"propose() was asked for {k} branches but has {len(self.markers)} markers; pass more")
        return await fork(
            self.client,
            state,
            k,
            self.sampling_params,
            markers=self.markers[:k],
            prime=not self.naive,
            isolate=self.naive,
            cache_salt=self.cache_salt,
        )


class MCTS:
    """UCT search: ``branching`` children per expansion, states at most ``max_depth`` steps below the root.

    Ties in UCT are broken by a ``random.Random(seed)``, so with a deterministic ``propose`` and ``evaluate``
    (temperature 0, markers) two runs build the same tree. ``exploration`` is UCT's c.
    """

    def __init__(
        self,
        propose: Propose,
        evaluate: Evaluate,
        *,
        branching: int = 3,
        max_depth: int = 3,
        budget: Budget | None = None,
        exploration: float = math.sqrt(2),
        seed: int = 0,
    ) -> None:
        if branching < 1 or max_depth < 0:
            raise InputError(f"MCTS needs branching >= 1 and max_depth >= 0, got {branching} and {max_depth}")
        self.propose = propose
        self.evaluate = evaluate
        self.branching = branching
        self.max_depth = max_depth
        self.budget = budget or Budget()
        self.exploration = exploration
        self.seed = seed

    async def run(self, root: Sequence[int]) -> SearchTree:
        """Search from the ``root`` prompt (token ids); the tree's ``best`` is the end of the most-visited path."""
        tree = SearchTree(root)
        rng = random.Random(self.seed)
        closed: set[int] = set()  # nodes whose subtree cannot grow: never selected again
        if not self._expandable(tree.root):
            closed.add(tree.root.id)
        while tree.root.id not in closed and self.budget.allows(tree):
            leaf = self._select(tree.root, closed, rng)
            room = self.budget.room(tree)
            k = self.branching if room is None else min(self.branching, room)
            children = await tree.expand(leaf, self.propose, k, self.evaluate)
            for child in children:
                if not self._expandable(child):
                    closed.add(child.id)
                for ancestor in child.path():
                    ancestor.visits += 1
                    ancestor.value_sum += child.score or 0.0
            done: SearchNode | None = leaf
            while done is not None and all(c.id in closed for c in done.children):
                closed.add(done.id)
                done = done.parent
        tree.stop(_most_visited_path(tree.root))
        return tree

    def _expandable(self, node: SearchNode) -> bool:
        return node.depth < self.max_depth and not node.finished

    def _select(self, root: SearchNode, closed: set[int], rng: random.Random) -> SearchNode:
        node = root
        while node.children:
            log_n = math.log(node.visits)
            node = max(
                (c for c in node.children if c.id not in closed),
                key=lambda c: (c.value + self.exploration * math.sqrt(log_n / c.visits), rng.random()),
            )
        return node


def _most_visited_path(root: SearchNode) -> SearchNode:
    node = root
    while node.children:
        node = max(node.children, key=lambda c: (c.visits, c.value, -c.id))
    return node
