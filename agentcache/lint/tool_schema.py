"""Tool-schema files (AC2xx): JSON files of tool definitions, compared with agentcache's canonical form.

A file is recognized when it holds tools in one of three layouts:

- an array of tool definitions (OpenAI ``{"type": "function", "function": {...}}``, Anthropic or legacy
  ``{"name": ..., "input_schema" | "parameters": ...}``, built-ins such as ``{"type": "web_search"}`` beside them);
- an object with a ``tools`` or ``functions`` array of them: a request body, checked as one;
- a single tool definition.

A bare JSON Schema is not recognized: where it lands in a request (tool parameters, ``response_format``, or
nowhere near a model) is not in the file. Every finding is a place where :func:`agentcache.canonicalize` would
change the file, found by walking the file's positioned tree beside its canonical form, so ``--fix`` (which
writes that canonical form) removes exactly the fixable findings and nothing else changes meaning.

A tool-schema file found by walking a directory is only parsed and canonicalized (AC001 when it does not parse,
AC205 when ``canonicalize`` refuses it: two tools of one name, which the APIs refuse too): its bytes are the same
on every call and in every process, so its form costs no cache hit between the calls of one deployment, which is
what a walk of a project looks for. Its canonical form is checked, and fixed, when it is named (``agentcache lint
tools.json``, as the pre-commit hook names each file).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from agentcache.canon import CanonicalPolicy, canonical_json, canonicalize
from agentcache.canon.jsonvalue import child_path
from agentcache.canon.rules import TOOL_FIELDS, tool_name
from agentcache.errors import RequestError
from agentcache.lint.core import UNPARSABLE, Checked, Finding, NotThisKind, Rule, SourceFile
from agentcache.lint.jsonpos import JsonSyntaxError, LineIndex, Member, Node, parse

UNSORTED_TOOLS = Rule(
    "AC201",
    "unsorted-tools",
    "tool definitions are not sorted by name",
    "sort the tools by name (agentcache lint --fix does)",
    fixable=True,
)
UNSORTED_KEYS = Rule(
    "AC202",
    "unsorted-keys",
    "object keys are not in canonical (sorted) order",
    "sort the keys of every object (agentcache lint --fix does)",
    fixable=True,
)
UNSORTED_SET = Rule(
    "AC203",
    "unsorted-set-array",
    "a JSON Schema array whose order means nothing (required, type, ...) is not sorted",
    "sort the array's strings (agentcache lint --fix does)",
    fixable=True,
)
NON_CANONICAL_TEXT = Rule(
    "AC204",
    "non-canonical-text",
    "a string differs from its canonical form (CR line endings, Unicode not NFC, tool-call arguments)",
    "use LF line endings and NFC text (agentcache lint --fix rewrites the string)",
    fixable=True,
)
NOT_CANONICALIZABLE = Rule(
    "AC205",
    "not-canonicalizable",
    "agentcache.canonicalize refuses the file (two tools with one name, a value outside JSON's safe range)",
    "fix the value the message names; the file can then be canonicalized",
)
NUMBER_NOT_REWRITABLE = Rule(
    "AC206",
    "number-not-rewritable",
    "--fix would write a number otherwise than the file does (more digits than a double holds, an exponent, "
    "trailing zeros, -0), so it leaves the file as it is",
    "write the number as the message shows if that is the value meant, then run --fix again; or fix the other "
    "findings by hand",
)
RULES = (UNSORTED_TOOLS, UNSORTED_KEYS, UNSORTED_SET, NON_CANONICAL_TEXT, NOT_CANONICALIZABLE, NUMBER_NOT_REWRITABLE)

_KEEP_ORDER = CanonicalPolicy(sort_tools=False)
#: In a file that does not parse, these keys make it look like a tools file (walked files only; see check).
_TOOLISH = re.compile(r'"(?:tools|functions|input_schema|parameters)"\s*:')


@dataclass(frozen=True)
class _Layout:
    """How the file maps onto a request: ``root`` is the JSONPath, in the request, of the file's root."""

    request: dict[str, Any]
    root: str
    unwrap: Callable[[dict[str, Any]], Any]


