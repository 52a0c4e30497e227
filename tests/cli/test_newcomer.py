"""The command line as a newcomer meets it (issue 14): where the prefix broke, any input form, plain messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentcache import get_tokenizer
from agentcache.cli.explain import summary_text
from agentcache.demo.scenario import session
from agentcache.drift.summary import Summary
from agentcache.drift.trace import TraceRecord, write_trace

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentcache", *args], input=stdin, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four turns of the demo session: a timestamp and tool order drift, no cache_control breakpoint."""
    path = tmp_path_factory.mktemp("trace") / "trace.jsonl"
    requests = session(get_tokenizer("o200k_base"), turns=4)
    write_trace(path, [TraceRecord(i, "agent", r, None) for i, r in enumerate(requests, start=1)])
    return path


def table_rows(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("agent ")]


def test_explain_text_shows_where_each_drifted_turn_broke(trace: Path) -> None:
    result = run("explain", str(trace))
    assert result.returncode == 0, result.stderr
    turns = json.loads(run("explain", str(trace), "--format", "json").stdout)["turns"]
    rows = table_rows(result.stdout)
    assert len(rows) == len(turns) == 4
    for row, turn in zip(rows, turns, strict=True):
        if turn["divergence"] is None:
            continue
        where = turn["divergence"]
        assert where["path"] in row and f"token {where['token_index']:,}" in row, row


def test_explain_reads_stdin(trace: Path) -> None:
    from_file = run("explain", str(trace))
    from_stdin = run("explain", "-", stdin=trace.read_text())
    assert from_stdin.returncode == 0, from_stdin.stderr
    assert from_stdin.stdout == from_file.stdout


def test_explain_reads_one_pretty_printed_request(tmp_path: Path) -> None:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(REQUEST, indent=2))
    result = run("explain", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "1 turn in 1 session," in result.stdout
    assert len([line for line in result.stdout.splitlines() if line.startswith("default ")]) == 1


def test_explain_warns_on_an_empty_trace(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    result = run("explain", str(path))
    assert result.returncode == 0
    assert "warning" in result.stderr and "no requests" in result.stderr


def test_counts_of_one_are_singular() -> None:
    summary = Summary(1, 1, 10, 0, None, None, 0, 0)
    assert summary_text(summary, "m").startswith("1 turn in 1 session, 10 prompt tokens")


def test_a_negative_saving_reads_as_a_cost() -> None:
    summary = Summary(3, 1, 9000, 5000, None, None, 0, 3020)
    text = summary_text(summary, "m")
    assert "-1,980" not in text and "canonicalization cost 1,980 prefill tokens" in text


@pytest.mark.parametrize("command", ["explain", "simulate"])
def test_anthropic_zero_is_explained(trace: Path, command: str) -> None:
    result = run(command, str(trace), "--cache", "anthropic")
    assert result.returncode == 0, result.stderr
    assert "cache_control" in result.stdout
    as_json = run(command, str(trace), "--cache", "anthropic", "--format", "json")
    json.loads(as_json.stdout)  # the JSON stays one document, note-free


def test_no_anthropic_note_with_a_breakpoint(tmp_path: Path) -> None:
    path = tmp_path / "marked.jsonl"
    marked = {**REQUEST, "system": [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]}
    path.write_text(json.dumps(marked) + "\n")
    assert "cache_control" not in run("explain", str(path), "--cache", "anthropic").stdout
    assert "cache_control" not in run("explain", str(path), "--cache", "sglang").stdout


def test_demo_of_one_turn_claims_no_share_of_the_ideal() -> None:
    result = run("demo", "--turns", "1")
    assert result.returncode == 0, result.stderr
    assert "of the ideal reuse" not in result.stdout
    assert "no reuse is possible" in result.stdout
