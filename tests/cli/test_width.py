"""Text output fits the terminal: COLUMNS, else the terminal's width; nothing is wrapped on a pipe (issue 14)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentcache import get_tokenizer
from agentcache.demo.scenario import session
from agentcache.drift.trace import TraceRecord, write_trace
from agentcache.totals import table

SOURCE = """import time

SYSTEM = f"You are helpful. Now: {time.time()}"
client.chat.completions.create(model="m", messages=[{"role": "system", "content": SYSTEM}])
"""


def run(*args: str, columns: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    return subprocess.run(
        [sys.executable, "-m", "agentcache", *args], capture_output=True, text=True, timeout=120, env=env
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("width")
    trace = folder / "trace.jsonl"
    requests = session(get_tokenizer("o200k_base"), turns=4)
    write_trace(trace, [TraceRecord(i, "agent", r, None) for i, r in enumerate(requests, start=1)])
    source = folder / "agent.py"
    source.write_text(SOURCE)
    return {"trace": trace, "source": source}


@pytest.mark.parametrize(
    "command",
    [
        ("explain", "trace"),
        ("explain", "trace", "--cache", "anthropic"),
        ("simulate", "trace"),
        ("demo",),
        ("lint", "source"),
    ],
    ids=["explain", "explain-anthropic", "simulate", "demo", "lint"],
)
def test_text_fits_80_columns(inputs: dict[str, Path], command: tuple[str, ...]) -> None:
    args = [str(inputs[a]) if a in inputs else a for a in command]
    result = run(*args, columns="80")
    assert result.returncode in (0, 1), result.stderr
    long = [line for line in result.stdout.splitlines() if len(line) > 80]
    assert not long, long
    if command[0] == "explain":
        assert "token 1,479" in result.stdout  # the detail is wrapped, not dropped


def test_a_pipe_without_columns_is_not_wrapped(inputs: dict[str, Path]) -> None:
    result = run("explain", str(inputs["trace"]), columns=None)
    assert any(len(line) > 80 for line in result.stdout.splitlines())


def test_table_wraps_its_last_column_in_place_or_below() -> None:
    rows = [["a", 1, "one two three four five six seven eight nine ten eleven twelve"]]
    assert table(["name", "n", "detail"], rows).count("\n") == 1
    in_place = table(["name", "n", "detail"], rows, width=40).splitlines()
    assert all(len(line) <= 40 for line in in_place) and len(in_place) > 2
    assert in_place[2].startswith(" " * len("name  n  "))
    below = table(["name" * 8, "n", "detail"], rows, width=40).splitlines()
    assert all(len(line) <= 40 for line in below)
    assert "detail" not in below[0] and below[2].startswith("    one")
