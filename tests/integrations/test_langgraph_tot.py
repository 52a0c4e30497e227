"""``examples/langgraph_tot.py`` on the real SGLang engine: a LangGraph Tree-of-Thoughts whose branches fan out
with ``Send`` and fork through agentcache, against the same graph sending every branch alone."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

from agentcache.search import SearchTree, ranked
from tests.conftest import EngineInfo

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("langgraph_tot", EXAMPLES / "langgraph_tot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # TypedDict annotations are resolved through the module
    spec.loader.exec_module(module)
    return module


def assert_grown_as_the_graph_says(
    tree: SearchTree, ran: list[str], final: dict[str, Any], width: int, depth: int, beam: int
) -> None:
    """The tree is the one the graph's rules grow from what the engine answered: the root first, then on each level
    the best ``beam`` unfinished children of the last, ``width`` branches each; one ``prime``, one ``branch`` task per
    branch and one ``select`` per level. How many levels there are and which children finish depend on what the
    random model wrote: they are read from the tree, not assumed."""
    expanded = [record["node"] for record in final["grown"]]
    assert [len(record["branches"]) for record in final["grown"]] == [width] * len(expanded)
    frontier, levels, steps = [0], 0, []
    while frontier:
        assert expanded[: len(frontier)] == frontier, (expanded, frontier)
        expanded = expanded[len(frontier) :]
        levels += 1
        children = [child for node in frontier for child in tree.nodes[node].children]
        assert len(children) == width * len(frontier)
        steps += ["prime", *["branch"] * len(children), "select"]
        frontier = [c.id for c in ranked(children)[:beam] if not c.finished] if levels < depth else []
    assert not expanded  # nothing grown beyond what the rules expand
    assert ran == steps  # one LangGraph task per branch, through Send
    assert len(tree.nodes) == 1 + ran.count("branch")


def assert_branches_share_their_parents_prefix(tree: SearchTree) -> None:
    for node in tree.nodes[1:]:
        assert node.parent is not None and node.branch is not None
        assert node.parent.primed is not None  # each expanded state was primed before its branches ran
        assert node.branch.exchange.cached_tokens == len(node.parent.state)  # the whole parent prefix


def test_send_branches_share_their_parents_prefix(example: ModuleType, sglang: EngineInfo) -> None:
    width, depth, beam = 3, 2, 2
    tree, ran, final = asyncio.run(example.search(sglang.url, width=width, depth=depth, beam=beam))
    assert_grown_as_the_graph_says(tree, ran, final, width, depth, beam)
    assert_branches_share_their_parents_prefix(tree)
    account = tree.account()
    assert account.server_prefill is not None
    assert account.server_prefill <= 1.1 * account.lower_bound
    assert account.server_prefill < account.naive_prefill  # what the same prompts cost sent alone

    # The checkpointed state is plain JSON: no tuple or dataclass for a saver's round trip to change.
    assert orjson.loads(orjson.dumps(final)) == final

    naive, naive_ran, naive_final = asyncio.run(
        example.search(sglang.url, width=width, depth=depth, beam=beam, naive=True)
    )
    assert_grown_as_the_graph_says(naive, naive_ran, naive_final, width, depth, beam)
    assert all(node.primed is None for node in naive.nodes)
    naive_account = naive.account()
    assert naive_account.server_prefill == naive_account.naive_prefill  # nothing shared, nothing primed


def test_a_graph_paused_after_each_level_resumes_from_its_checkpoint(example: ModuleType, sglang: EngineInfo) -> None:
    """Stopped after every ``select`` and resumed from the checkpointer's copy of the state, the graph grows the
    tree its rules grow: each level from the last one's best children, as far as the uninterrupted graph goes.

    Not compared with a second, uninterrupted run: the two trees match only while the engine answers both runs
    alike, which is the engine's (its batching), not agentcache's."""
    width, depth, beam = 3, 3, 2
    paused, ran, final = asyncio.run(example.search(sglang.url, width=width, depth=depth, beam=beam, pause=True))
    assert_grown_as_the_graph_says(paused, ran, final, width, depth, beam)
    assert_branches_share_their_parents_prefix(paused)
    account = paused.account()
    assert account.server_prefill is not None and account.server_prefill <= 1.1 * account.lower_bound
