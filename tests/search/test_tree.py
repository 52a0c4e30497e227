"""Pure tests of the search tree and the prefill accounting, on hand-built requests.

The accounting is checked against a brute-force reading of its definition: a token trie's nodes are the distinct
non-empty prefixes of the sequences inserted, and a decoded position is a prefix ``prompt + output[:j]``,
0 < j < len(output), of some request.
"""

from __future__ import annotations

import asyncio

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache.errors import InputError
from agentcache.search import Budget, SearchTree, account, trie_size
from agentcache.search.accounting import prefill_lower_bound
from agentcache.search.fork import Branch, Exchange, ForkResult

tokens = st.lists(st.integers(0, 3), max_size=8)


def prefixes(seq: tuple[int, ...]) -> set[tuple[int, ...]]:
    return {seq[:i] for i in range(1, len(seq) + 1)}


@settings(deadline=None)
@given(st.lists(tokens, max_size=12))
def test_trie_size_counts_distinct_prefixes(sequences: list[list[int]]) -> None:
    expected: set[tuple[int, ...]] = set()
    for seq in sequences:
        expected |= prefixes(tuple(seq))
    assert trie_size(sequences) == len(expected)


requests = st.lists(st.tuples(tokens, tokens, st.sampled_from(["prime", "branch", "judge"])), max_size=10)


@settings(deadline=None)
@given(requests)
def test_lower_bound_is_unique_prompt_tokens_less_decoded_ones(reqs: list[tuple[list[int], list[int], str]]) -> None:
    exchanges = [Exchange(kind, tuple(p), tuple(o), len(p), 0) for p, o, kind in reqs]  # type: ignore[arg-type]
    prompts: set[tuple[int, ...]] = set()
    decoded: set[tuple[int, ...]] = set()
    for ex in exchanges:
        prompts |= prefixes(ex.prompt)
        decoded |= {ex.prompt + ex.output[:j] for j in range(1, len(ex.output))}
    assert prefill_lower_bound(exchanges) == (len(prompts), len(prompts - decoded))


def test_account_of_a_fork_and_a_grandchild() -> None:
    root = (1, 2, 3, 4)
    prime = Exchange("prime", root, (), 4, 0)
    a = Exchange("branch", (*root, 10), (20, 21, 22), 5, 4)
    b = Exchange("branch", (*root, 11), (30, 31), 5, 4)
    a_state = (*root, 10, 20, 21, 22)
    prime_a = Exchange("prime", a_state, (), 8, 7)  # the last output token never ran, so it is prefilled
    child = Exchange("branch", (*a_state, 10), (40,), 9, 8)
    got = account([prime, a, b, prime_a, child])
    assert got.server_prefill == 4 + 1 + 1 + 1 + 1
    assert got.naive_prefill == 5 + 5 + 9  # the primings are not requests the naive run sends
    assert got.unique_tokens == len(root) + 1 + 1 + 3 + 1  # root, markers 10 and 11, a's output, the child's marker
    assert got.lower_bound == got.unique_tokens - 2  # a's outputs 20 and 21 were decoded: their KV exists
    assert got.over_lower_bound == 1.0
    assert got.naive_over_server == 19 / 8
    assert got.prompt_tokens == 4 + 5 + 5 + 8 + 9 and got.generated_tokens == 3 + 2 + 1 and got.requests == 5
    assert account([Exchange("branch", (1,), (), 1, None)]).server_prefill is None  # not reported is not zero


def fork_of(prefix: tuple[int, ...], *outputs: tuple[int, ...], text: str = "step") -> ForkResult:
    branches = tuple(
        Branch(i, (100 + i,), text, "length", Exchange("branch", (*prefix, 100 + i), out, len(prefix) + 1, len(prefix)))
        for i, out in enumerate(outputs)
    )
    return ForkResult(prefix, Exchange("prime", prefix, (), len(prefix), 0), branches)


def test_grow_numbers_children_in_branch_order_and_keeps_every_request() -> None:
    tree = SearchTree([1, 2])
    kids = tree.grow(tree.root, fork_of((1, 2), (5,), (6,), (7,)), 2)
    assert [k.id for k in kids] == [1, 2] and [k.state for k in kids] == [(1, 2, 100, 5), (1, 2, 101, 6)]
    assert tree.root.children == kids and tree.nodes == [tree.root, *kids]
    assert len(tree.exchanges) == 4  # the priming and all three branches were sent, even the one not kept
    assert kids[1].path() == [tree.root, kids[1]]
    with pytest.raises(InputError, match="another prefix"):
        tree.grow(kids[0], fork_of((1, 2), (8,)), 1)


def test_scores_may_be_sync_or_async() -> None:
    tree = SearchTree([1])
    kids = tree.grow(tree.root, fork_of((1,), (5,), (6,)), 2)

    async def evaluate(node: object) -> float:
        return 0.25

    asyncio.run(tree.score(kids[:1], lambda node: 0.5))
    asyncio.run(tree.score(kids[1:], evaluate))
    assert [k.score for k in kids] == [0.5, 0.25]


def test_budget_room_and_limits() -> None:
    tree = SearchTree([1])
    assert Budget().room(tree) is None and Budget().allows(tree)
    assert Budget(nodes=3).room(tree) == 2
    tree.grow(tree.root, fork_of((1,), (5,), (6,)), 2)
    assert Budget(nodes=3).room(tree) == 0 and not Budget(nodes=3).allows(tree)
    spent = tree.tokens_spent()
    assert spent == 1 + 2 * (1 + 1)  # the root primed, then each branch's marker and its one output token
    assert Budget(tokens=spent + 1).allows(tree) and not Budget(tokens=spent).allows(tree)
    assert not Budget(seconds=0).allows(tree)


def test_exports_escape_text_and_stay_parseable() -> None:
    tree = SearchTree([1])
    (kid,) = tree.grow(tree.root, fork_of((1,), (5,), text='say "hi"\\n\nnow'), 1)
    asyncio.run(tree.score([kid], lambda node: 1.0))
    tree.stop(kid)
    assert orjson.loads(tree.to_json())["nodes"][1]["text"] == 'say "hi"\\n\nnow'
    label = tree.to_dot().splitlines()[3]
    assert label.startswith('  n1 [label="') and label.endswith('", style=bold];')
    inner = label[len('  n1 [label="') : -len('", style=bold];')]
    assert '"' not in inner.replace('\\"', "")  # every quote inside the label is escaped
    assert "prompt 2 cached 1 prefilled 1" in inner


def test_empty_root_is_refused() -> None:
    with pytest.raises(InputError, match="non-empty root"):
        SearchTree([])
