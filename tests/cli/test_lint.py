"""``agentcache lint`` through the real entry point: exit codes, formats, --fix, error lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcache import cli
from agentcache.cli import lint

TOOLS = '[\n    {"name": "b", "parameters": {}},\n    {"name": "a", "parameters": {}}\n]\n'


@pytest.fixture(autouse=True)
def _lint_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """Register the subcommand the way agentcache.cli.COMMANDS will, if it does not already."""
    if lint not in cli.COMMANDS:
        monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, lint))


def test_exit_0_when_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "agent.py").write_text('SYSTEM_PROMPT = "You are terse."\n')
    assert cli.main(["lint", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "All checks passed (1 file checked).\n"


def test_exit_1_on_findings_with_relative_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("src").mkdir()
    Path("src/agent.py").write_text('import uuid\nsystem_prompt = f"run {uuid.uuid4()}"\n')
    assert cli.main(["lint", "."]) == 1
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("src/agent.py:2:17: AC101 the system prompt includes a fresh unique id")
    assert cli.main(["lint", "--format", "sarif", "src"]) == 1
    log = json.loads(capsys.readouterr().out)
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "src/agent.py"


def test_fix_rewrites_and_exits_0_when_nothing_is_left(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tools.json"
    path.write_text(TOOLS)
    assert cli.main(["lint", "--format", "json", "--fix", str(path)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [finding["code"] for finding in document["fixed"]] == ["AC201"]
    assert document["summary"]["rewritten"] == [str(path)]
    assert path.read_text() == json.dumps(json.loads(TOOLS)[::-1], indent=4) + "\n"
    assert cli.main(["lint", str(path)]) == 0


@pytest.mark.parametrize(
    ("name", "content", "problem"),
    [
        ("missing.py", None, "cannot read"),
        ("notes.txt", "hello", "no lint rules for this kind of file"),
        ("package.json", '{"name": "web"}', "holds no tool definitions"),
    ],
)
def test_exit_2_with_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, content: str | None, problem: str
) -> None:
    if content is not None:
        (tmp_path / name).write_text(content)
    assert cli.main(["lint", str(tmp_path / name)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    [line] = captured.err.splitlines()
    assert line.startswith("agentcache lint: error: ") and problem in line


def test_bad_arguments_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (
        ["lint"],
        ["lint", "--format", "xml", "."],
        ["lint", "--jobs", "0", "."],
        ["lint", "--jobs", "x", "."],
    ):
        with pytest.raises(SystemExit) as exited:
            cli.main(argv)
        assert exited.value.code == 2
        [line] = capsys.readouterr().err.splitlines()  # one line, as every other error
        assert line.startswith("agentcache lint: error: ") and line.endswith("see agentcache lint --help")


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_a_file_name_that_is_not_utf8_gives_valid_output(tmp_path: Path, fmt: str) -> None:
    import os
    import subprocess
    import sys

    source = b'import time\nm = [{"role": "system", "content": f"{time.time()}"}]\n'
    (Path(os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xff.py"))).write_bytes(source)
    result = subprocess.run(
        [sys.executable, "-m", "agentcache", "lint", str(tmp_path), "--format", fmt], capture_output=True, timeout=60
    )
    assert result.returncode == 1
    text = result.stdout.decode("utf-8")  # valid UTF-8
    if fmt != "text":
        out = json.loads(text)
        if fmt == "sarif":
            uri = out["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            assert uri.endswith("%FF.py")


def test_the_pre_commit_hook_skips_staged_json_that_holds_no_tools(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """pre-commit names every staged file its ``files`` pattern takes: the hook's own entry (read from
    ``.pre-commit-hooks.yaml``) skips a data ``.json`` and a dataset ``.jsonl`` with a note, as a walk does, and
    still lints the tool file (its canonical form too, as a named file) and the module."""
    hooks = (Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml").read_text()
    entry = next(line.split(":", 1)[1].split() for line in hooks.splitlines() if line.strip().startswith("entry:"))
    assert entry[:2] == ["agentcache", "lint"]
    (tmp_path / "package.json").write_text('{"name": "web", "version": "1.0.0"}\n')
    (tmp_path / "tools.json").write_text(TOOLS)
    (tmp_path / "agent.py").write_text('SYSTEM_PROMPT = "You are terse."\n')
    (tmp_path / "data.jsonl").write_text('{"text": "hello"}\n{"text": "bye"}\n')
    staged = [str(tmp_path / name) for name in ("package.json", "tools.json", "agent.py", "data.jsonl")]
    assert cli.main([*entry[1:], "--format", "json", *staged]) == 1
    document = json.loads(capsys.readouterr().out)
    assert [finding["code"] for finding in document["findings"]] == ["AC201"]
    assert any("package.json: skipped: holds no tool definitions" in note for note in document["notes"])
    assert any("data.jsonl: skipped: no chat request" in note for note in document["notes"])
