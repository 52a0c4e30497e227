"""Python source rules (AC1xx): a small dataflow over one module, from values that differ between calls to the
parts of a request that form its cached prefix.

Sources are clock reads, random draws, fresh ids, and the iteration order of a set (string hashes are salted per
process, so that order differs between runs). Sinks are system prompts and tool lists: they come first in every
request, so a byte that changes there makes the server recompute everything after it.

The analysis is abstract interpretation over the AST, flow-sensitive within a function: each expression evaluates
to a :class:`Value` (where it may come from, whether it is a set, its text when constant, and the layout of a
string being built), assignments bind names, branches merge, loop bodies run twice so a value carried around the
loop is seen, and a call to a function defined in the module is evaluated with its arguments' values, so sources
flow through helpers and sinks inside helpers see their callers' sources. What it cannot see (other modules,
attributes across methods) it treats as clean: the rules prefer a missed finding to a false one.
"""

from __future__ import annotations

import ast
import io
import re
import string
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import reduce

from agentcache.lint.core import UNPARSABLE, Checked, Finding, Rule, SourceFile

VOLATILE_SYSTEM_PROMPT = Rule(
    "AC101",
    "volatile-system-prompt",
    "the current time, a random value or a fresh id flows into a system prompt",
    "keep the system prompt constant: move the value into the latest user message, or drop it",
)
VOLATILE_TOOLS = Rule(
    "AC102",
    "volatile-tools",
    "the current time, a random value or a fresh id flows into a tool list",
    "build tool definitions once, from constants; pass per-call values as tool arguments or in the latest message",
)
SET_ORDER = Rule(
    "AC103",
    "set-order",
    "the iteration order of a set flows into a system prompt or a tool list",
    "iterate in a defined order: sorted(...) the set, or keep the items in a list",
)
UNSORTED_SCHEMA_DUMP = Rule(
    "AC104",
    "unsorted-schema-dump",
    "json.dumps of tool schemas without sort_keys=True",
    "pass sort_keys=True (or serialize with agentcache.canonical_json)",
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
#: Calls into the module's own functions are followed this deep.
MAX_CALL_DEPTH = 4
#: Loops nested this deep have their body analyzed twice; deeper ones once.
MAX_REPEATED_LOOPS = 3

CLOCK, RANDOM, FRESH_ID, ORDER = "clock", "random", "id", "order"
_KIND_WORDS = {CLOCK: "the current time", RANDOM: "a random value", FRESH_ID: "a fresh unique id"}

_CLOCK_CALLS = frozenset(
    {
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "time.time",
        "time.time_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
    }
)
#: These read the clock only when called with fewer arguments than this (else they format the time given).
_CLOCK_UNLESS_GIVEN = {"time.strftime": 2, "time.ctime": 1, "time.asctime": 1, "time.localtime": 1, "time.gmtime": 1}
_ID_CALLS = frozenset({"uuid.uuid1", "uuid.uuid4"})
#: Module functions that draw nothing: seeding, state, in-place shuffles (handled as a mutation).
_NOT_DRAWS = frozenset(
    {"random.seed", "random.getstate", "random.setstate", "random.shuffle", "secrets.compare_digest"}
)

_SYSTEM_KEYWORDS = frozenset({"system", "system_prompt", "system_message", "instructions"})
_AGENT_FACTORIES = frozenset({"create_agent", "create_react_agent"})
_TOOLS_KEYWORDS = frozenset({"tools", "functions"})
_SYSTEM_ROLES = frozenset({"system", "developer"})

#: Builtins whose result does not depend on the order of their iterable, or carries none of it.
_ORDER_FREE = frozenset({"sorted", "min", "max", "sum", "any", "all"})
_OPAQUE = frozenset({"len", "isinstance", "issubclass", "hasattr", "callable", "id", "type", "bool", "hash"})
#: Builtins that turn an iterable into a sequence in its iteration order.
_SEQUENCERS = frozenset(
    {"list", "tuple", "enumerate", "iter", "reversed", "next", "map", "filter", "zip", "str", "repr"}
)
#: Text transformations that keep the layout AC105 reads (prompts are often dedented triple-quoted strings).
_LAYOUT_KEEPING = frozenset({"textwrap.dedent", "inspect.cleandoc"})
_LAYOUT_KEEPING_METHODS = frozenset({"strip", "lstrip", "rstrip"})
_MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "extendleft", "setdefault"})
_SET_ALGEBRA = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})

#: AC104: a dumped expression names tool schemas when one of its words is here and none is in _RESULT_WORDS
#: (``json.dumps(function_response)`` is a tool's result, sent once, not a schema re-sent every turn).
_SCHEMA_WORDS = frozenset({"tool", "tools", "schema", "schemas", "function", "functions", "parameters"})
_RESULT_WORDS = frozenset(
    {"result", "results", "output", "outputs", "response", "responses", "call", "calls", "args", "arguments"}
    | {"message", "messages", "return", "returns", "value", "values"}
)
_SCHEMA_FIELDS = frozenset({"parameters", "input_schema"})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


