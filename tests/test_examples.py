"""The runnable examples, run as a user runs them (``python examples/NAME.py``) against the real engines, with their
printed figures checked against each other. ``langgraph_tot.py`` is tested in tests/integrations."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from agentcache.predict import causes as causes_module
from tests.conftest import EngineInfo

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SUMMARY = r"(\d+) {unit}[:,] (\d+) of (\d+) prompt tokens from cache \(\d+%\), (\d+) predicted; causes (\{{.*\}})"
KNOWN_CAUSES = {value for name, value in vars(causes_module).items() if name.isupper() and isinstance(value, str)}
ACCOUNT = re.compile(r"server prefill (\d+) tokens; lower bound (\d+); naive \(every prompt sent alone\) (\d+)")


def run_example(name: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done.stdout


def summary(output: str, unit: str) -> tuple[int, int, int, int, dict[str, int]]:
    """``N <unit>, X of Y prompt tokens from cache (P%), Z predicted; causes {...}`` -> (N, X, Y, Z, causes)."""
    found = re.search(SUMMARY.format(unit=unit), output)
    assert found is not None, output
    count, cached, prompt, predicted = (int(found.group(i)) for i in (1, 2, 3, 4))
    causes: dict[str, int] = ast.literal_eval(found.group(5))
    return count, cached, prompt, predicted, causes


def test_langgraph_agent(llama_server: EngineInfo) -> None:
    """How many turns the random model's replies lead to, and what LangChain makes of them in the history, is not
    agentcache's: assert that the prediction is exact and every turn's cause is accounted for."""
    output = run_example("langgraph_agent.py", "--url", llama_server.url)
    turns, cached, prompt, predicted, causes = summary(output, "turns")
    assert 0 < cached == predicted < prompt  # the client-side model predicted exactly what the server reused
    assert_causes_explained(causes, turns)


def test_crewai_crew(llama_server: EngineInfo) -> None:
    """CrewAI re-runs a task whose reply it rejects, as often as the random model makes it: assert what agentcache
    guarantees (predicted equals reported, every call's cause is a known code), not how often crewai retried."""
    output = run_example("crewai_crew.py", "--url", llama_server.url)
    calls, cached, prompt, predicted, causes = summary(output, "calls")
    assert 0 < cached == predicted < prompt
    assert_causes_explained(causes, calls)
    assert output.count("[event bus] Code reviewer:") == calls  # one report per LLM call, as it arrives


def assert_causes_explained(causes: dict[str, int], requests: int) -> None:
    """One cause per request of the one session, each a known code; none is an unexplained miss (``evicted``)."""
    assert sum(causes.values()) == requests and causes.get("new_session") == 1
    assert set(causes) <= KNOWN_CAUSES - {causes_module.EVICTED}


@pytest.mark.parametrize("judge", [None, "number", "yes-no"])
def test_mcts_forked(sglang: EngineInfo, tmp_path: Path, judge: str | None) -> None:
    dot, exported = tmp_path / "tree.dot", tmp_path / "tree.json"
    options = ["--dot", str(dot), "--json", str(exported), *(["--judge", judge] if judge else [])]
    output = run_example("mcts_forked.py", sglang.url, *options)
    found = ACCOUNT.search(output)
    assert found is not None, output
    prefill, bound, naive = (int(found.group(i)) for i in (1, 2, 3))
    tree = orjson.loads(exported.read_bytes())
    assert (tree["account"]["server_prefill"], tree["account"]["lower_bound"]) == (prefill, bound)
    nodes = {node["id"]: node for node in tree["nodes"]}
    # The example's budget is 22 nodes, never exceeded; the search stops short of it only when no node can grow
    # (each leaf at the example's max depth 3, or ended by the model): how often the random model ends a step is not
    # agentcache's.
    assert 1 < len(nodes) <= 22
    parents = {node["parent"] for node in nodes.values()}
    leaves = [node for node in nodes.values() if node["id"] not in parents]
    assert len(nodes) == 22 or all(leaf["depth"] == 3 or leaf["finish_reason"] == "stop" for leaf in leaves)
    for node in nodes.values():
        if node["parent"] is not None:  # each step found its parent's whole state in the cache the fork primed
            assert node["cached_tokens"] == nodes[node["parent"]]["state_tokens"], node
            assert node["prompt_tokens"] == node["cached_tokens"] + node["prefilled_tokens"], node
    # A user evaluation pays the bound exactly; a judge has run each state's last token before it is primed.
    re_primed = sum(1 for node in nodes.values() if node["parent"] is not None and node["prime"] is not None)
    assert prefill == bound + (re_primed if judge else 0)
    # Naive is every prompt sent alone: each step's and each judge's; the fork saves what the steps found cached.
    sent = [node["prompt_tokens"] for node in nodes.values() if node["parent"] is not None]
    sent += [node["judge"]["prompt"] for node in nodes.values() if node["judge"] is not None]
    assert naive == sum(sent) == tree["account"]["naive_prefill"]
    assert prefill < naive
    assert dot.read_text().startswith("digraph")
    assert all(f"#{node['id']} " in output for node in tree["nodes"])  # the printed tree has every node
