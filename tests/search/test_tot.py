"""Tree-of-Thoughts (beam and BFS) on the real SGLang engine: the forks of a level run at once and each still
serves its children their parent's whole state from cache."""

from __future__ import annotations

from typing import Any

import pytest

from agentcache.errors import InputError
from agentcache.search import Budget, SearchTree, TreeOfThoughts
from agentcache.search.fork import ForkResult
from tests.conftest import EngineInfo
from tests.search import assert_siblings_hit_their_parent_prefix, hashed_score, puzzle, run, search, shape


def tot(**options: Any) -> Any:
    return lambda proposer: TreeOfThoughts(proposer, hashed_score, branching=3, max_depth=3, **options)


@pytest.fixture(scope="module")
def beam(sglang: EngineInfo) -> SearchTree:
    return run(search(sglang.url, tot(beam_width=2), root_text=ROOT))


ROOT = puzzle()


def test_beam_keeps_the_best_children_of_each_level(beam: SearchTree) -> None:
    assert len(beam.nodes) == 1 + 3 + 2 * 3 + 2 * 3
    assert_siblings_hit_their_parent_prefix(beam)
    for depth in (1, 2):
        level = [n for n in beam.nodes if n.depth == depth]
        ranked = sorted(level, key=lambda n: (-(n.score or 0.0), n.id))
        assert [n for n in level if n.children] == sorted(ranked[:2], key=lambda n: n.id)
    last = [n for n in beam.nodes if n.depth == 3]
    assert beam.best is min(last, key=lambda n: (-(n.score or 0.0), n.id))
    account = beam.account()
    assert account.lower_bound <= (account.server_prefill or 0) <= 1.1 * account.lower_bound


def test_beam_is_deterministic(sglang: EngineInfo, beam: SearchTree) -> None:
    again = run(search(sglang.url, tot(beam_width=2), root_text=ROOT))
    assert shape(again) == shape(beam)


def test_bfs_expands_every_state(sglang: EngineInfo) -> None:
    tree = run(search(sglang.url, lambda p: TreeOfThoughts(p, hashed_score, branching=3, max_depth=2)))
    assert [sum(n.depth == d for n in tree.nodes) for d in (0, 1, 2)] == [1, 3, 9]
    assert_siblings_hit_their_parent_prefix(tree)
    account = tree.account()
    assert account.server_prefill == account.lower_bound


def test_node_budget_cuts_the_level_short(sglang: EngineInfo) -> None:
    tree = run(search(sglang.url, tot(budget=Budget(nodes=6))))
    assert [sum(n.depth == d for n in tree.nodes) for d in (0, 1, 2)] == [1, 3, 2]
    first = min(tree.root.children, key=lambda n: (-(n.score or 0.0), n.id))
    assert len(first.children) == 2  # the best-scored state of the frontier comes first and takes what is left


async def never(state: tuple[int, ...], k: int) -> ForkResult:
    raise AssertionError("a refused search must not propose")


def test_tot_refuses_bad_settings() -> None:
    with pytest.raises(InputError, match="beam_width"):
        TreeOfThoughts(never, hashed_score, beam_width=0)
