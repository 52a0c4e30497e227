"""Reading traces: both line shapes, and bad lines reported with their number while the rest is read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcache.drift.trace import TraceRecord, parse_trace, read_trace, write_trace
from agentcache.errors import InputError

REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_records_and_bare_bodies() -> None:
    lines = [
        json.dumps({"session": "a", "request": REQUEST, "usage": {"prompt_tokens": 3}, "ts": 5}),
        json.dumps(REQUEST),
        "",
    ]
    trace = parse_trace(lines)
    assert trace.problems == []
    assert [(r.line, r.session, r.ts) for r in trace.records] == [(1, "a", 5.0), (2, "default", None)]
    assert trace.records[0].usage == {"prompt_tokens": 3}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{oops", "not JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('{"model": "m"}', 'not a chat request: expected an object with a "messages" array'),
        (json.dumps({"session": 3, "request": REQUEST}), '"session" must be a string'),
        (json.dumps({"request": REQUEST, "usage": 4}), '"usage" must be an object'),
        (json.dumps({"request": REQUEST, "ts": "noon"}), '"ts" must be a finite number'),
        (json.dumps({"request": REQUEST, "worker": 1}), '"worker" must be a string, got int'),
        (json.dumps({"request": REQUEST, "evaluated": "no"}), '"evaluated" must be true or false, got str'),
    ],
)
def test_bad_lines_are_reported_and_skipped(line: str, message: str) -> None:
    trace = parse_trace([json.dumps(REQUEST), line, json.dumps(REQUEST)])
    assert [r.line for r in trace.records] == [1, 3]
    assert len(trace.problems) == 1 and trace.problems[0].line == 2
    assert message in str(trace.problems[0])


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"cannot read trace .*nope\.jsonl: No such file"):
        read_trace(tmp_path / "nope.jsonl")


def test_write_then_read(tmp_path: Path) -> None:
    records = [
        TraceRecord(1, "s", REQUEST, {"prompt_tokens": 1}, 2.5, worker="http://127.0.0.1:31001"),
        TraceRecord(2, "t", REQUEST, evaluated=False),
        TraceRecord(3, "t", REQUEST),
    ]
    write_trace(tmp_path / "t.jsonl", records)
    assert read_trace(tmp_path / "t.jsonl").records == records


@pytest.mark.parametrize("ts", ["1" + "0" * 400, "NaN", "Infinity", "1e999"])
def test_timestamps_must_be_finite(ts: str) -> None:
    trace = parse_trace(['{"request": {"messages": []}, "ts": ' + ts + "}"])
    assert trace.records == [] and "must be a finite number" in trace.problems[0].message


def test_a_line_that_is_not_utf8_is_a_problem_and_the_rest_is_read(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    good = json.dumps({"session": "s", "request": REQUEST}).encode()
    path.write_bytes(good + b"\n" + good[:20] + b"\xff\xfe" + good[20:] + b"\n" + good + b"\r\n")
    trace = read_trace(path)
    assert [r.line for r in trace.records] == [1, 3]
    assert [str(p) for p in trace.problems] == ["line 2: not UTF-8 (invalid start byte at byte 20 of the line)"]
