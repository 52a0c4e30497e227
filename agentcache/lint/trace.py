"""Trace rules (AC3xx): the drift findings of ``explain``, one per turn whose prefix broke, at its trace line.

Only causes that a developer can act on are findings; a new session, an unbroken turn and a prompt below a hosted
API's minimum are not.
"""

from __future__ import annotations

import itertools
import json

from agentcache.drift import explain
from agentcache.drift.trace import TraceRecord, parse_trace_bytes
from agentcache.lint import breakpoints, template
from agentcache.lint.core import Checked, Finding, NotThisKind, Rule, SourceFile
from agentcache.predict import causes

UNREADABLE = Rule(
    "AC300",
    "unreadable-trace-line",
    "a trace line is not UTF-8, not JSON, or holds no chat request, so it was left out of the analysis",
    "write one request per line, as docs/trace-format.md describes",
)
_BY_CAUSE: dict[str, Rule] = {
    causes.TOOL_ORDER: Rule(
        "AC301",
        "tool-order",
        "the same tools arrived in another order, breaking the prefix at the tools",
        "build the tool list in a fixed order (sorted by name), or send requests through agentcache.canonicalize",
    ),
    causes.SCHEMA_KEY_ORDER: Rule(
        "AC302",
        "schema-key-order",
        "the same tool definitions arrived with their keys in another order",
        "serialize schemas with sorted keys, or send requests through agentcache.canonicalize",
    ),
    causes.VOLATILE_VALUE: Rule(
        "AC303",
        "volatile-system-prompt",
        "a timestamp, id or counter in the system prompt changed between turns",
        "move volatile values out of the system prompt (CanonicalPolicy(relocate_volatile=True) does it)",
    ),
    causes.WHITESPACE: Rule(
        "AC304",
        "non-canonical-bytes",
        "the same content arrived as different bytes (line endings, Unicode form)",
        "send requests through agentcache.canonicalize; the text of messages and fenced code, which it keeps as "
        "sent, must be re-sent as first sent",
    ),
    causes.TOOL_ADDED: Rule(
        "AC305",
        "tools-changed",
        "the tool set or a tool's definition changed mid-session",
        "keep the tool set fixed for a session; put tools that come and go after the stable ones",
    ),
    causes.SYSTEM_EDITED: Rule(
        "AC306",
        "system-prompt-edited",
        "the system prompt's text changed mid-session",
        "keep the system prompt fixed for a session; put per-turn instructions in a trailing message",
    ),
    causes.HISTORY_REWRITTEN: Rule(
        "AC307",
        "history-rewritten",
        "an earlier message was changed (reasoning stripped, compaction, truncation)",
        "re-send history exactly as sent before; compact rarely and all at once",
    ),
    causes.MODEL_CHANGED: Rule(
        "AC308",
        "model-changed",
        "the model changed mid-session, so nothing could be reused",
        "keep one model per session",
    ),
    causes.PARAMS_CHANGED: Rule(
        "AC310",
        "params-changed",
        "a parameter rendered into the prompt (response_format) changed mid-session",
        "keep response_format fixed for a session, or send structured-output turns in their own session",
    ),
    causes.EVICTED: Rule(
        "AC309",
        "evicted",
        "the server reported fewer cached tokens than the prefix allowed: evicted or expired",
        "raise the server's KV capacity, keep sessions warm, or route a session to one server",
    ),
}
_BY_CAUSE[causes.TOOL_REMOVED] = _BY_CAUSE[causes.TOOL_CHANGED] = _BY_CAUSE[causes.TOOL_ADDED]
_BY_CAUSE.update(template.BY_CAUSE)  # found in a trace when explain renders it with the model's template

RULES: tuple[Rule, ...] = (
    UNREADABLE,
    *sorted({*_BY_CAUSE.values(), *breakpoints.RULES}, key=lambda rule: rule.code),
)


def check(source: SourceFile) -> Checked:
    # Read as explain reads it: a line that is not UTF-8 is one finding, and the lines after it are still analysed.
    trace = parse_trace_bytes(source.data)
    if not trace.records and not source.must_judge:
        raise NotThisKind("no chat request on any line")
    if not source.must_judge and not _enveloped(source.data) and not _grows(trace.records):
        raise NotThisKind("a dataset of separate conversations, not a trace: its lines do not grow one", note=True)
    findings = [
        Finding(source.display, problem.line, 1, UNREADABLE.code, problem.message, UNREADABLE.hint)
        for problem in trace.problems
    ]
    for report in explain(trace, cache=source.cache):
        rule = _BY_CAUSE.get(report.cause)
        if rule is None:
            continue
        where = (
            ""
            if report.divergence is None
            else f" at {report.divergence.path}, token {report.divergence.token_index:,}"
        )
        message = (
            f"session {report.session!r} turn {report.turn}: {report.detail}{where}; "
            f"{report.wasted_tokens:,} tokens prefilled again"
        )
        findings.append(Finding(source.display, report.line, 1, rule.code, message, rule.hint))
    findings += breakpoints.findings(source.display, trace)
    return Checked(tuple(findings))


def _enveloped(data: bytes) -> bool:
    """Whether the first line is in agentcache's trace format (``{"session": ..., "request": {...}}``)."""
    first = next((line for line in data.split(b"\n") if line.strip()), b"")
    try:
        value = json.loads(first)
    except ValueError:
        return False
    return isinstance(value, dict) and isinstance(value.get("request"), dict)


def _grows(records: list[TraceRecord]) -> bool:
    """Whether bare request bodies read as one session: most requests resend the one before them and add to it,
    as an agent's turns do (a fine-tuning or eval dataset holds unrelated conversations, one per line)."""
    pairs = list(itertools.pairwise(records))
    growing = sum(
        len(later.request["messages"]) > len(earlier.request["messages"])
        and later.request["messages"][: len(earlier.request["messages"])] == earlier.request["messages"]
        for earlier, later in pairs
    )
    return bool(pairs) and growing * 2 > len(pairs)
