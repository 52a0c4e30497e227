"""Trace rules: each drift cause a developer can act on is a finding at its trace line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from agentcache.lint import lint_paths, render, rules
from tests.drift.test_explain import add_tool, base, grown, new_timestamp, reorder_tools, strip_reasoning


def write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_each_turn_that_broke_is_a_finding_at_its_line(tmp_path: Path) -> None:
    first = base()
    turns = [first]
    for change in (reorder_tools, new_timestamp, add_tool, strip_reasoning, None):
        request = grown(copy.deepcopy(turns[-1]))
        if change is not None:
            change(request)
        turns.append(request)
    lines: list[Any] = [{"session": "s", "request": r} for r in turns]
    lines.insert(3, "{broken")
    result = lint_paths([write(tmp_path / "trace.jsonl", lines)])
    assert [(f.line, f.code) for f in result.findings] == [
        (2, "AC301"),
        (3, "AC303"),
        (4, "AC300"),
        (5, "AC305"),
        (6, "AC307"),
    ]
    timestamp = result.findings[1]
    assert "timestamp in the system prompt" in timestamp.message and "$.messages[0].content" in timestamp.message
    assert "tokens prefilled again" in timestamp.message


def test_clean_trace_has_no_findings(tmp_path: Path) -> None:
    first = base()
    result = lint_paths([write(tmp_path / "clean.jsonl", [first, grown(first)])])
    assert result.findings == ()
    assert result.files == 1


def test_trace_rules_are_in_the_catalogue_and_sarif(tmp_path: Path) -> None:
    catalogue = rules()
    assert {f"AC30{i}" for i in range(10)} <= set(catalogue)
    first = base()
    second = grown(first)
    reorder_tools(second)
    result = lint_paths([write(tmp_path / "t.jsonl", [first, second])])
    sarif = json.loads(render(result, "sarif"))
    assert [r["ruleId"] for r in sarif["runs"][0]["results"]] == ["AC301"]


def test_raw_line_separators_inside_strings_do_not_split_lines(tmp_path: Path) -> None:
    first = base()
    first["messages"][1]["content"] += "\u2028 and \x0c"
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [first, grown(first)]), encoding="utf-8")
    assert lint_paths([path]).findings == ()


def test_a_line_that_is_not_utf8_is_a_finding_and_the_lines_after_it_are_still_analysed(tmp_path: Path) -> None:
    """As explain reads a trace: the bad line is named, and a drift after it is still found."""
    first = base()
    changed = grown(copy.deepcopy(first))
    reorder_tools(changed)
    path = tmp_path / "bad.jsonl"
    path.write_bytes(json.dumps(first).encode() + b"\n\xff\n" + json.dumps(changed).encode() + b"\n")
    findings = lint_paths([path]).findings
    assert [(f.line, f.code) for f in findings] == [(2, "AC300"), (3, "AC301")]
    assert "not UTF-8" in findings[0].message


def test_a_walked_dataset_is_skipped_with_a_note_and_bare_turns_that_grow_are_a_trace(tmp_path: Path) -> None:
    """Issue 15: a fine-tuning dataset (one unrelated conversation per line) is no trace; its lines would read as
    one session whose history is rewritten on every line. Named on the command line, it is still judged."""
    system = {"role": "system", "content": "You are helpful."}
    dataset = [
        {"messages": [system, {"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]}
        for i in range(5)
    ]
    folder = tmp_path / "data"
    folder.mkdir()
    path = write(folder / "train.jsonl", dataset)
    walked = lint_paths([folder])
    assert walked.findings == () and walked.files == 0
    assert walked.notes == (
        f"{path}: skipped: a dataset of separate conversations, not a trace: its lines do not grow one",
    )
    assert [f.code for f in lint_paths([path]).findings] == ["AC307"] * 4
    turns = [{"messages": [system, {"role": "user", "content": "q"}]}]
    for i in range(3):
        turns.append({"messages": [*turns[-1]["messages"], {"role": "assistant", "content": f"a{i}"}]})
    write(folder / "train.jsonl", turns)
    assert lint_paths([folder]).files == 1
