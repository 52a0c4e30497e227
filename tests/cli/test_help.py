"""--help and usage errors read as a command line's, not as Python's (issue 14)."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from agentcache.cli import COMMANDS, build_parser, main
from agentcache.cli.options import PositiveInt


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentcache", *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", [None, *(module.__name__.rsplit(".", 1)[1] for module in COMMANDS)])
def test_help_has_no_restructuredtext_quotes(command: str | None) -> None:
    result = run(*([command] if command else []), "--help")
    assert result.returncode == 0
    assert "``" not in result.stdout


def _numeric_options() -> list[tuple[str, str]]:
    """(command, option) for every option of every subcommand that takes a number, found in the parser."""
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [
        (name, option)
        for name, parser in commands.choices.items()
        for action in parser._actions
        if action.type in (int, float) or isinstance(action, PositiveInt)
        for option in action.option_strings
    ]


def test_the_numeric_options_are_found() -> None:
    assert {("simulate", "--capacity"), ("report", "--block-size"), ("demo", "--turns")} <= set(_numeric_options())


@pytest.mark.parametrize(("command", "option"), _numeric_options())
@pytest.mark.parametrize("value", ["x", "1.5", "0", "-3"])
def test_a_bad_number_says_which_option_wanted_what(
    command: str, option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every numeric option, of every subcommand, refuses a bad value in the same words: no "invalid int value",
    no name of a Python function."""
    args = [command, *(["trace.jsonl"] if command in ("explain", "simulate", "report") else [])]
    with pytest.raises(SystemExit) as exit_:
        main([*args, f"{option}={value}"])
    assert exit_.value.code == 2
    assert f"error: {option} must be a positive integer, got {value!r}; see agentcache {command} --help" in (
        capsys.readouterr().err
    )
