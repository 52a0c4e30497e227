"""The AC1xx rules, and the messages their findings carry."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from agentcache.lint.core import Rule
from agentcache.lint.python.values import ARRIVAL, CLOCK, FRESH_ID, PROCESS, RANDOM, SHUFFLE, Origin

VOLATILE_SYSTEM_PROMPT = Rule(
    "AC101",
    "volatile-system-prompt",
    "the current time, a random value, a fresh id or the order concurrent tasks finish in flows into a system prompt",
    "keep the system prompt constant: move the value into the latest user message, or drop it",
)
VOLATILE_TOOLS = Rule(
    "AC102",
    "volatile-tools",
    "the current time, a random value, a fresh id or the order concurrent tasks finish in flows into a tool list or "
    "an output schema",
    "build tool definitions once, from constants; pass per-call values as tool arguments or in the latest message",
)
SET_ORDER = Rule(
    "AC103",
    "set-order",
    "the iteration order of a set flows into a system prompt, a tool list or an output schema",
    "iterate in a defined order: sorted(...) the set, or keep the items in a list",
)
UNSORTED_SCHEMA_DUMP = Rule(
    "AC104",
    "unsorted-schema-dump",
    "json.dumps without sort_keys=True writes data ordered by a set into a system prompt, a tool list or an output "
    "schema",
    "pass sort_keys=True and sorted() the sets (or serialize with agentcache.canonical_json)",
)
VOLATILE_BEFORE_STABLE = Rule(
    "AC105",
    "volatile-before-stable-text",
    "a volatile value comes before a longer stable text in a system prompt",
    "put the stable text first and the volatile value last (better: in the latest user message)",
)
RULES = (VOLATILE_SYSTEM_PROMPT, VOLATILE_TOOLS, SET_ORDER, UNSORTED_SCHEMA_DUMP, VOLATILE_BEFORE_STABLE)

#: AC105 needs at least this many stable characters after the volatile value (about 8 tokens): below it,
#: moving the value gains less than one cache block.
MIN_STABLE_TAIL = 32

_KIND_WORDS = {
    CLOCK: "the current time",
    RANDOM: "a random value",
    FRESH_ID: "a fresh unique id",
    SHUFFLE: "a random order",
    ARRIVAL: "the order concurrent tasks finish in, at",
    PROCESS: "a value of the running process",
}


@dataclass
class Report:
    """A rule broken at one sink, gathering every origin that reaches it before its message is written."""

    rule: Rule
    node: ast.expr
    sink: str
    origins: set[Origin] = field(default_factory=set)
    first: frozenset[Origin] = frozenset()
    stable_after: int = 0


def message(report: Report) -> str:
    """The finding's message for an AC101, AC102, AC103 or AC105 report."""
    if report.rule is SET_ORDER:
        sites = _and([f"`{origin.label}` (line {origin.line})" for origin in sorted(report.origins)])
        return (
            f"{report.sink} takes its order from iterating a set at {sites}: a set's order follows its items' "
            "hashes, which differ between processes (salted for strings, memory addresses for most objects), so "
            "the bytes differ from run to run and the cache built by one run misses in the next"
        )
    if report.rule is UNSORTED_SCHEMA_DUMP:
        sites = _and([f"`{origin.label}` (line {origin.line})" for origin in sorted(report.origins)])
        return (
            f"{report.sink} includes {sites}, which serializes data built by iterating a set without "
            "sort_keys=True: its keys come in hash order, which differs from process to process"
        )
    if report.rule is VOLATILE_BEFORE_STABLE:
        return (
            f"{_describe(report.first)} comes before {report.stable_after} characters of stable text in "
            f"{report.sink}: that text can never be served from the cache, since the prefix differs before it"
        )
    if report.rule is VOLATILE_TOOLS:
        return (
            f"{report.sink} includes {_describe(frozenset(report.origins))}: it is sent before the messages, so "
            "every request misses the cache from there on"
        )
    if all(origin.kind == PROCESS for origin in report.origins):
        return (
            f"{report.sink} includes {_describe(frozenset(report.origins))}: it differs between processes, so no "
            "process reuses the prefix another cached from this point on"
        )
    return (
        f"{report.sink} includes {_describe(frozenset(report.origins))}: it differs between calls, so no request "
        "reuses the cached prefix from this point on"
    )


def _describe(origins: frozenset[Origin]) -> str:
    ordered = sorted(origins)
    parts = [f"{_KIND_WORDS[origin.kind]} `{origin.label}` (line {origin.line})" for origin in ordered[:3]]
    if len(ordered) > 3:
        parts.append(f"{len(ordered) - 3} more")
    return _and(parts)


def _and(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