def check(source: SourceFile) -> Checked:
    """Findings for one JSON file, and its canonical bytes when it can be canonicalized."""
    bom = source.data.startswith(b"\xef\xbb\xbf")
    data = source.data[3:] if bom else source.data  # columns on line 1 count from after the BOM, as editors do
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not (source.must_judge or _TOOLISH.search(data.decode("utf-8", "replace"))):
            raise NotThisKind("not UTF-8") from None
        return Checked((_unparsable_bytes(source.display, data, exc),))
    if not (source.must_judge or _TOOLISH.search(text)):
        _refuse_quickly(text)
    lines = LineIndex(text)
    try:
        root = parse(text)
    except JsonSyntaxError as exc:
        if not (source.must_judge or _TOOLISH.search(text)):
            raise NotThisKind(f"not JSON ({exc.message})") from None
        line, column = lines.position(exc.offset)
        message = f"not JSON: {exc.message}"
        return Checked((Finding(source.display, line, column, UNPARSABLE.code, message, UNPARSABLE.hint),))
    layout = _layout(root.value)
    report = _Report(source.display, lines, root, layout.root)
    try:
        ordered = canonicalize(layout.request)
        kept = canonicalize(layout.request, _KEEP_ORDER)
    except RequestError as exc:
        report.at_path(NOT_CANONICALIZABLE, exc.path, f"canonicalize refuses it: {exc.problem}", exc.hint)
        return Checked(tuple(report.findings))
    if not source.explicit:  # found by walking: its bytes are the same on every call (the module's docstring)
        return Checked(())
    for field_name, node in _tool_lists(root, layout):
        report.tool_order(node, kept[field_name], ordered[field_name])
    report.compare(root, layout.unwrap(kept), "$")
    report.key_order_summary()
    indent = _indent(text)
    if report.findings and report.numbers_rewritten(root, "$", text, indent):  # the rewrite would change a number
        return Checked(tuple(report.findings))
    return Checked(tuple(report.findings), _serialize(layout.unwrap(ordered), text, bom, indent))


