"""MCTS on the real SGLang engine: forked expansions against the naive run, determinism, budgets, a model judge,
and the JSON / DOT export of a real tree.

SGLang's reports (docs/backends.md) give the forked run's prefill exactly: the root once, then per expansion one
token to prime the state (its last output token never ran through the model) and each child's marker.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import orjson
import pytest

from agentcache.backends import AsyncSGLangClient
from agentcache.errors import InputError
from agentcache.search import MCTS, Budget, ForkProposer, SearchTree
from agentcache.search.fork import ForkResult, branch_markers
from tests.conftest import EngineInfo
from tests.search import GREEDY, assert_siblings_hit_their_parent_prefix, hashed_score, puzzle, run, search, shape


def mcts(**options: Any) -> Any:
    return lambda proposer: MCTS(proposer, hashed_score, branching=3, max_depth=3, seed=7, **options)


@pytest.fixture(scope="module")
def runs(sglang: EngineInfo) -> tuple[SearchTree, SearchTree]:
    """The same MCTS (branching 3, depth 3) forked and naive, from the same root."""
    root = puzzle()
    forked = run(search(sglang.url, mcts(), root_text=root))
    naive = run(search(sglang.url, mcts(), root_text=root, naive=True))
    return forked, naive


def test_forked_mcts_prefills_the_lower_bound(runs: tuple[SearchTree, SearchTree]) -> None:
    forked, _ = runs
    assert len(forked.nodes) == 1 + 3 + 9 + 27  # no budget: the whole tree
    assert_siblings_hit_their_parent_prefix(forked)
    expanded = [n for n in forked.nodes if n.children]
    assert all(n.primed is not None for n in expanded)
    assert forked.root.primed is not None and forked.root.primed.prefilled == len(forked.root.state)
    assert all(n.primed is not None and n.primed.prefilled == 1 for n in expanded if n.parent is not None)
    account = forked.account()
    markers = sum(len(n.branch.marker) for n in forked.nodes if n.branch is not None)
    assert account.server_prefill == len(forked.root.state) + markers + len(expanded) - 1
    assert account.lower_bound <= account.server_prefill <= 1.1 * account.lower_bound
    assert account.lower_bound < account.unique_tokens  # the outputs the server decoded need no prefill


def test_naive_mcts_prefills_every_prompt_of_a_tree_of_the_same_size(runs: tuple[SearchTree, SearchTree]) -> None:
    forked, naive = runs
    assert [sum(n.depth == d for n in naive.nodes) for d in range(4)] == [1, 3, 9, 27]
    # Not shape(naive) == shape(forked): a naive prompt prefills the parent's output tokens, whose KV the forked run
    # reuses from decode steps, and the two differ by float rounding, which can flip a near-tied greedy token. The
    # token counts cannot differ: whole tree, steps of exactly four tokens.
    assert sizes(naive) == sizes(forked)
    assert all(ex.cached_tokens == 0 and ex.kind == "branch" for ex in naive.exchanges)
    prompts = sum(len(n.parent.state) + len(n.branch.marker) for n in naive.nodes if n.parent and n.branch)
    assert naive.account().server_prefill == forked.account().naive_prefill == prompts
    assert naive.account().lower_bound == forked.account().lower_bound
    forked_prefill = forked.account().server_prefill
    assert forked_prefill is not None and prompts > 10 * forked_prefill  # every node re-sends the whole root


def sizes(tree: SearchTree) -> list[tuple[int, int]]:
    return sorted((n.depth, len(n.state)) for n in tree.nodes)


def test_json_export_carries_each_nodes_tokens(runs: tuple[SearchTree, SearchTree]) -> None:
    forked, _ = runs
    exported = orjson.loads(forked.to_json())
    assert exported["account"] == orjson.loads(orjson.dumps(forked.account().to_dict()))
    assert exported["best_path"] == [n.id for n in forked.best.path()]
    assert [n["id"] for n in exported["nodes"]] == [n.id for n in forked.nodes]
    for node, data in zip(forked.nodes, exported["nodes"], strict=True):
        assert data["parent"] == (None if node.parent is None else node.parent.id)
        assert data["state_tokens"] == len(node.state)
        assert (data["score"], data["visits"]) == (node.score, node.visits)
        if node.branch is None:
            assert data["prompt_tokens"] is None
            continue
        ex = node.branch.exchange
        assert (data["prompt_tokens"], data["cached_tokens"], data["prefilled_tokens"]) == (
            ex.prompt_tokens,
            ex.cached_tokens,
            ex.prefilled,
        )
        assert data["prime"] == (
            None
            if node.primed is None
            else {"prompt": node.primed.prompt_tokens, "cached": node.primed.cached_tokens, "prefilled": 1}
        )


def test_dot_export_has_a_box_per_node_and_an_edge_per_child(runs: tuple[SearchTree, SearchTree]) -> None:
    forked, _ = runs
    dot = forked.to_dot()
    assert dot.startswith("digraph search {") and dot.rstrip().endswith("}")
    labels = dict(re.findall(r'^  n(\d+) \[label="((?:[^"\\]|\\.)*)"', dot, re.MULTILINE))
    edges = re.findall(r"^  n(\d+) -> n(\d+);$", dot, re.MULTILINE)
    assert sorted(int(i) for i in labels) == [n.id for n in forked.nodes]
    assert sorted((int(a), int(b)) for a, b in edges) == sorted(
        (n.parent.id, n.id) for n in forked.nodes if n.parent is not None
    )
    for node in forked.nodes[1:]:
        assert node.branch is not None
        ex = node.branch.exchange
        assert f"prompt {ex.prompt_tokens} cached {ex.cached_tokens} prefilled {ex.prefilled}" in labels[str(node.id)]
    bold = re.findall(r"^  n(\d+) .*style=bold\];$", dot, re.MULTILINE)
    assert [int(i) for i in bold] == [n.id for n in forked.best.path()]


def test_mcts_is_deterministic_under_a_seed(sglang: EngineInfo, runs: tuple[SearchTree, SearchTree]) -> None:
    forked, _ = runs
    root = forked.root.state
    again = run(search_from(sglang, root, mcts()))
    assert shape(again) == shape(forked)
    assert again.best.id == forked.best.id


async def search_from(engine: EngineInfo, root: tuple[int, ...], driver: Any) -> SearchTree:
    async with AsyncSGLangClient(engine.url) as client:
        markers = await branch_markers(client, 3)
        proposer = ForkProposer(client, markers, GREEDY, cache_salt=f"again-{uuid.uuid4().hex}")
        tree: SearchTree = await driver(proposer).run(root)
        return tree


def test_node_budget_is_never_exceeded(sglang: EngineInfo) -> None:
    tree = run(search(sglang.url, mcts(budget=Budget(nodes=8))))
    assert len(tree.nodes) == 8  # 1 + 3 + 3, then one child of the third expansion
    last = tree.nodes[-1].parent
    assert last is not None and len(last.children) == 1
    assert_siblings_hit_their_parent_prefix(tree)


def test_token_budget_stops_after_the_expansion_that_reaches_it(sglang: EngineInfo) -> None:
    limit = 200  # the root (about 120 tokens) plus a few expansions of about 20; the whole tree needs some 350
    tree = run(search(sglang.url, mcts(budget=Budget(tokens=limit))))
    assert len(tree.nodes) < 1 + 3 + 9 + 27
    assert tree.tokens_spent() >= limit
    last = tree.nodes[-1].parent
    assert last is not None
    before_last = tree.exchanges[: -(1 + len(last.children))]  # the last expansion: its priming and its branches
    spent_before = sum((ex.prefilled or 0) + len(ex.output) for ex in before_last)
    assert spent_before < limit


def test_time_budget_of_zero_expands_nothing(sglang: EngineInfo) -> None:
    tree = run(search(sglang.url, mcts(budget=Budget(seconds=0))))
    assert tree.nodes == [tree.root] and tree.exchanges == [] and tree.best is tree.root


async def never(state: tuple[int, ...], k: int) -> ForkResult:
    raise AssertionError("a refused search must not propose")


def test_mcts_refuses_bad_settings() -> None:
    with pytest.raises(InputError, match="branching"):
        MCTS(never, hashed_score, branching=0)
    with pytest.raises(InputError, match="max_depth"):
        MCTS(never, hashed_score, max_depth=-1)
    with pytest.raises(InputError, match="counts the root"):
        Budget(nodes=0)
