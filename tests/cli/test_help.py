"""--help and usage errors read as a command line's, not as Python's (issue 14)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentcache.cli import COMMANDS


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentcache", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", [None, *(module.__name__.rsplit(".", 1)[1] for module in COMMANDS)])
def test_help_has_no_restructuredtext_quotes(command: str | None) -> None:
    result = run(*([command] if command else []), "--help")
    assert result.returncode == 0
    assert "``" not in result.stdout


def test_a_bad_number_names_no_python_function() -> None:
    result = run("demo", "--turns", "x")
    assert result.returncode == 2
    assert "_positive" not in result.stderr and "whole number" in result.stderr