def _refuse_quickly(text: str) -> None:
    """Raise :class:`NotThisKind` for a walked, not tool-like file that the stdlib's C parser reads as JSON
    holding no tools: most JSON files in a project are data, and the positioned parser is pure Python. Where both
    parsers accept the text they read the same structure, and where only the stdlib's does (a repeated key, NaN)
    the positioned one's error would refuse the file too, so the verdict is the one the full check gives."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return  # the full check says why
    _layout(value)


def _layout(value: Any) -> _Layout:
    if isinstance(value, list) and all(isinstance(item, dict) for item in value) and any(map(_is_tool, value)):
        return _Layout({"tools": value}, "$.tools", lambda canon: canon["tools"])
    if isinstance(value, dict):
        fields = [name for name in TOOL_FIELDS if isinstance(value.get(name), list)]
        if any(_is_tool(item) for name in fields for item in value[name]):
            return _Layout(value, "$", lambda canon: canon)
        if _is_tool(value):
            return _Layout({"tools": [value]}, "$.tools[0]", lambda canon: canon["tools"][0])
    raise NotThisKind(
        "holds no tool definitions (an array of tools, an object with a 'tools' or 'functions' array, or one "
        "tool with 'parameters' or 'input_schema'); lint checks tool-schema JSON files only"
    )


def _is_tool(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    function = value.get("function")
    if isinstance(function, dict):
        return isinstance(function.get("name"), str)
    return isinstance(value.get("name"), str) and ("parameters" in value or "input_schema" in value)


def _tool_lists(root: Node, layout: _Layout) -> Iterator[tuple[str, Node]]:
    """(request field, node) of each tool array in the file."""
    if layout.root == "$.tools":
        yield "tools", root
    elif layout.root == "$":
        for member in root.members:
            if member.key in TOOL_FIELDS and isinstance(member.node.value, list):
                yield member.key, member.node


class _Report:
    """Findings for one file, located through its positioned tree."""

    def __init__(self, display: str, lines: LineIndex, root: Node, request_root: str) -> None:
        self.display = display
        self.lines = lines
        self.root = root
        self.request_root = request_root
        self.findings: list[Finding] = []
        self.unsorted_objects: list[tuple[str, Member, str]] = []

    def add(self, rule: Rule, start: int, end: int, message: str, hint: str | None = None) -> None:
        line, column = self.lines.position(start)
        end_line, end_column = self.lines.position(end)
        self.findings.append(
            Finding(self.display, line, column, rule.code, message, hint or rule.hint, end_line, end_column)
        )

    def tool_order(self, node: Node, kept: list[Any], ordered: list[Any]) -> None:
        """AC201 at the first tool not where sorting by name puts it."""
        for index, (tool, expected) in enumerate(zip(kept, ordered, strict=True)):
            if canonical_json(tool) != canonical_json(expected):
                item = node.items[index]
                name, want = tool_name(tool), tool_name(expected)
                self.add(
                    UNSORTED_TOOLS,
                    *_name_span(item),
                    f"tools are not sorted by name: {_quote(name)} is at position {index + 1}, where sorting "
                    f"puts {_quote(want)}; two agents sending these tools in different orders share no cache",
                )
                return

    def compare(self, node: Node, canon: Any, path: str) -> None:
        """Walk the file's tree beside its canonical form (same tool order), reporting what differs."""
        value = node.value
        if isinstance(value, dict) and isinstance(canon, dict):
            keys = [member.key for member in node.members]
            expected = sorted(keys)
            if keys != expected:
                first = next(i for i, (key, want) in enumerate(zip(keys, expected, strict=True)) if key != want)
                self.unsorted_objects.append((path, node.members[first], expected[first]))
            for member in node.members:
                if member.key in canon:
                    self.compare(member.node, canon[member.key], child_path(path, member.key))
        elif isinstance(value, list) and isinstance(canon, list) and len(value) == len(canon):
            if value != canon and all(isinstance(item, str) for item in value) and sorted(value) == canon:
                self.add(
                    UNSORTED_SET,
                    node.start,
                    node.end,
                    f"{path} holds a set (its order means nothing to JSON Schema) but is not sorted: "
                    f"{_brief(value)} should be {_brief(canon)}",
                )
                return
            for index, (item, canon_item) in enumerate(zip(node.items, canon, strict=True)):
                self.compare(item, canon_item, f"{path}[{index}]")
        elif isinstance(value, str) and isinstance(canon, str) and value != canon:
            self.add(NON_CANONICAL_TEXT, node.start, node.end, f"{path} {_text_difference(value)}")

    def key_order_summary(self) -> None:
        """AC202 once per file, at the first object out of order: a hand-written file usually has dozens."""
        if not self.unsorted_objects:
            return
        path, member, want = self.unsorted_objects[0]
        count = len(self.unsorted_objects)
        others = f" (and {count - 1} more object{'s' if count > 2 else ''})" if count > 1 else ""
        self.add(
            UNSORTED_KEYS,
            member.key_start,
            member.key_end,
            f"keys of {path} are not in canonical order{others}: {json.dumps(want)} sorts before "
            f"{json.dumps(member.key)}; the same schema with keys in another order is different bytes",
        )

    def numbers_rewritten(self, node: Node, path: str, text: str, indent: str | int | None) -> bool:
        """AC206 at each number of the file that its rewrite would write otherwise (``1E2`` as ``100.0``, ``1.50``
        as ``1.5``, ``0.1000000000000000001`` as ``0.1``): a fix never changes a number's value or its text.
        Whether there was one."""
        value = node.value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            written, token = _dumps(value, indent), text[node.start : node.end]
            if written != token:
                self.add(
                    NUMBER_NOT_REWRITABLE,
                    node.start,
                    node.end,
                    f"{path}: --fix would write the number {token} as {written}, so it rewrote nothing",
                )
            return written != token
        found = [self.numbers_rewritten(m.node, child_path(path, m.key), text, indent) for m in node.members]
        found += [self.numbers_rewritten(item, f"{path}[{i}]", text, indent) for i, item in enumerate(node.items)]
        return any(found)

    def at_path(self, rule: Rule, request_path: str, message: str, hint: str) -> None:
        """A finding at a request JSONPath (as agentcache's errors name them), translated to this file."""
        path = "$" + request_path[len(self.request_root) :] if request_path.startswith(self.request_root) else "$"
        node = _find(self.root, "$", path) or self.root
        if self.request_root != "$":  # paths the message itself names are in request terms too
            message = message.replace(self.request_root + "[", "$[").replace(self.request_root + ".", "$.")
        self.add(rule, node.start, node.end, f"{path}: {message}", hint)


