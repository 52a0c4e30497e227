"""``[tool.agentcache.lint]`` in pyproject.toml, ``--select``/``--ignore``/``--statistics``: rules chosen per file,
and the Python vocabulary extended with a project's own names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from agentcache.errors import InputError
from agentcache.lint import lint_paths, load

AGENT = """\
import time
from myapp.dates import stamp

SYSTEM_PROMPT = f"Now: {time.time()}"
persona_text = f"Be brief. {stamp()}"
Agent(persona=persona_text, system=SYSTEM_PROMPT)
"""


def _project(tmp_path: Path, table: str) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "pyproject.toml").write_text(f"[tool.agentcache.lint]\n{table}\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "agent.py").write_text(AGENT)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_agent.py").write_text(AGENT)
    return tmp_path


def _found(root: Path) -> list[tuple[str, int, str]]:
    result = lint_paths([root / "src", root / "tests"], config=load(root))
    return sorted((Path(f.path).relative_to(root).as_posix(), f.line, f.code) for f in result.findings)


def test_vocabulary_from_pyproject_finds_the_projects_own_sinks_and_sources(tmp_path: Path) -> None:
    root = _project(tmp_path, 'system-keywords = ["persona"]\nclock-calls = ["myapp.dates.stamp"]')
    assert _found(root) == [
        ("src/agent.py", 4, "AC101"),
        ("src/agent.py", 6, "AC101"),
        ("tests/test_agent.py", 4, "AC101"),
        ("tests/test_agent.py", 6, "AC101"),
    ]
    assert _found(_project(tmp_path / "plain", "")) == [
        ("src/agent.py", 4, "AC101"),
        ("tests/test_agent.py", 4, "AC101"),
    ]


def test_select_ignore_and_per_file_ignores(tmp_path: Path) -> None:
    root = _project(tmp_path, 'ignore = ["AC2"]\nper-file-ignores = {"tests/*" = ["AC1"]}')
    assert _found(root) == [("src/agent.py", 4, "AC101")]
    assert _found(_project(tmp_path / "other", 'select = ["AC2"]')) == []


def test_a_wrong_setting_says_what_is_allowed(tmp_path: Path) -> None:
    root = _project(tmp_path, 'sytem-keywords = ["persona"]')
    with pytest.raises(InputError, match="no setting 'sytem-keywords'; use select, ignore, per-file-ignores or"):
        _found(root)


def test_cli_statistics_and_command_line_selection(tmp_path: Path) -> None:
    root = _project(tmp_path, "")

    def run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "agentcache", "lint", *args, "src", "tests"],
            cwd=root, capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stderr
        return done.stdout

    assert run("--statistics") == "2\tAC101\tvolatile-system-prompt\nFound 2 findings in 2 files.\n"
    assert run("--statistics", "--ignore", "AC101") == "Found 0 findings in 2 files.\n"
    assert run("--select", "AC2", "--format", "json").count('"code"') == 0


def test_a_walk_leaves_test_code_out_unless_a_test_folder_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Tests make each run's prompt unique on purpose: below the path walked, test folders and files are left out;
    named (or walked from a test folder, as the path is written), they are linted."""
    root = _project(tmp_path / "project", "")
    for folder in ("tests_integ", "src/unit_tests"):
        (root / folder).mkdir()
        (root / folder / "agent.py").write_text(AGENT)
    (root / "src" / "conftest.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)

    def found(*paths: str) -> list[str]:
        return sorted({Path(f.path).as_posix() for f in lint_paths(paths).findings})

    assert found("project") == ["project/src/agent.py"]
    assert found("project/tests") == ["project/tests/test_agent.py"]
    assert found("project/src/conftest.py", "project/tests_integ") == [
        "project/src/conftest.py",
        "project/tests_integ/agent.py",
    ]

