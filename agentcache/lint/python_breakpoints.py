"""Python rules for cache breakpoints (AC120-AC122): what a request literal built in code gets wrong with
``cache_control`` (Anthropic) or ``prompt_cache_breakpoint`` (OpenAI).

The check is syntactic, over each call's literal arguments: the markers written in dicts inside the call (and a
``cache_control=`` keyword, Anthropic's automatic mode), in prompt order (``tools``, ``system``, ``messages``,
then the rest as written). A marker built elsewhere and passed in by name is not seen. It runs after the AC1xx
analysis, on the files that parse.
"""

from __future__ import annotations

import ast
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path

from agentcache.cache.rules import MAX_BREAKPOINTS
from agentcache.lint.core import Checked, Finding, Rule, SourceFile
from agentcache.lint.python.check import PythonSession
from agentcache.lint.python.syntax import dotted, walk_module
from agentcache.lint.python.vocabulary import CLOCK_CALLS, ID_CALLS
from agentcache.predict.prompt import MARKERS

TOO_MANY = Rule(
    "AC120",
    "too-many-cache-breakpoints",
    "a request built here carries more cache breakpoints than the API allows (4, cache_control= included)",
    "keep at most 4 markers: the end of the tools and system prompt, and the end of the conversation "
    "(agentcache.breakpoints.place counts the ones already set)",
)
TTL_ORDER = Rule(
    "AC121",
    "cache-ttl-order",
    "a 1-hour cache_control comes after a 5-minute one in prompt order, which the API refuses",
    "put longer TTLs first: tools and system '1h', the conversation '5m'",
)
VOLATILE_MARKED = Rule(
    "AC122",
    "breakpoint-on-volatile-block",
    "a block marked as a cache breakpoint holds the current time or a fresh id, so it differs every call",
    "mark a block that stays the same, and move the volatile value after the last breakpoint",
)
RULES: tuple[Rule, ...] = (TOO_MANY, TTL_ORDER, VOLATILE_MARKED)

_ORDER = {"tools": 0, "system": 1, "messages": 2}
Node = ast.expr | ast.keyword
"""Where a finding points: the call, the marked dict, or a ``cache_control=`` keyword."""
_VOLATILE = CLOCK_CALLS | ID_CALLS
_MARKER_BYTES = tuple(marker.encode() for marker in MARKERS)


def check(source: SourceFile, checked: Checked, tree: ast.Module | None = None) -> Checked:
    """``checked`` (the AC1xx verdict on ``source``) plus the breakpoint findings, for a file that parses; ``tree``
    is its syntax tree when the AC1xx check parsed it whole. A file whose text names no marker is not parsed: every
    finding needs one, and most modules have none."""
    if not any(marker in source.data for marker in _MARKER_BYTES):
        return checked
    if tree is None:
        try:
            tree = ast.parse(source.data)
        except (SyntaxError, ValueError, RecursionError):
            return checked
    found = [
        Finding(source.display, node.lineno, node.col_offset + 1, rule.code, message, rule.hint)
        for node, rule, message in _findings(tree)
    ]
    return replace(checked, findings=(*checked.findings, *found))


class WithBreakpoints:
    """A lint run's Python session whose verdicts carry the breakpoint findings too."""

    def __init__(self, session: PythonSession) -> None:
        self.session = session

    def check(self, source: SourceFile) -> Checked:
        checked = self.session.check(source)
        tree, self.session.tree = self.session.tree, None  # freed with this check, not kept until the next one
        return check(source, checked, tree)

    def revisit(self) -> Mapping[Path, Hashable]:
        return self.session.revisit()

    def lesson(self) -> object:
        return self.session.lesson()

    def adopt(self, lesson: object) -> bool:
        return self.session.adopt(lesson)

    def state(self) -> object:
        return self.session.state()

    def resume(self, state: object) -> None:
        self.session.resume(state)


def _findings(tree: ast.Module) -> Iterator[tuple[Node, Rule, str]]:
    for call in (node for node in walk_module(tree) if isinstance(node, ast.Call)):
        markers = list(_markers(call))
        if len(markers) > MAX_BREAKPOINTS:
            yield call, TOO_MANY, f"this call sends {len(markers)} cache breakpoints; the API refuses more than 4"
        ttls = [_ttl(marker) for _, marker in markers]
        if any(a == "5m" and b == "1h" for i, a in enumerate(ttls) for b in ttls[i + 1 :]):
            yield call, TTL_ORDER, f"cache_control TTLs in prompt order are {ttls}: a '1h' one follows a '5m' one"
        for block, _ in markers:
            call_name = _volatile_call(block)
            if call_name is not None:
                yield (
                    block,
                    VOLATILE_MARKED,
                    f"this marked block calls {call_name}(): the prefix it ends is never reused",
                )


def _markers(call: ast.Call) -> Iterator[tuple[Node, ast.expr]]:
    """(the marked dict, its marker value) for every literal marker in the call's arguments, in prompt order;
    a ``cache_control=`` keyword is the automatic one (value given, no block)."""
    keywords = sorted(call.keywords, key=lambda k: _ORDER.get(k.arg or "", len(_ORDER)))
    for keyword in keywords:
        if keyword.arg in MARKERS:
            yield keyword, keyword.value
        else:
            yield from _marked_dicts(keyword.value)
    for argument in call.args:
        yield from _marked_dicts(argument)


def _marked_dicts(node: ast.expr) -> Iterator[tuple[Node, ast.expr]]:
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and key.value in MARKERS:
                yield node, value
        for value in node.values:
            yield from _marked_dicts(value)
    elif isinstance(node, (ast.List, ast.Tuple)):
        for element in node.elts:
            yield from _marked_dicts(element)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):  # [...] + [...]
        yield from _marked_dicts(node.left)
        yield from _marked_dicts(node.right)


def _ttl(marker: ast.expr) -> str:
    if isinstance(marker, ast.Dict):
        for key, value in zip(marker.keys, marker.values, strict=True):
            if isinstance(key, ast.Constant) and key.value == "ttl" and isinstance(value, ast.Constant):
                return str(value.value)
    return "5m"


def _volatile_call(block: Node) -> str | None:
    """The clock or id call inside the marked dict's own values, if any (not inside nested blocks)."""
    if not isinstance(block, ast.Dict):
        return None
    for value in block.values:
        if isinstance(value, (ast.Dict, ast.List)):
            continue
        for node in ast.walk(value):
            if isinstance(node, ast.Call):
                name = dotted(node.func)
                if name and any(full == name or full.endswith("." + name) for full in _VOLATILE):
                    return name
    return None
