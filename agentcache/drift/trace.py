"""The trace format: JSONL, one request per line, as recorders write it and ``explain``/``simulate`` read it.

A line is either ``{"session": str, "request": <body>, "usage": <usage>?, "ts": float?, "worker": str?,
"evaluated": bool?}`` or a bare request body; bare bodies all belong to one session, ``default``. See
docs/trace-format.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentcache.errors import InputError

DEFAULT_SESSION = "default"


@dataclass(frozen=True)
class TraceRecord:
    """One request of a trace, with where it came from."""

    line: int
    session: str
    request: dict[str, Any]
    usage: dict[str, Any] | None = None
    ts: float | None = None
    diagnosis: dict[str, Any] | None = None
    """The provider's cache diagnosis as its response carried it (``{"diagnostics": ...}`` from Anthropic,
    ``{"prompt_cache_diagnostics": ...}`` from OpenAI's Responses API), when recorded."""
    worker: str | None = None
    """The worker of a cluster that served the request, when the recorder knew it."""
    evaluated: bool = True
    """False when the server did not evaluate the prompt (no answer, or an error before evaluating): the request
    is kept for the record, and left out of the replay, since the server cached nothing of it."""


@dataclass(frozen=True)
class TraceProblem:
    """A line that could not be read; the rest of the trace is still analysed."""

    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class Trace:
    """The readable requests of a trace, in order, and the lines that could not be read."""

    records: list[TraceRecord]
    problems: list[TraceProblem]


def read_trace(path: str | Path) -> Trace:
    """Read a trace file. A missing or unreadable file raises InputError; a bad line becomes a TraceProblem.

    The file is read as bytes and each line decoded on its own, so a line that is not UTF-8 (a write cut inside
    a character, a stray byte) is one problem, not the end of the trace. Lines end at ``\\n`` only, as the
    recorder writes them (a CR before it is JSON whitespace)."""
    try:
        with open(path, "rb") as handle:
            return parse_trace(handle)
    except OSError as exc:
        raise InputError(f"cannot read trace {path}: {exc.strerror}") from None


def parse_trace_bytes(data: bytes) -> Trace:
    """The records and problems of a whole trace held in memory, split at ``\\n`` as :func:`read_trace` splits a
    file: a line that is not UTF-8 is one problem, and the lines after it are still read."""
    return parse_trace(data.split(b"\n"))


def parse_trace(lines: Iterable[str | bytes]) -> Trace:
    """The records and problems of ``lines``, numbered from 1; lines given as bytes are decoded as UTF-8."""
    trace = Trace([], [])
    for number, line in enumerate(lines, start=1):
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else line
        except UnicodeDecodeError as exc:
            trace.problems.append(TraceProblem(number, f"not UTF-8 ({exc.reason} at byte {exc.start} of the line)"))
            continue
        if not text.strip():
            continue
        try:
            record = _record(number, json.loads(text))
        except (ValueError, RecursionError) as exc:
            trace.problems.append(
                TraceProblem(number, f"not JSON ({exc})" if isinstance(exc, json.JSONDecodeError) else str(exc))
            )
            continue
        trace.records.append(record)
    return trace


def _record(line: int, value: Any) -> TraceRecord:
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    if "unrecorded" in value and "request" not in value:
        raise ValueError(f"request not recorded: {value['unrecorded']}")
    if "request" in value:
        request, session = value["request"], value.get("session", DEFAULT_SESSION)
        usage, ts = value.get("usage"), value.get("ts")
    else:
        request, session, usage, ts = value, DEFAULT_SESSION, None, None
    if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
        raise ValueError('not a chat request: expected an object with a "messages" array')
    if not isinstance(session, str):
        raise ValueError(f'"session" must be a string, got {type(session).__name__}')
    if usage is not None and not isinstance(usage, dict):
        raise ValueError('"usage" must be an object')
    if ts is not None and (isinstance(ts, bool) or not isinstance(ts, (int, float)) or not _finite(ts)):
        raise ValueError('"ts" must be a finite number (seconds)')
    enveloped = "request" in value
    diagnosis = value.get("diagnosis") if enveloped else None
    if diagnosis is not None and not isinstance(diagnosis, dict):
        raise ValueError('"diagnosis" must be an object')
    worker = value.get("worker") if enveloped else None
    if worker is not None and not isinstance(worker, str):
        raise ValueError(f'"worker" must be a string, got {type(worker).__name__}')
    evaluated = value.get("evaluated", True) if enveloped else True
    if not isinstance(evaluated, bool):
        raise ValueError(f'"evaluated" must be true or false, got {type(evaluated).__name__}')
    ts = None if ts is None else float(ts)
    return TraceRecord(line, session, request, usage, ts, diagnosis, worker, evaluated)


def _finite(number: float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an integer too large for a float
        return False


def write_trace(path: str | Path, records: list[TraceRecord]) -> None:
    """Write records in the trace format (used by the demo and tests)."""
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            line: dict[str, Any] = {"session": record.session, "request": record.request}
            if record.usage is not None:
                line["usage"] = record.usage
            if record.ts is not None:
                line["ts"] = record.ts
            if record.diagnosis is not None:
                line["diagnosis"] = record.diagnosis
            if record.worker is not None:
                line["worker"] = record.worker
            if not record.evaluated:
                line["evaluated"] = False
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")
