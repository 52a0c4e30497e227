"""Sinks: the parts of a request that form its cached prefix (system prompts, tool lists), and serialized tool
schemas. The interpreter hands each one the value that reaches it; :class:`Sinks` keeps what breaks a rule."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from agentcache.lint.core import Rule
from agentcache.lint.python.rules import (
    MIN_STABLE_TAIL,
    SET_ORDER,
    UNSORTED_SCHEMA_DUMP,
    VOLATILE_BEFORE_STABLE,
    VOLATILE_SYSTEM_PROMPT,
    VOLATILE_TOOLS,
    Report,
    dump_message,
    message,
)
from agentcache.lint.python.syntax import constant, constant_at, last_name
from agentcache.lint.python.values import Origin, Value, orders, stable_tail, volatile
from agentcache.lint.python.vocabulary import (
    AGENT_FACTORIES,
    SCHEMA_FIELDS,
    SYSTEM_KEYWORDS,
    TOOLS_KEYWORDS,
    is_schema_name,
)


class Sinks:
    """The reports of one module, keyed by rule and position so a sink reached twice is one report."""

    def __init__(self, tool_names: frozenset[str]) -> None:
        self.tool_names = tool_names
        self.reports: dict[tuple[str, int, int], Report] = {}
        self.dumps: dict[tuple[int, int], ast.Call] = {}

    def call_sinks(self, node: ast.Call, args: list[Value], kwargs: dict[str, Value]) -> None:
        """The sinks among a call's arguments: ``system=``, ``tools=``, ``SystemMessage(...)``, ``bind_tools``..."""
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        for keyword in node.keywords:
            if keyword.arg in SYSTEM_KEYWORDS or (keyword.arg == "prompt" and name in AGENT_FACTORIES):
                self.system_sink(keyword.value, kwargs[keyword.arg])
            elif keyword.arg in TOOLS_KEYWORDS:
                self.tools_sink(keyword.value, kwargs[keyword.arg])
        if name == "SystemMessage" or (
            name == "from_template"
            and isinstance(func, ast.Attribute)
            and last_name(func.value) == "SystemMessagePromptTemplate"
        ):
            if node.args:
                self.system_sink(node.args[0], args[0])
            for keyword in node.keywords:
                if keyword.arg in ("content", "template"):
                    self.system_sink(keyword.value, kwargs[keyword.arg])
        elif name == "bind_tools" and node.args:
            self.tools_sink(node.args[0], args[0])
        elif name in AGENT_FACTORIES and len(node.args) > 1:
            self.tools_sink(node.args[1], args[1])

    def named_sink(self, name: str, node: ast.expr | None, value: Value) -> None:
        """A binding whose name says system prompt or tools is a sink of its own."""
        if node is None:
            return
        lowered = name.lower()
        if "system_prompt" in lowered:
            self.system_sink(node, value)
        elif lowered == "tools" or lowered.endswith("_tools"):
            self.tools_sink(node, value)

    def system_sink(self, node: ast.expr, value: Value) -> None:
        changing = volatile(value.origins)
        if changing:
            tail = stable_tail(value)
            if tail is not None and tail[2] >= MIN_STABLE_TAIL and tail[2] > tail[1]:
                report = self.report(VOLATILE_BEFORE_STABLE, node, changing, "the system prompt")
                report.first, report.stable_after = tail[0], tail[2]
            else:
                self.report(VOLATILE_SYSTEM_PROMPT, node, changing, "the system prompt")
        if orders(value):
            self.report(SET_ORDER, node, orders(value), "the system prompt")

    def tools_sink(self, node: ast.expr, value: Value) -> None:
        changing = volatile(value.origins)
        if changing:
            self.report(VOLATILE_TOOLS, node, changing, "the tool list")
        if orders(value):
            self.report(SET_ORDER, node, orders(value), "the tool list")

    def report(self, rule: Rule, node: ast.expr, origins: frozenset[Origin], sink: str) -> Report:
        key = (rule.code, node.lineno, node.col_offset)
        report = self.reports.get(key)
        if report is None:
            report = self.reports[key] = Report(rule, node, sink)
        report.origins |= origins
        return report

    def check_dump(self, node: ast.Call, name: str) -> None:
        """AC104: tool schemas serialized with their keys in whatever order the dicts were built."""
        if not node.args or not self.names_schema(node.args[0]):
            return
        if name == "orjson.dumps":
            option = next((kw.value for kw in node.keywords if kw.arg == "option"), None)
            if option is None and len(node.args) > 2:
                option = node.args[2]
            sorted_keys = option is not None and not _only_orjson_flags(option, without="OPT_SORT_KEYS")
        else:
            flag = next((kw.value for kw in node.keywords if kw.arg == "sort_keys"), None)
            sorted_keys = flag is not None and not (isinstance(flag, ast.Constant) and not flag.value)
        if not sorted_keys:
            self.dumps[(node.lineno, node.col_offset)] = node

    def names_schema(self, node: ast.expr) -> bool:
        """Whether the dumped expression is tool schemas, by its shape or by its name."""
        if isinstance(node, ast.Name) and node.id in self.tool_names:
            return True
        if isinstance(node, ast.Dict):
            keys = {constant(key) for key in node.keys if key is not None}
            is_tool = ("name" in keys and bool(keys & SCHEMA_FIELDS)) or constant_at(node, "type") == "function"
            return is_tool or bool(keys & TOOLS_KEYWORDS)
        if isinstance(node, (ast.List, ast.Tuple)):
            return any(self.names_schema(item) for item in node.elts)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self.names_schema(node.elt)
        if isinstance(node, ast.Subscript):
            key = constant(node.slice)
            return is_schema_name(key) if isinstance(key, str) else self.names_schema(node.value)
        if isinstance(node, ast.Call):
            return self.names_schema(node.func)
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        return name is not None and is_schema_name(name)

    def results(self) -> Iterator[tuple[Rule, ast.expr, str]]:
        """(rule, node, message) per finding. Each source is reported once per problem, at the first sink it
        reaches, so a prompt assigned to ``SYSTEM_PROMPT`` and then sent is one finding, not two."""
        seen: dict[str, set[Origin]] = {}
        for key in sorted(self.reports, key=lambda key: (key[1], key[2], key[0])):
            report = self.reports[key]
            rule = VOLATILE_SYSTEM_PROMPT if report.rule is VOLATILE_BEFORE_STABLE else report.rule
            group = seen.setdefault(rule.code, set())
            if report.origins <= group:
                continue
            group |= report.origins
            yield report.rule, report.node, message(report)
        for node in self.dumps.values():
            yield UNSORTED_SCHEMA_DUMP, node, dump_message(node)


def tool_names(nodes: list[ast.AST]) -> frozenset[str]:
    """Names the module passes as tools (``tools=x``, ``bind_tools(x)``): dumping them is dumping schemas."""
    names = set()
    for node in nodes:
        if isinstance(node, ast.keyword) and node.arg in TOOLS_KEYWORDS and isinstance(node.value, ast.Name):
            names.add(node.value.id)
        elif (
            isinstance(node, ast.Call)
            and last_name(node.func) == "bind_tools"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            names.add(node.args[0].id)
    return frozenset(names)


def _only_orjson_flags(node: ast.expr, without: str) -> bool:
    """Whether ``node`` is built only from ``OPT_*`` flags, none of them ``without`` (else: cannot tell)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _only_orjson_flags(node.left, without) and _only_orjson_flags(node.right, without)
    name = last_name(node)
    return name is not None and name.startswith("OPT_") and name != without