def _find(node: Node, path: str, target: str) -> Node | None:
    """The node at ``target``, or the deepest node on the way to it."""
    if path == target:
        return node
    for member in node.members:
        child = child_path(path, member.key)
        if _within(target, child):
            return _find(member.node, child, target) or member.node
    for index, item in enumerate(node.items):
        child = f"{path}[{index}]"
        if _within(target, child):
            return _find(item, child, target) or item
    return None


def _within(target: str, path: str) -> bool:
    return target.startswith(path) and target[len(path) : len(path) + 1] in ("", ".", "[")


def _name_span(tool: Node) -> tuple[int, int]:
    """The span of a tool's name (``function.name`` or ``name``), else of the whole tool."""
    for member in tool.members:
        if member.key == "function":
            for inner in member.node.members:
                if inner.key == "name":
                    return inner.node.start, inner.node.end
        if member.key == "name":
            return member.node.start, member.node.end
    return tool.start, tool.end


def _text_difference(text: str) -> str:
    if "\r" in text:
        return "has CR line endings, which canonical prose turns into LF"
    if not unicodedata.is_normalized("NFC", text):
        return "is not in Unicode NFC, which canonical prose uses"
    return "is JSON that canonical tool-call arguments re-serialize (sorted keys, no whitespace)"


def _serialize(value: Any, text: str, bom: bool, indent: str | int | None) -> bytes:
    """The canonical value in the file's own style: its indent (none: compact), its line endings, its BOM."""
    out = _dumps(value, indent) + "\n"
    if "\r\n" in text:
        out = out.replace("\n", "\r\n")
    return (b"\xef\xbb\xbf" if bom else b"") + out.encode()


def _dumps(value: Any, indent: str | int | None) -> str:
    """A JSON value as the rewrite writes it: canonical bytes, or sorted keys with the file's indent."""
    if indent is None:
        return canonical_json(value).decode()
    return json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=True)


def _indent(text: str) -> str | int | None:
    """The indent of the first indented line: a pretty-printer's unit. None for a file on one line."""
    match = re.search(r"[\r\n]([ \t]+)\S", text)
    if match is None:
        return None
    unit = match.group(1)
    return unit if "\t" in unit else len(unit)


def _unparsable_bytes(display: str, data: bytes, exc: UnicodeDecodeError) -> Finding:
    line_start = data.rfind(b"\n", 0, exc.start) + 1
    line = data.count(b"\n", 0, exc.start) + 1
    column = len(data[line_start : exc.start].decode("utf-8", "replace")) + 1
    return Finding(display, line, column, UNPARSABLE.code, f"not UTF-8 ({exc.reason})", UNPARSABLE.hint)


def _quote(name: str | None) -> str:
    return json.dumps(name) if name is not None else "a nameless tool"


def _brief(items: list[str]) -> str:
    return json.dumps(items if len(items) <= 6 else [*items[:5], "..."], ensure_ascii=False)
