"""The engine: which files are walked, the order findings come in, usage errors, and pluggable file kinds."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from agentcache.errors import InputError
from agentcache.lint import (
    SKIP_DIRS,
    Checked,
    FileKind,
    Finding,
    Rule,
    SourceFile,
    core,
    kinds,
    lint_paths,
    register_kind,
    rules,
)
from agentcache.lint.python.check import PythonSession

VOLATILE = 'import uuid\nsystem_prompt = f"{uuid.uuid4()}"\n'


def test_walks_directories_in_order_and_skips_tool_caches(tmp_path: Path) -> None:
    for folder in ("b", "a/deep", *sorted(SKIP_DIRS)):
        (tmp_path / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / folder / "agent.py").write_text(VOLATILE)
    (tmp_path / "a" / "notes.txt").write_text("not linted")
    result = lint_paths([tmp_path])
    assert [Path(finding.path).relative_to(tmp_path).as_posix() for finding in result.findings] == [
        "a/deep/agent.py",
        "b/agent.py",
    ]
    assert result.files == 2


def test_findings_are_sorted_by_path_line_column_code(tmp_path: Path) -> None:
    (tmp_path / "z.py").write_text(VOLATILE)
    (tmp_path / "m.py").write_text('import time\nSYSTEM_PROMPT = f"{time.time()}"\ntools = [str(time.time())]\n')
    findings = lint_paths([tmp_path / "z.py", tmp_path]).findings
    assert list(findings) == sorted(findings, key=Finding.sort_key)
    assert [(Path(f.path).name, f.line, f.code) for f in findings] == [
        ("m.py", 2, "AC101"),
        ("m.py", 3, "AC102"),
        ("z.py", 2, "AC101"),
    ]


def test_a_file_named_twice_is_linted_once(tmp_path: Path) -> None:
    path = tmp_path / "agent.py"
    path.write_text(VOLATILE)
    result = lint_paths([path, tmp_path, str(path)])
    assert (result.files, len(result.findings)) == (1, 1)


def test_a_named_trace_without_requests_is_reported_line_by_line(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsonl"
    trace.write_text('{"turn": 1}\n')
    result = lint_paths([trace])
    assert result.files == 1
    assert [(f.line, f.code) for f in result.findings] == [(1, "AC300")]


@pytest.mark.parametrize(
    ("name", "problem"),
    [("missing.py", "no such file or directory"), ("notes.txt", "no lint rules for this kind of file")],
)
def test_usage_errors(tmp_path: Path, name: str, problem: str) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(InputError, match=problem):
        lint_paths([tmp_path / name])


def test_a_registered_kind_is_checked_and_its_rules_are_catalogued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interface trace rules use: a kind with its suffixes, rules and checker replaces the one registered."""
    monkeypatch.setattr(core, "_KINDS", dict(core._KINDS))
    drift = Rule("AC399", "test-drift", "a turn changed an earlier one", "keep earlier turns byte-identical")

    def check(source: SourceFile) -> Checked:
        lines = source.data.decode().splitlines()
        return Checked(
            tuple(
                Finding(source.display, number, 1, drift.code, "turn edited", drift.hint)
                for number, line in enumerate(lines, 1)
                if "edited" in line
            )
        )

    register_kind(FileKind("trace", (".jsonl",), (drift,), check))
    trace = tmp_path / "run.jsonl"
    trace.write_text('{"turn": 1}\n{"turn": 2, "edited": true}\n')
    [finding] = lint_paths([trace]).findings
    assert (finding.code, finding.line) == ("AC399", 2)
    assert rules()["AC399"] is drift
    assert [kind.name for kind in kinds()] == ["python", "tool-schema", "trace"]