@dataclass(frozen=True, order=True)
class Origin:
    """Where a value that differs between calls comes from. ``column`` is ast's UTF-8 byte offset."""

    line: int
    column: int
    kind: str
    label: str


@dataclass(frozen=True)
class Value:
    """What the analysis knows about a value.

    ``origins`` are the sources it may derive from; ``unordered`` is set when the value is itself a set (where
    it was made): iterating it injects hash order. ``text`` is its exact text when it is a constant string, so
    ``TEMPLATE.format(...)`` can be laid out. ``shape`` is the layout of a string being built: runs of stable
    characters (an int, the count when known) and interpolated values; AC105 reads it.
    """

    origins: frozenset[Origin] = frozenset()
    unordered: Origin | None = None
    text: str | None = None
    shape: tuple[int | Value, ...] | None = None


CLEAN = Value()


def combine(*values: Value) -> Value:
    """A value computed from all of these: it differs when any of them does; text and set-ness are gone."""
    origins = frozenset[Origin]().union(*(value.origins for value in values))
    return Value(origins) if origins else CLEAN


def join(first: Value, second: Value) -> Value:
    """A value that is one of these two (branches that merge)."""
    if first == second:
        return first
    return Value(
        first.origins | second.origins,
        first.unordered or second.unordered,
        first.text if first.text == second.text else None,
        first.shape if first.shape == second.shape else None,
    )


def segments(value: Value) -> tuple[int | Value, ...]:
    if value.shape is not None:
        return value.shape
    if value.text is not None:
        return (len(value.text),)
    return (Value(value.origins),) if value.origins else (0,)


def concat(values: Sequence[Value]) -> Value:
    """Text made of these values one after another (f-strings, ``+``, ``.format``, ``.join``)."""
    parts: list[int | Value] = []
    for value in values:
        for part in segments(value):
            if isinstance(part, int) and parts and isinstance(parts[-1], int):
                parts[-1] += part
            else:
                parts.append(part)
    texts = [value.text for value in values]
    text = "".join(t for t in texts if t is not None) if None not in texts else None
    return Value(combine(*values).origins, None, text, tuple(parts))


def _volatile(origins: frozenset[Origin]) -> frozenset[Origin]:
    return frozenset(origin for origin in origins if origin.kind != ORDER)


def _orders(value: Value) -> frozenset[Origin]:
    found = frozenset(origin for origin in value.origins if origin.kind == ORDER)
    return found | {value.unordered} if value.unordered else found


def stable_tail(value: Value) -> tuple[frozenset[Origin], int, int] | None:
    """(origins of the first volatile part of a string, stable characters before it, stable characters after)."""
    parts = segments(value)
    for index, part in enumerate(parts):
        if isinstance(part, Value) and _volatile(part.origins):
            before = sum(p for p in parts[:index] if isinstance(p, int))
            after = sum(p for p in parts[index + 1 :] if isinstance(p, int))
            return _volatile(part.origins), before, after
    return None


class _Scope:
    """Names bound in one function (or the module, or a comprehension); reads fall back to the parent."""

    def __init__(self, parent: _Scope | None = None) -> None:
        self.parent = parent
        self.vars: dict[str, Value] = {}

    def lookup(self, name: str) -> Value | None:
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.vars:
                return scope.vars[name]
            scope = scope.parent
        return None

    def update(self, name: str, value: Value) -> None:
        """Rebind ``name`` where it lives: a mutation (``append``, item assignment) changes that object."""
        scope: _Scope | None = self
        while scope is not None:
            if name in scope.vars:
                scope.vars[name] = value
                return
            scope = scope.parent
        self.vars[name] = value

    def fork(self) -> _Scope:
        copy = _Scope(self.parent)
        copy.vars = dict(self.vars)
        return copy

    def merge(self, *branches: _Scope) -> None:
        merged: dict[str, Value] = {}
        for branch in branches:
            for name, value in branch.vars.items():
                merged[name] = join(merged[name], value) if name in merged else value
        self.vars = merged


@dataclass
class _Report:
    rule: Rule
    node: ast.expr
    sink: str
    origins: set[Origin] = field(default_factory=set)
    first: frozenset[Origin] = frozenset()
    stable_after: int = 0


Function = ast.FunctionDef | ast.AsyncFunctionDef


