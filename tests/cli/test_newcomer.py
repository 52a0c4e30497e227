"""The command line as a newcomer meets it (issue 14): where the prefix broke, any input form, plain messages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentcache import get_tokenizer
from agentcache.demo.scenario import session
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
    assert len([line for line in result.stdout.splitlines() if line.startswith("default ")]) == 1


def test_explain_warns_on_an_empty_trace(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    result = run("explain", str(path))
    assert result.returncode == 0
    assert "warning" in result.stderr and "no requests" in result.stderr
