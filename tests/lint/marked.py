"""Fixtures of Python code whose findings are marked in the code itself, shared by the lint's test modules.

A fixture marks each line that must be reported with ``# expect: CODE`` (several codes for several findings); a
fixture without marks must produce nothing. :func:`fixture_tests` makes a module's two parametrized tests from its
``POSITIVE`` and ``NEGATIVE`` fixtures.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from agentcache.lint import Finding, lint_paths


def lint_source(tmp_path: Path, source: str) -> tuple[str, list[Finding]]:
    """Lint ``source`` (dedented) as one module; its text and findings."""
    text = textwrap.dedent(source).lstrip("\n")
    path = tmp_path / "agent.py"
    path.write_text(text, encoding="utf-8")
    return text, list(lint_paths([path]).findings)


def expected(text: str) -> list[tuple[str, int]]:
    """(code, line) of each ``# expect:`` mark in ``text``, sorted."""
    return sorted(
        (code, number)
        for number, line in enumerate(text.splitlines(), 1)
        if "expect:" in line
        for code in re.findall(r"AC\d+", line.split("expect:", 1)[1])
    )


def write_package(folder: Path, **modules: str) -> Path:
    """A package of these modules (name -> source) in ``folder``."""
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for name, source in modules.items():
        (folder / f"{name}.py").write_text(source)
    return folder


def fixture_tests(
    positive: dict[str, str], negative: dict[str, str]
) -> tuple[Callable[[Path, str], None], Callable[[Path, str], None]]:
    """A module's two tests over its fixtures: every marked finding and no other; nothing at all."""

    @pytest.mark.parametrize("name", sorted(positive))
    def test_finds_what_each_fixture_marks(tmp_path: Path, name: str) -> None:
        text, findings = lint_source(tmp_path, positive[name])
        assert sorted((finding.code, finding.line) for finding in findings) == expected(text)

    @pytest.mark.parametrize("name", sorted(negative))
    def test_stays_quiet_where_nothing_reaches_a_sink(tmp_path: Path, name: str) -> None:
        _, findings = lint_source(tmp_path, negative[name])
        assert findings == []

    return test_finds_what_each_fixture_marks, test_stays_quiet_where_nothing_reaches_a_sink
