"""Tree-of-Thoughts search, breadth first: every state of a level is forked at once, the children are scored,
and the best ``beam_width`` of them (all of them when None: plain BFS) become the next level.

The forks of one level run concurrently; each primes its own state, so siblings share their parent's prefix and
cousins share their grandparent's. Node ids follow the frontier's order, not the order answers arrive, so a
deterministic ``propose`` and ``evaluate`` give the same tree on every run.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentcache.errors import InputError
from agentcache.search.fork import gather_all
from agentcache.search.tree import Budget, Evaluate, Propose, SearchNode, SearchTree, ranked


class TreeOfThoughts:
    """Level-by-level search, ``branching`` children per state, ``max_depth`` levels below the root."""

    def __init__(
        self,
        propose: Propose,
        evaluate: Evaluate,
        *,
        branching: int = 3,
        max_depth: int = 3,
        beam_width: int | None = None,
        budget: Budget | None = None,
    ) -> None:
        if branching < 1 or max_depth < 0 or (beam_width is not None and beam_width < 1):
            raise InputError(
                f"TreeOfThoughts needs branching >= 1, max_depth >= 0 and beam_width >= 1 (or None), got "
                f"{branching}, {max_depth} and {beam_width}"
            )
        self.propose = propose
        self.evaluate = evaluate
        self.branching = branching
        self.max_depth = max_depth
        self.beam_width = beam_width
        self.budget = budget or Budget()

    async def run(self, root: Sequence[int]) -> SearchTree:
        """Search from the ``root`` prompt (token ids); the tree's ``best`` is the best-scored state of the last
        level reached (ties: the earliest created)."""
        tree = SearchTree(root)
        frontier, best = [tree.root], tree.root
        for _ in range(self.max_depth):
            frontier = [node for node in frontier if not node.finished]
            if not frontier or not self.budget.allows(tree):
                break
            plan = self._allot(frontier, self.budget.room(tree))
            results = await gather_all(self.propose(node.state, k) for node, k in plan)
            children = [
                child for (node, k), result in zip(plan, results, strict=True) for child in tree.grow(node, result, k)
            ]
            await tree.score(children, self.evaluate)
            order = ranked(children)
            if not order:
                break
            frontier, best = order if self.beam_width is None else order[: self.beam_width], order[0]
        tree.stop(best)
        return tree

    def _allot(self, frontier: list[SearchNode], room: int | None) -> list[tuple[SearchNode, int]]:
        """Children per frontier node, in order, within the node budget."""
        plan = []
        for node in frontier:
            k = self.branching if room is None else min(self.branching, room)
            if k == 0:
                break
            plan.append((node, k))
            if room is not None:
                room -= k
        return plan
