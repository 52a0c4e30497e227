"""``examples/langgraph_tot.py`` on the real SGLang engine: a LangGraph Tree-of-Thoughts whose branches fan out
with ``Send`` and fork through agentcache, against the same graph sending every branch alone."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import orjson
import pytest

from agentcache.search import SearchTree
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


def test_send_branches_share_their_parents_prefix(example: ModuleType, sglang: EngineInfo) -> None:
    width, depth, beam = 3, 2, 2
    tree, ran, final = asyncio.run(example.search(sglang.url, width=width, depth=depth, beam=beam))
    branches = width + beam * width
    assert ran.count("branch") == branches  # one LangGraph task per branch, through Send
    assert ran.count("prime") == ran.count("select") == depth
    assert len(tree.nodes) == 1 + branches
    for node in tree.nodes[1:]:
        assert node.parent is not None and node.branch is not None
        assert node.parent.primed is not None  # each expanded state was primed before its branches ran
        assert node.branch.exchange.cached_tokens == len(node.parent.state)  # the whole parent prefix
    account = tree.account()
    assert account.server_prefill is not None
    assert account.server_prefill <= 1.1 * account.lower_bound

    # The checkpointed state is plain JSON: no tuple or dataclass for a saver's round trip to change.
    assert orjson.loads(orjson.dumps(final)) == final

    naive, naive_ran, _ = asyncio.run(example.search(sglang.url, width=width, depth=depth, beam=beam, naive=True))
    assert naive_ran.count("branch") == branches
    naive_account = naive.account()
    assert naive_account.server_prefill == naive_account.naive_prefill  # nothing shared, nothing primed
    assert account.server_prefill < naive_account.server_prefill


def test_a_graph_paused_after_each_level_resumes_from_its_checkpoint(example: ModuleType, sglang: EngineInfo) -> None:
    """Stopped after every ``select`` and resumed from the checkpointer's copy of the state, the graph grows the
    tree the uninterrupted graph grows: the same steps, states, scores and cache figures."""
    greedy = {"max_new_tokens": 8, "temperature": 0}  # without the example's penalty, which depends on batching
    straight, straight_ran, _ = asyncio.run(example.search(sglang.url, sampling_params=greedy))
    paused, paused_ran, _ = asyncio.run(example.search(sglang.url, pause=True, sampling_params=greedy))

    def grown(tree: SearchTree) -> list[tuple[int, int | None, tuple[int, ...], float | None, int | None]]:
        return [
            (
                n.id,
                n.parent.id if n.parent else None,
                n.state,
                n.score,
                n.branch.exchange.cached_tokens if n.branch else None,
            )
            for n in tree.nodes
        ]

    assert paused_ran == straight_ran
    assert grown(paused) == grown(straight)
    assert paused.account() == straight.account()
    assert paused.best.id == straight.best.id