class _Analysis:
    """One module: run the module body, then every function on its own; collect what reaches a sink."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.nodes = list(ast.walk(tree))
        self.imports = _imports(self.nodes)
        self.functions, self.methods = _definitions(self.nodes)
        self.tool_names = _tool_names(self.nodes)
        self.globals = _Scope()
        self.reports: dict[tuple[str, int, int], _Report] = {}
        self.dumps: dict[tuple[int, int], ast.Call] = {}
        self.stack: list[Function] = []
        self.memo: dict[tuple[int, tuple[tuple[str, Value], ...]], Value] = {}
        self.loops = 0

    def run(self) -> None:
        self.block(self.tree.body, self.globals, [])
        for node in self.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.invoke(node, {})

    # -- statements ---------------------------------------------------------------------------------------

    def block(self, body: Sequence[ast.stmt], scope: _Scope, returns: list[Value]) -> None:
        for statement in body:
            self.statement(statement, scope, returns)

    def statement(self, node: ast.stmt, scope: _Scope, returns: list[Value]) -> None:
        if isinstance(node, ast.Assign):
            value = self.expr(node.value, scope)
            for target in node.targets:
                self.assign(target, value, scope, node.value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self.assign(node.target, self.expr(node.value, scope), scope, node.value)
        elif isinstance(node, ast.AugAssign):
            old, new = self.read(node.target, scope), self.expr(node.value, scope)
            if isinstance(node.op, ast.Add):
                value = concat([old, new])
            elif isinstance(node.op, (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)) and old.unordered:
                value = Value(old.origins | new.origins, old.unordered)
            else:
                value = combine(old, new)
            self.assign(node.target, value, scope, node.value)
        elif isinstance(node, ast.Return):
            returns.append(self.expr(node.value, scope))
        elif isinstance(node, ast.Expr):
            self.expr(node.value, scope)
        elif isinstance(node, ast.If):
            self.expr(node.test, scope)
            self.branches(scope, returns, node.body, node.orelse)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            item = self.element(self.expr(node.iter, scope), node.iter)
            self.loop(scope, returns, node.body, node.orelse, node.target, item)
        elif isinstance(node, ast.While):
            self.expr(node.test, scope)
            self.loop(scope, returns, node.body, node.orelse, None, CLEAN)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for context in node.items:
                entered = self.expr(context.context_expr, scope)
                if context.optional_vars is not None:
                    self.assign(context.optional_vars, entered, scope, None)
            self.block(node.body, scope, returns)
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            self.attempt(node, scope, returns)
        elif isinstance(node, ast.Match):
            self.expr(node.subject, scope)
            self.branches(scope, returns, *(case.body for case in node.cases), [])
        elif isinstance(node, ast.ClassDef):
            self.block(node.body, _Scope(scope), [])
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    scope.vars.pop(target.id, None)

    def branches(self, scope: _Scope, returns: list[Value], *bodies: Sequence[ast.stmt]) -> None:
        forks = []
        for body in bodies:
            fork = scope.fork()
            self.block(body, fork, returns)
            forks.append(fork)
        scope.merge(*forks)

    def loop(
        self,
        scope: _Scope,
        returns: list[Value],
        body: Sequence[ast.stmt],
        orelse: Sequence[ast.stmt],
        target: ast.expr | None,
        item: Value,
    ) -> None:
        """The body runs zero or more times: twice is enough for a value to travel around it once. Loops nested
        deeper than :data:`MAX_REPEATED_LOOPS` run once, so the cost stays linear in the source, not exponential."""
        before = scope.fork()
        self.loops += 1
        for _ in range(2 if self.loops <= MAX_REPEATED_LOOPS else 1):
            if target is not None:
                self.assign(target, item, scope, None)
            self.block(body, scope, returns)
        self.loops -= 1
        self.block(orelse, scope, returns)
        scope.merge(before, scope)

    def attempt(self, node: ast.stmt, scope: _Scope, returns: list[Value]) -> None:
        before = scope.fork()
        self.block(getattr(node, "body", []), scope, returns)
        forks = [scope.fork()]
        for handler in getattr(node, "handlers", []):
            fork = before.fork()
            fork.merge(before, scope)
            self.block(handler.body, fork, returns)
            forks.append(fork)
        self.block(getattr(node, "orelse", []), forks[0], returns)
        scope.merge(*forks)
        self.block(getattr(node, "finalbody", []), scope, returns)

    def read(self, target: ast.expr, scope: _Scope) -> Value:
        key = _dotted(target)
        return (scope.lookup(key) if key else None) or CLEAN

    def assign(self, target: ast.expr, value: Value, scope: _Scope, source: ast.expr | None) -> None:
        """Bind ``target``; an assignment to a name that says system prompt or tools is a sink of its own."""
        if isinstance(target, ast.Name):
            scope.vars[target.id] = value
            self.named_sink(target.id, source, value)
        elif isinstance(target, ast.Attribute):
            key = _dotted(target)
            if key:
                scope.vars[key] = value
            self.named_sink(target.attr, source, value)
        elif isinstance(target, ast.Subscript):
            key = _dotted(target.value)
            if key:
                old = scope.lookup(key) or CLEAN
                scope.update(key, Value(old.origins | value.origins, old.unordered))
            if isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str):
                self.named_sink(target.slice.value, source, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = _unpacked(target, source)
            for part, part_source in pairs:
                part_value = self.expr(part_source, scope) if part_source is not None else combine(value)
                self.assign(part, part_value, scope, part_source)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, combine(value), scope, None)

    # -- expressions --------------------------------------------------------------------------------------

    def expr(self, node: ast.expr | None, scope: _Scope) -> Value:
        if node is None:
            return CLEAN
        if isinstance(node, ast.Constant):
            return Value(text=node.value) if isinstance(node.value, str) else CLEAN
        if isinstance(node, ast.Name):
            return scope.lookup(node.id) or CLEAN
        if isinstance(node, ast.Attribute):
            key = _dotted(node)
            known = scope.lookup(key) if key else None
            return known if known is not None else combine(self.expr(node.value, scope))
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node, scope)
        if isinstance(node, ast.BinOp):
            return self.binop(node, scope)
        if isinstance(node, ast.BoolOp):
            return reduce(join, (self.expr(value, scope) for value in node.values))
        if isinstance(node, ast.IfExp):
            test = self.expr(node.test, scope)
            chosen = join(self.expr(node.body, scope), self.expr(node.orelse, scope))
            return Value(chosen.origins | test.origins) if test.origins else chosen
        if isinstance(node, ast.Compare):
            return combine(self.expr(node.left, scope), *(self.expr(c, scope) for c in node.comparators))
        if isinstance(node, ast.UnaryOp):
            return combine(self.expr(node.operand, scope))
        if isinstance(node, ast.Call):
            return self.call(node, scope)
        if isinstance(node, (ast.List, ast.Tuple)):
            return self.sequence(node, scope)
        if isinstance(node, ast.Set):
            items = [self.expr(item, scope) for item in node.elts]
            if all(isinstance(item, ast.Constant) and type(item.value) in (int, bool) for item in node.elts):
                return combine(*items)  # ints hash to themselves: their order is fixed (str, bytes, None do not)
            return Value(combine(*items).origins, self.origin(node, ORDER))
        if isinstance(node, ast.Dict):
            return self.mapping(node, scope)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp, ast.SetComp, ast.DictComp)):
            return self.comprehension(node, scope)
        if isinstance(node, ast.Subscript):
            return combine(self.expr(node.value, scope), self.expr(node.slice, scope))
        if isinstance(node, (ast.Await, ast.Starred)):
            return self.expr(node.value, scope)
        if isinstance(node, ast.NamedExpr):
            value = self.expr(node.value, scope)
            self.assign(node.target, value, scope, node.value)
            return value
        if isinstance(node, ast.Slice):
            return combine(*(self.expr(part, scope) for part in (node.lower, node.upper, node.step)))
        return CLEAN

    def fstring(self, node: ast.JoinedStr, scope: _Scope) -> Value:
        parts = []
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                value = self.ordered(self.expr(part.value, scope), part.value)
                spec = self.expr(part.format_spec, scope)
                parts.append(combine(value, spec) if spec.origins else value)
            else:
                parts.append(self.expr(part, scope))
        return concat(parts)

    def binop(self, node: ast.BinOp, scope: _Scope) -> Value:
        left, right = self.expr(node.left, scope), self.expr(node.right, scope)
        if isinstance(node.op, ast.Add):
            return concat([left, right])
        if isinstance(node.op, (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)) and (left.unordered or right.unordered):
            return Value(left.origins | right.origins, left.unordered or right.unordered)
        if isinstance(node.op, ast.Mod) and left.text is not None:
            return combine(left, self.ordered(right, node.right))
        return combine(left, right)

    def sequence(self, node: ast.List | ast.Tuple, scope: _Scope) -> Value:
        items = []
        for item in node.elts:
            if isinstance(item, ast.Starred):
                items.append(self.ordered(self.expr(item.value, scope), item.value))
            else:
                items.append(self.expr(item, scope))
        if isinstance(node, ast.Tuple) and len(node.elts) == 2 and _constant(node.elts[0]) in _SYSTEM_ROLES:
            self.system_sink(node.elts[1], items[1])  # LangChain's ("system", text) message tuples
        return combine(*items)

    def mapping(self, node: ast.Dict, scope: _Scope) -> Value:
        keys = [self.expr(key, scope) for key in node.keys]
        values = [self.expr(value, scope) for value in node.values]
        fields = {_constant(key): index for index, key in enumerate(node.keys) if key is not None}
        role = fields.get("role")
        content = fields.get("content")
        if role is not None and content is not None and _constant(node.values[role]) in _SYSTEM_ROLES:
            self.system_sink(node.values[content], values[content])
        return combine(*keys, *values)

    def comprehension(self, node: ast.ListComp | ast.GeneratorExp | ast.SetComp | ast.DictComp, scope: _Scope) -> Value:
        inner = _Scope(scope)
        orders: set[Origin] = set()
        for generator in node.generators:
            item = self.element(self.expr(generator.iter, inner), generator.iter)
            orders |= _orders(item)
            self.assign(generator.target, item, inner, None)
            for condition in generator.ifs:
                self.expr(condition, inner)
        if isinstance(node, ast.DictComp):
            result = combine(self.expr(node.key, inner), self.expr(node.value, inner))
        else:
            result = self.expr(node.elt, inner)
        if isinstance(node, ast.SetComp):
            return Value(_volatile(result.origins), self.origin(node, ORDER))
        return Value(result.origins | orders)

    def element(self, iterable: Value, site: ast.expr) -> Value:
        """An item of ``iterable``: it carries the iterable's origins, and hash order when that is a set."""
        return combine(self.ordered(iterable, site))

    def ordered(self, value: Value, site: ast.expr) -> Value:
        """``value`` read in iteration order at ``site`` (a sequence, a loop, printed): a set leaves hash order."""
        if value.unordered is None:
            return value
        return Value(value.origins | {self.origin(site, ORDER)})

    def origin(self, node: ast.expr, kind: str) -> Origin:
        return Origin(node.lineno, node.col_offset, kind, _code(node))

    # -- calls --------------------------------------------------------------------------------------------

    def call(self, node: ast.Call, scope: _Scope) -> Value:
        func = node.func
        args = [self.expr(arg, scope) for arg in node.args]
        kwargs = {kw.arg: self.expr(kw.value, scope) for kw in node.keywords if kw.arg is not None}
        spread = [self.expr(kw.value, scope) for kw in node.keywords if kw.arg is None]
        receiver = self.expr(func.value, scope) if isinstance(func, ast.Attribute) else CLEAN
        name = self.qualname(func, scope)
        self.call_sinks(node, args, kwargs)
        if name in ("json.dumps", "json.dump", "orjson.dumps"):
            self.check_dump(node, name)
        drawn = self.draw(node, name)
        if drawn is not None:
            return drawn
        if name == "random.shuffle" and node.args:
            key = _dotted(node.args[0])
            if key:
                self.mutate(key, Value(args[0].origins | {self.origin(node, RANDOM)}), node, scope)
            return CLEAN
        if name in _LAYOUT_KEEPING and len(args) == 1:
            return args[0]
        everything = combine(receiver, *args, *kwargs.values(), *spread)
        if isinstance(func, ast.Name) and scope.lookup(func.id) is None and func.id not in self.imports:
            builtin = self.builtin(func.id, node, args)
            if builtin is not None:
                return builtin
            function = self.functions.get(func.id)
            if function is not None:
                return self.inline(function, node, args, kwargs, skip_self=False) or everything
        if isinstance(func, ast.Attribute):
            return self.method(func, node, receiver, args, kwargs, scope) or everything
        return everything

    def builtin(self, name: str, node: ast.Call, args: list[Value]) -> Value | None:
        if name in _OPAQUE:
            return CLEAN
        if name in _ORDER_FREE:
            return Value(_volatile(combine(*args).origins))
        if name in ("set", "frozenset"):
            return Value(combine(*args).origins, self.origin(node, ORDER))
        if name in _SEQUENCERS:
            items = [self.ordered(arg, node) for arg in args]
            if name in ("str", "repr") and len(args) == 1 and args[0].unordered is None:
                return args[0]
            return combine(*items)
        return None

    def method(
        self,
        func: ast.Attribute,
        node: ast.Call,
        receiver: Value,
        args: list[Value],
        kwargs: dict[str, Value],
        scope: _Scope,
    ) -> Value | None:
        attr = func.attr
        if attr in _LAYOUT_KEEPING_METHODS and not args:
            return receiver
        if attr == "format" and receiver.text is not None:
            return self.format(receiver.text, node, args, kwargs)
        if attr == "join" and receiver.text is not None and len(node.args) == 1:
            return self.join_text(receiver.text, node, args[0], scope)
        key = _dotted(func.value)
        if key and attr in _MUTATORS:
            self.mutate(key, Value(receiver.origins | combine(*args).origins, receiver.unordered), node, scope)
        elif key and attr == "sort":
            scope.update(key, Value(_volatile(receiver.origins)))
        if attr in _SET_ALGEBRA and receiver.unordered:
            return Value(combine(receiver, *args).origins, receiver.unordered)
        if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls") and attr in self.methods:
            return self.inline(self.methods[attr], node, args, kwargs, skip_self=True)
        return None

    def format(self, template: str, node: ast.Call, args: list[Value], kwargs: dict[str, Value]) -> Value | None:
        """``TEMPLATE.format(...)`` laid out field by field, so AC105 sees where each value lands."""
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(kw.arg is None for kw in node.keywords):
            return None
        parts: list[Value] = []
        automatic = 0
        try:
            fields = list(string.Formatter().parse(template))
        except ValueError:
            return None
        for literal, field_name, _, _ in fields:
            parts.append(Value(text=literal))
            if field_name is None:
                continue
            key = re.split(r"[.\[]", field_name, maxsplit=1)[0]
            if key == "":
                key, automatic = str(automatic), automatic + 1
            value = (
                (args[int(key)] if int(key) < len(args) else CLEAN)
                if key.isdecimal() and key.isascii()
                else kwargs.get(key, CLEAN)
            )
            parts.append(self.ordered(value, node))
        return concat(parts)

    def join_text(self, separator: str, node: ast.Call, iterable: Value, scope: _Scope) -> Value:
        """``SEP.join([...])`` of a literal list is laid out like concatenation; of anything else, a whole."""
        site = node.args[0]
        if isinstance(site, (ast.List, ast.Tuple)) and not any(isinstance(e, ast.Starred) for e in site.elts):
            parts: list[Value] = []
            for index, item in enumerate(site.elts):
                if index:
                    parts.append(Value(text=separator))
                parts.append(self.expr(item, scope))
            return concat(parts)
        return combine(self.ordered(iterable, node))

    def mutate(self, key: str, value: Value, node: ast.expr, scope: _Scope) -> None:
        """An in-place change (``append``, ``shuffle``) to the object bound to ``key``: a rebinding, for sinks too."""
        scope.update(key, value)
        self.named_sink(key.rsplit(".", 1)[-1], node, value)

    def inline(
        self, function: Function, node: ast.Call, args: list[Value], kwargs: dict[str, Value], skip_self: bool
    ) -> Value | None:
        """The return value of a module function called with these values (None: calls it cannot follow)."""
        if any(isinstance(arg, ast.Starred) for arg in node.args) or any(kw.arg is None for kw in node.keywords):
            return None
        spec = function.args
        positional = [arg.arg for arg in (*spec.posonlyargs, *spec.args)][1 if skip_self else 0 :]
        named = {arg.arg for arg in (*spec.args, *spec.kwonlyargs)}
        bindings = dict(zip(positional, args, strict=False))
        bindings.update((key, value) for key, value in kwargs.items() if key in named)
        return self.invoke(function, bindings)

    def invoke(self, function: Function, bindings: dict[str, Value]) -> Value:
        key = (id(function), tuple(sorted(bindings.items(), key=lambda item: item[0])))
        known = self.memo.get(key)
        if known is not None:
            return known
        if function in self.stack or len(self.stack) >= MAX_CALL_DEPTH:
            return combine(*bindings.values())
        self.stack.append(function)
        scope = _Scope(self.globals)
        spec = function.args
        for arg in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs, spec.vararg, spec.kwarg):
            if arg is not None:
                scope.vars[arg.arg] = bindings.get(arg.arg, CLEAN)
        returns: list[Value] = []
        self.block(function.body, scope, returns)
        self.stack.pop()
        result = reduce(join, returns) if returns else CLEAN
        self.memo[key] = result
        return result

    def qualname(self, node: ast.expr, scope: _Scope) -> str | None:
        """The imported name a call target refers to (``dt.datetime.now`` -> ``datetime.datetime.now``)."""
        if isinstance(node, ast.Name):
            return self.imports.get(node.id) if scope.lookup(node.id) is None else None
        if isinstance(node, ast.Attribute):
            base = self.qualname(node.value, scope)
            return f"{base}.{node.attr}" if base else None
        return None

    def draw(self, node: ast.Call, name: str | None) -> Value | None:
        """The value of a call that reads the clock, draws randomness or makes a fresh id; None for others."""
        if name is None:
            return None
        given = len(node.args) + len(node.keywords)
        if name in _CLOCK_CALLS or (name in _CLOCK_UNLESS_GIVEN and given < _CLOCK_UNLESS_GIVEN[name]):
            kind = CLOCK
        elif name in _ID_CALLS:
            kind = FRESH_ID
        elif name == "os.urandom" or (name.startswith(("random.", "secrets.")) and name not in _NOT_DRAWS):
            if name == "random.Random" and given:
                return None  # seeded: the same draws on every run
            kind = RANDOM
        else:
            return None
        return Value(frozenset({self.origin(node, kind)}))

    # -- sinks --------------------------------------------------------------------------------------------

    def call_sinks(self, node: ast.Call, args: list[Value], kwargs: dict[str, Value]) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        for keyword in node.keywords:
            if keyword.arg in _SYSTEM_KEYWORDS or (keyword.arg == "prompt" and name in _AGENT_FACTORIES):
                self.system_sink(keyword.value, kwargs[keyword.arg])
            elif keyword.arg in _TOOLS_KEYWORDS:
                self.tools_sink(keyword.value, kwargs[keyword.arg])
        if name == "SystemMessage" or (
            name == "from_template"
            and isinstance(func, ast.Attribute)
            and _last_name(func.value) == "SystemMessagePromptTemplate"
        ):
            if node.args:
                self.system_sink(node.args[0], args[0])
            for keyword in node.keywords:
                if keyword.arg in ("content", "template"):
                    self.system_sink(keyword.value, kwargs[keyword.arg])
        elif name == "bind_tools" and node.args:
            self.tools_sink(node.args[0], args[0])
        elif name in _AGENT_FACTORIES and len(node.args) > 1:
            self.tools_sink(node.args[1], args[1])

    def named_sink(self, name: str, node: ast.expr | None, value: Value) -> None:
        if node is None:
            return
        lowered = name.lower()
        if "system_prompt" in lowered:
            self.system_sink(node, value)
        elif lowered == "tools" or lowered.endswith("_tools"):
            self.tools_sink(node, value)

    def system_sink(self, node: ast.expr, value: Value) -> None:
        volatile = _volatile(value.origins)
        if volatile:
            tail = stable_tail(value)
            if tail is not None and tail[2] >= MIN_STABLE_TAIL and tail[2] > tail[1]:
                report = self.report(VOLATILE_BEFORE_STABLE, node, volatile, "the system prompt")
                report.first, report.stable_after = tail[0], tail[2]
            else:
                self.report(VOLATILE_SYSTEM_PROMPT, node, volatile, "the system prompt")
        if _orders(value):
            self.report(SET_ORDER, node, _orders(value), "the system prompt")

    def tools_sink(self, node: ast.expr, value: Value) -> None:
        volatile = _volatile(value.origins)
        if volatile:
            self.report(VOLATILE_TOOLS, node, volatile, "the tool list")
        if _orders(value):
            self.report(SET_ORDER, node, _orders(value), "the tool list")

    def report(self, rule: Rule, node: ast.expr, origins: frozenset[Origin], sink: str) -> _Report:
        key = (rule.code, node.lineno, node.col_offset)
        report = self.reports.get(key)
        if report is None:
            report = self.reports[key] = _Report(rule, node, sink)
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
        if isinstance(node, ast.Name) and node.id in self.tool_names:
            return True
        if isinstance(node, ast.Dict):
            keys = {_constant(key) for key in node.keys if key is not None}
            is_tool = ("name" in keys and bool(keys & _SCHEMA_FIELDS)) or _constant_at(node, "type") == "function"
            return is_tool or bool(keys & _TOOLS_KEYWORDS)
        if isinstance(node, (ast.List, ast.Tuple)):
            return any(self.names_schema(item) for item in node.elts)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self.names_schema(node.elt)
        if isinstance(node, ast.Subscript):
            key = _constant(node.slice)
            return _schema_words(key) if isinstance(key, str) else self.names_schema(node.value)
        if isinstance(node, ast.Call):
            return self.names_schema(node.func)
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        return name is not None and _schema_words(name)

    # -- results ------------------------------------------------------------------------------------------

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
            yield report.rule, report.node, _message(report)
        for node in self.dumps.values():
            yield (
                UNSORTED_SCHEMA_DUMP,
                node,
                (
                    f"`{_code(node)}` serializes tool schemas without sort_keys=True: their bytes then depend on the "
                    "order each dict was built in, and another process or library builds it differently"
                ),
            )


