"""Shared by the search tests: a search set up on the real SGLang engine, and a deterministic user evaluation."""

from __future__ import annotations

import asyncio
import hashlib
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from agentcache.backends import AsyncSGLangClient
from agentcache.search import ForkProposer, SearchNode, SearchTree
from agentcache.search.fork import State, branch_markers

T = TypeVar("T")
GREEDY = {"max_new_tokens": 4, "temperature": 0, "ignore_eos": True}
"""Greedy steps of exactly four tokens: no step ends early, so two trees of the same search have the same sizes."""


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def hashed_score(node: SearchNode) -> float:
    """A user evaluation: deterministic in the state, spread over [0, 1), so UCT and beams have real choices."""
    return hashlib.sha256(repr(node.state).encode()).digest()[0] / 256


async def search(
    url: str, driver: Callable[[ForkProposer], Any], *, naive: bool = False, root_text: str | None = None
) -> SearchTree:
    """Run ``driver(proposer).run(root)`` on SGLang, under a cache salt of its own, from a root prompt of about
    120 tokens (the same root for the same ``root_text``)."""
    async with AsyncSGLangClient(url) as client:
        root = await client.tokenize(root_text or puzzle())
        markers = await branch_markers(client, 3)
        proposer = ForkProposer(client, markers, GREEDY, naive=naive, cache_salt=f"search-{uuid.uuid4().hex}")
        tree: SearchTree = await driver(proposer).run(root)
        return tree


def puzzle() -> str:
    return f"{uuid.uuid4().hex} Tower of Hanoi, three disks on peg A. Plan every move to peg C. " * 3


def shape(tree: SearchTree) -> list[tuple[int, int | None, State, int, float | None]]:
    """What two runs of the same search must agree on: each node's id, parent, state, visits and score."""
    return [(n.id, None if n.parent is None else n.parent.id, n.state, n.visits, n.score) for n in tree.nodes]


def assert_siblings_hit_their_parent_prefix(tree: SearchTree) -> None:
    """Every child's request found its parent's whole state cached: the fork primed it once for all siblings."""
    for node in tree.nodes[1:]:
        assert node.parent is not None and node.branch is not None
        assert node.branch.exchange.cached_tokens == len(node.parent.state), node.id
        assert node.branch.exchange.prefilled == len(node.branch.marker), node.id