def test_fixes_are_written_only_after_every_file_was_checked(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    original = '[{"name": "b", "parameters": {}}, {"name": "a", "parameters": {}}]'
    tools.write_text(original)
    (tmp_path / "package.json").write_text("{}")
    with pytest.raises(InputError):
        lint_paths([tools, tmp_path / "package.json"], fix=True)
    assert tools.read_text() == original


def test_parallel_jobs_find_what_one_process_finds() -> None:
    """The package itself and the lint fixtures, enough files for the pool: the same result, in the same order."""
    package = Path(core.__file__).parents[1]
    paths = [package, Path(__file__).parent]
    alone = lint_paths(paths, jobs=1)
    assert alone.files >= core.PARALLEL_FILES
    assert lint_paths(paths, jobs=2) == alone


def test_a_helper_learned_in_another_worker_is_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One file per worker task: no worker sees the helpers' modules, so the parent checks the importers again
    with what the helpers' workers taught, and a helper of a helper is found as in one process."""
    monkeypatch.setattr(core, "PARALLEL_FILES", 1)
    monkeypatch.setattr(core, "CHUNK_FILES", 1)
    package = tmp_path / "agent"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a_clock.py").write_text(
        "from datetime import datetime\n\ndef now_str():\n    return datetime.now().isoformat()\n"
    )
    (package / "b_dates.py").write_text("from .a_clock import now_str\n\ndef today():\n    return now_str()[:10]\n")
    (package / "c_graph.py").write_text(
        "from .a_clock import now_str\nfrom .b_dates import today\n\n"
        'SYSTEM_PROMPT = f"Today is {today()}"\nsystem_prompt = f"It is {now_str()}"\n'
    )
    alone = lint_paths([tmp_path], jobs=1)
    assert [(Path(f.path).name, f.line, f.code) for f in alone.findings] == [
        ("c_graph.py", 4, "AC101"),
        ("c_graph.py", 5, "AC101"),
    ]
    assert lint_paths([tmp_path], jobs=2) == alone


def test_a_worker_task_given_states_knows_only_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker keeps one run for the tasks that give states (what it read of the project's files serves them all),
    but each such task knows only the states it is given: a helper an earlier task knew is unknown to the next."""
    monkeypatch.setattr(core, "_worker", core._Run({}))
    monkeypatch.setattr(core, "_resumed", core._Run({}))
    (tmp_path / "agent").mkdir()
    (tmp_path / "agent" / "__init__.py").write_text("")
    (tmp_path / "agent" / "clock.py").write_text(
        "from datetime import datetime\n\ndef now_str():\n    return datetime.now().isoformat()\n"
    )
    (tmp_path / "agent" / "graph.py").write_text('from .clock import now_str\n\nSYSTEM_PROMPT = f"It is {now_str()}"\n')
    targets = {target[0].name: target for target in core._targets([tmp_path])}
    taught = core._Run({})
    taught.judge(targets["clock.py"], None)
    knowing = {"python": taught.sessions["python"].state()}
    knowing_nothing = {"python": PythonSession().state()}
    core._start_worker({})

    def codes(states: Mapping[str, object]) -> list[tuple[int, str]]:
        [outcome] = core._check_chunk([targets["graph.py"]], None, states)
        assert outcome.verdict is not None
        return [(finding.line, finding.code) for finding in outcome.verdict.findings]

    assert codes(knowing) == [(3, "AC101")]
    assert codes(knowing_nothing) == []
    assert codes(knowing) == [(3, "AC101")]


def test_a_module_checked_too_early_is_checked_again_in_a_worker_as_soon_as_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The importer comes first in the walk: once each helper's module is learned, the importer is sent to a
    worker again (twice: its why grows with the second helper), and the last of those checks is the one the end of
    the run adopts, with what one process finds."""
    monkeypatch.setattr(core, "PARALLEL_FILES", 1)
    monkeypatch.setattr(core, "CHUNK_FILES", 1)
    ready: list[list[str]] = []
    original = core._Early.ready

    def recorded(self: core._Early, name: str, named: Mapping[Path, Hashable]) -> dict[Path, Future[Any]]:
        found = original(self, name, named)
        ready.append(sorted(path.name for path in found))
        return found

    monkeypatch.setattr(core._Early, "ready", recorded)
    modules = {
        "__init__.py": "",
        "a_graph.py": "from .b_clock import now_str\nfrom .c_ids import run_id\n\n"
        'SYSTEM_PROMPT = f"It is {now_str()}"\nsystem_prompt = f"Run {run_id()}"\n',
        "b_clock.py": "from datetime import datetime\n\ndef now_str():\n    return datetime.now().isoformat()\n",
        "c_ids.py": "import uuid\n\ndef run_id():\n    return str(uuid.uuid4())\n",
        "d_other.py": "x = 1\n",  # after the last helper's task, the importer goes out with both helpers learned
    }
    (tmp_path / "agent").mkdir()
    for name, text in modules.items():
        (tmp_path / "agent" / name).write_text(text)
    alone = lint_paths([tmp_path], jobs=1)
    assert [(Path(f.path).name, f.line, f.code) for f in alone.findings] == [
        ("a_graph.py", 4, "AC101"),
        ("a_graph.py", 5, "AC101"),
    ]
    assert lint_paths([tmp_path], jobs=2) == alone
    assert ready == [["a_graph.py"]]
