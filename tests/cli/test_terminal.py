"""Colour only on a terminal, never with NO_COLOR; a progress bar on long traces, on a terminal only.

The terminal is a real pseudo-terminal (``pty``), as a user's shell gives the command.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

ESC = b"\x1b["


def run_on_tty(args: list[str], env: dict[str, str], stream: str = "stdout") -> bytes:
    """Run the CLI with ``stream`` on a pseudo-terminal (the other discarded); what the terminal received."""
    master, slave = pty.openpty()
    target = {stream: slave}
    proc = subprocess.Popen(
        [sys.executable, "-m", "agentcache", *args],
        stdout=target.get("stdout", subprocess.DEVNULL),
        stderr=target.get("stderr", subprocess.DEVNULL),
        env=env,
    )
    os.close(slave)
    received = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 1.0)[0]:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        received += chunk
    proc.wait(timeout=120)
    os.close(master)
    return received


@pytest.fixture()
def env() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "NO_COLOR"}


def test_colour_on_a_terminal(env: dict[str, str]) -> None:
    screen = run_on_tty(["demo", "--turns", "3"], env)
    assert ESC + b"1m" in screen  # bold header
    assert ESC + b"31m" in screen  # drift causes in red


def test_no_colour_with_no_color(env: dict[str, str]) -> None:
    screen = run_on_tty(["demo", "--turns", "3"], {**env, "NO_COLOR": "1"})
    assert b"turn" in screen and ESC not in screen


def test_no_colour_on_a_pipe(env: dict[str, str]) -> None:
    result = subprocess.run([sys.executable, "-m", "agentcache", "demo", "--turns", "3"], capture_output=True, env=env)
    assert b"turn" in result.stdout and ESC not in result.stdout


@pytest.fixture(scope="module")
def long_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("long") / "trace.jsonl"
    history: list[dict[str, str]] = []
    with path.open("w") as handle:
        for turn in range(220):
            history.append({"role": "user", "content": f"step {turn}"})
            handle.write(json.dumps({"model": "m", "messages": history}) + "\n")
    return path


def test_progress_bar_on_a_terminal_only(env: dict[str, str], long_trace: Path) -> None:
    screen = run_on_tty(["explain", str(long_trace), "--format", "json"], env, stream="stderr")
    assert b"\rexplain [" in screen and b"220/220" in screen
    piped = subprocess.run(
        [sys.executable, "-m", "agentcache", "explain", str(long_trace), "--format", "json"],
        capture_output=True,
        env=env,
    )
    assert piped.stderr == b""
    assert len(json.loads(piped.stdout)["turns"]) == 220


def test_lint_colours_on_a_terminal_only(env: dict[str, str], tmp_path: Path) -> None:
    source = tmp_path / "agent.py"
    source.write_text('import time\nm = [{"role": "system", "content": f"{time.time()}"}]\n')
    screen = run_on_tty(["lint", str(source)], env)
    assert ESC + b"31mAC101" in screen
    assert ESC not in run_on_tty(["lint", str(source)], {**env, "NO_COLOR": "1"})