def _message(report: _Report) -> str:
    if report.rule is SET_ORDER:
        sites = _and([f"`{origin.label}` (line {origin.line})" for origin in sorted(report.origins)])
        return (
            f"{report.sink} takes its order from iterating a set at {sites}: string hashes are salted per "
            "process, so the bytes differ from run to run and the cache built by one run misses in the next"
        )
    if report.rule is VOLATILE_BEFORE_STABLE:
        return (
            f"{_describe(report.first)} comes before {report.stable_after} characters of stable text in "
            f"{report.sink}: that text can never be served from the cache, since the prefix differs before it"
        )
    if report.rule is VOLATILE_TOOLS:
        return (
            f"{report.sink} includes {_describe(frozenset(report.origins))}: tools come before the messages, so "
            "every request misses the cache from the tools on"
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


def _code(node: ast.AST) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 48 else text[:45] + "..."


def _constant(node: ast.expr | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def _constant_at(node: ast.Dict, key: str) -> object:
    for item_key, item_value in zip(node.keys, node.values, strict=True):
        if _constant(item_key) == key:
            return _constant(item_value)
    return None


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _last_name(node: ast.expr) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def _unpacked(target: ast.Tuple | ast.List, source: ast.expr | None) -> list[tuple[ast.expr, ast.expr | None]]:
    """Pair each target with its own source expression when both sides are literal tuples of one length."""
    if (
        isinstance(source, (ast.Tuple, ast.List))
        and len(source.elts) == len(target.elts)
        and not any(isinstance(e, ast.Starred) for e in (*source.elts, *target.elts))
    ):
        return list(zip(target.elts, source.elts, strict=True))
    return [(element, None) for element in target.elts]


def _schema_words(name: str) -> bool:
    words = {word.lower() for word in _WORD.findall(name)}
    return bool(words & _SCHEMA_WORDS) and not words & _RESULT_WORDS


def _only_orjson_flags(node: ast.expr, without: str) -> bool:
    """Whether ``node`` is built only from ``OPT_*`` flags, none of them ``without`` (else: cannot tell)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _only_orjson_flags(node.left, without) and _only_orjson_flags(node.right, without)
    name = _last_name(node)
    return name is not None and name.startswith("OPT_") and name != without


def _imports(nodes: list[ast.AST]) -> dict[str, str]:
    """Local name -> imported dotted name, for every import in the module (absolute imports only)."""
    names: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _definitions(nodes: list[ast.AST]) -> tuple[dict[str, Function], dict[str, Function]]:
    """Functions and methods defined once in the module, by name (a name defined twice is not followed)."""
    functions: dict[str, list[Function]] = {}
    methods: dict[str, list[Function]] = {}
    in_class = {id(item) for node in nodes if isinstance(node, ast.ClassDef) for item in node.body}
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            (methods if id(node) in in_class else functions).setdefault(node.name, []).append(node)
    return (
        {name: defs[0] for name, defs in functions.items() if len(defs) == 1},
        {name: defs[0] for name, defs in methods.items() if len(defs) == 1},
    )


def _tool_names(nodes: list[ast.AST]) -> frozenset[str]:
    """Names the module passes as tools (``tools=x``, ``bind_tools(x)``): dumping them is dumping schemas."""
    names = set()
    for node in nodes:
        if isinstance(node, ast.keyword) and node.arg in _TOOLS_KEYWORDS and isinstance(node.value, ast.Name):
            names.add(node.value.id)
        elif (
            isinstance(node, ast.Call)
            and _last_name(node.func) == "bind_tools"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            names.add(node.args[0].id)
    return frozenset(names)


def _noqa(data: bytes) -> dict[int, frozenset[str] | None]:
    """Line -> codes a ``# noqa: AC101`` comment silences there (None: a bare ``# noqa`` silences all)."""
    found: dict[int, frozenset[str] | None] = {}
    if b"noqa" not in data.lower():
        return found
    try:
        for token in tokenize.tokenize(io.BytesIO(data).readline):
            if token.type == tokenize.COMMENT and (match := _NOQA.search(token.string)):
                codes = match.group("codes")
                found[token.start[0]] = frozenset(re.findall(r"[A-Z]+[0-9]+", codes.upper())) if codes else None
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def check(source: SourceFile) -> Checked:
    """AC1xx findings for one Python file; AC001 when it does not parse."""
    data = source.data
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
        tree = ast.parse(text, filename=source.display)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        column = getattr(exc, "offset", None) or 1
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return Checked((_unparsable(source, line, max(column, 1), f"not valid Python: {reason}"),))
    except RecursionError:
        return Checked((_unparsable(source, 1, 1, "not parsable: nesting too deep for Python's parser"),))
    analysis = _Analysis(tree)
    try:
        analysis.run()
    except RecursionError:
        return Checked((_unparsable(source, 1, 1, "not analysed: expressions or branches nested too deep to follow"),))
    lines = [line.encode() for line in re.split(r"\r\n|\r|\n", text)]
    silenced = _noqa(data)
    findings = []
    for rule, node, message in analysis.results():
        codes = silenced.get(node.lineno, frozenset())
        if codes is None or rule.code in codes:
            continue
        end_line = node.end_lineno or node.lineno
        end_offset = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        findings.append(
            Finding(
                source.display,
                node.lineno,
                _column(lines, node.lineno, node.col_offset),
                rule.code,
                message,
                rule.hint,
                end_line,
                _column(lines, end_line, end_offset),
            )
        )
    return Checked(tuple(findings))


def _unparsable(source: SourceFile, line: int, column: int, message: str) -> Finding:
    return Finding(source.display, line, column, UNPARSABLE.code, message, UNPARSABLE.hint)


def _column(lines: list[bytes], line: int, offset: int) -> int:
    """1-based code-point column of ast's UTF-8 byte offset."""
    return len(lines[line - 1][:offset].decode("utf-8", "replace")) + 1
