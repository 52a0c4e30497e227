"""Statements of the abstract interpreter: bindings, branches that fork and merge scopes, loops, and the bodies of
the module's own functions. Expressions are evaluated by the subclass,
:class:`~agentcache.lint.python.interpreter.Interpreter`."""

from __future__ import annotations

import ast
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import reduce
from typing import Any, ClassVar

from agentcache.lint.python.arrival import Arrivals, positional
from agentcache.lint.python.sinks import TOOL_SCHEMA, Sinks
from agentcache.lint.python.syntax import (
    Function,
    agreed_arguments,
    bound_names,
    constant,
    dotted,
    last_name,
    private_functions,
    read_as_globals,
    rebuilt_before_read,
    self_field,
    self_uses,
    statements,
    targets_of,
    unpacked,
)
from agentcache.lint.python.values import (
    CLEAN,
    ORDER,
    PARAM,
    Origin,
    Scope,
    Value,
    arrival_of,
    combine,
    concat,
    element,
    join,
    keyed,
    meet,
    merged,
    order_free,
    ordered,
    sequence_order,
    volatile,
    with_entry,
)
from agentcache.lint.python.vocabulary import (
    MAPPING_ANNOTATIONS,
    SET_ANNOTATIONS,
    SET_OPERATORS,
    SETS,
    TABLE,
    Vocabulary,
)

#: Calls into the module's own functions are followed this deep.
MAX_CALL_DEPTH = 4
#: Fields that are what an object is sent as: setting one of them sets the text of the whole tool or schema.
DESCRIBING = frozenset({"description", "__doc__"})
#: Loops nested this deep have their body analyzed twice; deeper ones once.
MAX_REPEATED_LOOPS = 3

#: ``try`` statements: ``try: ... except* E:`` is its own node type from Python 3.11.
#: (function, bindings) -> what it returned, and how many calls deep it could follow when it cut one short.
Memo = dict[tuple[int, tuple[tuple[str, Value], ...]], tuple[Value, int]]
_TRIES: tuple[type[ast.stmt], ...] = tuple(getattr(ast, name) for name in ("Try", "TryStar") if hasattr(ast, name))
#: What :meth:`Statements.known_literal` says of a parameter whose value it does not know.
_UNKNOWN = object()

StatementHandler = Callable[["Statements", Any, Scope, list[Value]], None]


class Statements(ABC):
    """One module: run the module body, then every function on its own; the sinks collect what reaches them."""

    def __init__(self, tree: ast.Module, words: Vocabulary) -> None:
        self.tree = tree
        self.words = words
        self.nodes = statements(tree)
        self.stack: list[Function] = []
        self.sinks = Sinks(words, self.stack, tree)
        self.globals = Scope()
        self.memo: Memo = {}
        """(function, bindings) -> what it returned, and how many calls deep it could follow when it cut one short
        (else :data:`MAX_CALL_DEPTH`): :meth:`invoke`."""
        self.cut = False
        """Whether the function being run cut a call short, itself or through a call it made."""
        self.reach = MAX_CALL_DEPTH
        """How deep calls are followed from the outermost function run (less for a summary: see the interpreter)."""
        self.fields: dict[int, dict[str, Value]] = {}
        """Method (by id) -> the ``self.x`` values its class's body or ``__init__`` set that may differ between
        calls (class attributes, dataclass and pydantic fields made by a ``default_factory``, ``__init__``'s)."""
        self.class_fields: dict[int, dict[str, Value]] = {}
        """Class (by id) -> the attributes its body binds that may differ, as ``self.x``."""
        self.redeclared: dict[int, set[str]] = {}
        """Class (by id) -> the fields its body declares again with a plain value (``self.tools``): not what a base
        holds."""
        self.shadowed: dict[str, set[str]] = {}
        """Top-level class (by name) -> the fields its body declares again or its ``__init__`` binds (``self.x``):
        what an imported base exports for them is not theirs."""
        self.given_fields: list[frozenset[str]] = []
        """For each function running (:attr:`stack`), the fields of ``self`` its caller bound and gave it
        (:meth:`~agentcache.lint.python.interpreter.Interpreter.state`)."""
        self.instance_fields: dict[str, dict[str, Value]] = {}
        """Top-level class (by name) -> the ``self.x`` its body and ``__init__`` set that may differ: exported."""
        self.unbound: dict[int, frozenset[str]] = {}
        """Function id -> the parameters it never rebinds (:meth:`fixed`)."""
        self.private: dict[str, tuple[Function, bool]] | None = None
        """The module's private functions nothing outside it calls (:func:`~.syntax.private_functions`), once asked."""
        self.agreed: dict[int, dict[str, object]] | None = None
        """Function id -> the literals every call of it in the module gives its parameters (:meth:`known_literal`),
        worked out when first asked (set empty for a part of a module cut in parts: it does not hold all calls)."""
        self.bases: dict[int, tuple[str, ...]] = {}
        """Method (by id) -> the imported classes its class derives from, by dotted name: their fields are read
        from the project's exports."""
        self.tuples: dict[str, tuple[Value, ...] | None] = {}
        """Container (by dotted name) -> what each position of the tuples stored in it by key holds, joined over
        the module (None: it holds something else too): :meth:`store`."""
        self.defaults: dict[tuple[int, str], bool] = {}
        """(``__init__`` by id, attribute) -> whether what it binds there is rebuilt before it is read
        (:meth:`default_rebuilt`)."""
        self.owners: dict[int, str] = {}
        """Method (by id) -> the name of its class, a top-level one: what the project's modules give that class's
        constructor is read as its fields."""
        self.must = False
        """Whether the run keeps only what every call reaches (:meth:`Interpreter.own`): the branches of an ``if``,
        a ``match``, a loop (run or not) and a ``try``'s handlers meet (:meth:`Scope.meet`) instead of joining."""
        self.loops = 0
        self.ended = False
        """Whether the statement just run was an ``if`` decided to run only a branch that returns or raises
        (:meth:`decided`): the block it is in ends there."""
        self.order: frozenset[Origin] = frozenset()
        """The undefined orders of the loops being run (a set's, a shuffle's): what a loop body adds to a
        collection or a string that outlives an iteration is built in that order."""
        self.items: frozenset[str] = frozenset()
        """The names those loops bind to each item (:meth:`Sinks.ordered_messages`)."""
        self.deciding: frozenset[Origin] = frozenset()
        """The clocks, ids and draws the ``if`` statements being run test: text a branch writes itself (a literal,
        an f-string) is there only at some times, so it carries them (:meth:`decided_text`)."""
        self.gating: frozenset[Origin] = frozenset()
        """The clocks, ids and draws the ``if`` statements that skip the rest of a loop's body test (``if age >= TTL:
        continue``): text the rest of the body adds to what outlives the iteration carries them."""
        self.arrivals = Arrivals()
        """The collections the module's concurrent tasks fill in the order they finish (the interpreter reads them)."""

    @abstractmethod
    def expr(self, node: ast.expr | None, scope: Scope) -> Value:
        """What ``node`` evaluates to in ``scope`` (CLEAN for no node)."""

    @abstractmethod
    def imported(self, node: ast.expr) -> str | None:
        """The dotted name of the imported object ``node`` names at module level (None: not an import)."""

    def run(self) -> None:
        """The module body, then each class's ``__init__`` (the ``self.x`` it, the class body and the class's bases
        in this module set are known in its methods), then every function on its own."""
        self.block(self.tree.body, self.globals, [])
        classes = {node.name: node for node in self.nodes if isinstance(node, ast.ClassDef)}
        top = {id(node) for node in self.tree.body}
        made: dict[int, dict[str, Value]] = {}  # class id -> its instances' self.x: local bases', body's, __init__'s
        for node in self.nodes:
            if isinstance(node, ast.ClassDef):
                init = next(
                    (item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None
                )
                fields: dict[str, Value] = {}
                for base in node.bases:
                    local = classes.get(base.id) if isinstance(base, ast.Name) else None
                    if local is not None and local is not node:
                        fields.update(made.get(id(local), self.class_fields.get(id(local), {})))
                for key in self.redeclared.get(id(node), ()):  # a base's set field declared a list here
                    fields.pop(key, None)
                fields.update(self.class_fields.get(id(node), {}))
                bases = tuple(name for name in map(self.imported, node.bases) if name)
                methods = [item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))]
                for item in methods:  # before __init__ runs: the methods it calls see the fields known so far
                    self.bases[id(item)], self.fields[id(item)] = bases, fields
                    if id(node) in top:
                        self.owners[id(item)] = node.name
                if init is not None:
                    self.fields[id(init)] = dict(fields)  # __init__ starts from the class's fields, adds its own
                    self.invoke(init, {}, fields)
                    for helper in _called_on_self(init, methods):  # self._set_from_env(): what it sets too
                        found = dict(fields)  # (only adds: __init__ may set again what a helper resets)
                        self.invoke(helper, {}, found)
                        fields.update((key, value) for key, value in found.items() if _kept(value))
                for key, origin in self.arrivals.by_class.get(id(node), {}).items():  # filled as tasks finish
                    held = fields.get(key, CLEAN)
                    if held.unordered is None:
                        fields[key] = replace(held, unordered=origin)
                made[id(node)] = fields
                if id(node) in top:
                    self.instance_fields[node.name] = fields
                    self.shadowed[node.name] = self.redeclared.get(id(node), set()) | _bound_on_self(init)
        for node in self.nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.invoke(node, {})

    def block(self, body: Sequence[ast.stmt], scope: Scope, returns: list[Value]) -> bool:
        """Run a body's statements in order; whether it stopped at an ``if`` decided to run only a branch that
        returns or raises (nothing after it runs). The clocks an ``if`` that skips the rest of a loop's body tests
        decide what follows it in the block (:meth:`branches`), and no more."""
        deciding, gating = self.deciding, self.gating
        for statement in body:
            self.statement(statement, scope, returns)
            if self.ended:
                self.ended = False
                self.deciding, self.gating = deciding, gating
                return True
        self.deciding, self.gating = deciding, gating
        return False

    def statement(self, node: ast.stmt, scope: Scope, returns: list[Value]) -> None:
        """Run ``node`` in ``scope``; a ``return`` adds its value to ``returns``. Other statements (imports,
        ``pass``) change nothing; a function definition only has its tool schema checked (:meth:`definition`)."""
        handler = self.STATEMENTS.get(type(node))
        if handler is not None:
            handler(self, node, scope, returns)

    def assignment(self, node: ast.Assign, scope: Scope, returns: list[Value]) -> None:
        value = self.decided_text(node.value, self.expr(node.value, scope))
        if type(node.value) is ast.Dict:  # a dict display bound: a call's keyword arguments, a request's body
            self.sinks.mapping_sinks(node.value, value)
        if self.order and _extends(node):  # text = text + s, text = f"{text}, {s}": built up in the loop's order
            value = Value(value.origins | self.order, value.unordered, value.text, value.shape)
        for target in node.targets:
            self.assign(target, value, scope, node.value)

    def annotated_assignment(self, node: ast.AnnAssign, scope: Scope, returns: list[Value]) -> None:
        if node.value is not None:
            value = self.expr(node.value, scope)
            if type(node.value) is ast.Dict:
                self.sinks.mapping_sinks(node.value, value)
            if _maps_to_sets(node.annotation):  # by_tag: dict[str, set[str]] = {}
                value = Value(value.origins, entries=value.entries, cls=SETS)
            self.assign(node.target, value, scope, node.value)

    def augmented_assignment(self, node: ast.AugAssign, scope: Scope, returns: list[Value]) -> None:
        old, new = self.read(node.target, scope), self.decided_text(node.value, self.expr(node.value, scope), True)
        if self.order and isinstance(node.op, ast.Add) and not _count(node.value):
            new = Value(new.origins | self.order)  # built up across a loop's iterations, in its order (not a count)
            self.sinks.ordered_messages(node.value, self.order, self.items)  # messages += [{"role": "system"...}]
        if isinstance(node.op, ast.Add):
            value = concat([old, new])
        elif isinstance(node.op, SET_OPERATORS) and old.unordered:
            value = Value(old.origins | new.origins, old.unordered)
        elif isinstance(node.op, ast.BitOr) and (old.entries or new.entries):  # a dict updated: d |= {"k": v}
            value = Value(old.origins | new.origins, entries=merged(old, new))
        else:
            value = combine(old, new)
        outer, self.order = self.order, frozenset()  # d[k] += ...: no key is added, in any order
        self.assign(node.target, value, scope, node.value)
        self.order = outer

    def return_statement(self, node: ast.Return, scope: Scope, returns: list[Value]) -> None:
        """What a function whose name says it makes a system prompt returns is one, wherever its caller puts it
        (``messages[0].content = build_system_prompt()``), as is what a function registered as one returns
        (``@agent.instructions``); what a function annotated to return a list of tools returns is a tool list."""
        value = self.expr(node.value, scope)
        if type(node.value) is ast.Dict:
            self.sinks.mapping_sinks(node.value, value)
        if node.value is not None:
            value = self.decided_text(node.value, value)
        if node.value is not None and self.stack and self.makes_system_prompt(self.stack[-1]):
            self.sinks.system_sink(node.value, value)
        if node.value is not None and self.stack and self.words.lists_tools(self.stack[-1].returns):
            # -> list[Tool]: the caller hands it on as the agent's tools; what it made itself, not its caller's
            self.sinks.tools_sink(node.value, self.made_here(value))
        returns.append(value)

    def decided_text(self, node: ast.expr, value: Value, gathered: bool = False) -> Value:
        """``value``, written as ``node``, with the clocks, ids and draws the ``if`` statements around it test, when
        it is text of the function's own (a string, an f-string: openakita's ``time_period = "night"`` under ``if
        hour >= 22``); ``gathered``, text added to what outlives a loop's iteration (appended, ``+=``), also with
        those of a comparison that only skips the rest of the loop's body (hazzel's MCP tools, listed only for 30 s:
        ``if time.monotonic() - listed_at >= TTL: continue``). What a call returns (a cache refreshed when it
        expires) is what it is whenever it is made, and a text bound after such a skip is the same whenever it is."""
        tested = self.deciding | self.gating if gathered else self.deciding
        if not tested or not _own_text(node):
            return value
        return Value(value.origins | tested, value.unordered, value.text, value.shape)

    def made_here(self, value: Value, handed: ast.expr | None = None) -> Value:
        """``value`` with the origins made in the running function's body (at module level: all), and the
        parameters of a run that looks for those sent: a function that hands one on sends it too. ``handed``: where
        the value is given; a parameter of the running function handed on as it came (agentouto's
        ``build_system_prompt(agent, caller_loop_id=caller_loop_id)``) holds too the clocks, ids and draws a caller
        on the stack made and gave it (not an order: a function given a collection may send each item on its
        own)."""
        if not self.stack:
            return value
        function = self.stack[-1]
        first, last = function.lineno, function.end_lineno or function.lineno
        callers = (
            [(caller.lineno, caller.end_lineno or caller.lineno) for caller in self.stack[:-1]]
            if isinstance(handed, ast.Name) and handed.id in self.fixed(function)
            else []
        )
        given = order_free(value.origins) if callers else frozenset()
        here = frozenset(
            origin
            for origin in value.origins
            if first <= origin.line <= last
            or origin.kind == PARAM
            or (origin in given and any(start <= origin.line <= end for start, end in callers))
        )
        return value if here == value.origins else Value(here)

    def makes_system_prompt(self, function: Function) -> bool:
        """Whether a function returns a system prompt: its name says so, or a decorator registers it as one
        (``prompt-decorators``)."""
        return self.words.makes_system_prompt(function.name) or any(
            _decorator_name(decorator) in self.words.prompt_decorators for decorator in function.decorator_list
        )

    def expression_statement(self, node: ast.Expr, scope: Scope, returns: list[Value]) -> None:
        """A ``yield`` adds to what the function returns: a generator's items are what its callers iterate."""
        if isinstance(node.value, (ast.Yield, ast.YieldFrom)):
            returns.append(self.yielded(node.value, scope))
        else:
            self.expr(node.value, scope)

    def yielded(self, node: ast.Yield | ast.YieldFrom, scope: Scope) -> Value:
        """What a ``yield`` gives the generator's caller (``yield from``: its iterable's items, in its order), in
        the order of the loops around it."""
        value = self.expr(node.value, scope)
        if isinstance(node, ast.YieldFrom):
            value = ordered(value, node.value)
        if not self.order:
            return value
        if isinstance(node, ast.Yield):
            self.sinks.ordered_messages(node.value, self.order, self.items)
        return Value(value.origins | self.order)

    def with_statement(self, node: ast.With | ast.AsyncWith, scope: Scope, returns: list[Value]) -> None:
        for context in node.items:
            entered = self.expr(context.context_expr, scope)
            if context.optional_vars is not None:
                self.assign(context.optional_vars, entered, scope, None)
        self.block(node.body, scope, returns)

    def class_body(self, node: ast.ClassDef, scope: Scope, returns: list[Value]) -> None:
        """The attributes the body binds are the class's fields. A class made in a function (a model built at run
        time, ``nodes: list[Node]`` of a ``create_model`` result) is a value too: the types it is made of, its
        bases and its fields' annotations, as is the schema it gives a structured output. A module's classes stay
        unbound: they are read by their definitions (a template class's file)."""
        body = Scope(scope)
        self.block(node.body, body, [])
        declared = {  # a subclass's tools: list[str] | None = None replaces its base's set
            item.target.id
            for item in node.body
            if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None
        }
        for name, annotation in set_fields(node).items():  # the set its constructor is given
            held = body.vars.get(name, CLEAN)
            body.vars[name] = Value(held.origins, held.unordered or Origin.at(annotation, ORDER))
        if any(self.words.is_tool_class(base) for base in node.bases):
            for item in node.body:  # class FinanceTool(Tool): description = f"... Today is {date.today()}"
                if not isinstance(item, (ast.Assign, ast.AnnAssign)) or item.value is None:
                    continue
                for target in item.targets if isinstance(item, ast.Assign) else [item.target]:
                    if isinstance(target, ast.Name) and target.id in self.words.tool_fields:
                        self.sinks.definition_sink(item.value, body.vars.get(target.id, CLEAN), declared=True)
        self.class_fields[id(node)] = {f"self.{name}": value for name, value in body.vars.items() if _kept(value)}
        self.redeclared[id(node)] = {f"self.{name}" for name in declared} - self.class_fields[id(node)].keys()
        if self.stack:
            annotations = [item.annotation for item in node.body if isinstance(item, ast.AnnAssign)]
            scope.vars[node.name] = combine(*(self.expr(part, body) for part in (*node.bases, *annotations)))

    def definition(self, node: Function, scope: Scope, returns: list[Value]) -> None:
        """A tool's definition (decorated as ``tool_decorators`` say): its parameters' annotations are evaluated
        where it is defined, and are its schema (``Annotated[list[str], Field(json_schema_extra=...)]``). Its body
        runs on its own."""
        if not any(_decorator_name(decorator) in self.words.tool_decorators for decorator in node.decorator_list):
            return
        spec = node.args
        for parameter in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs):
            if parameter.annotation is not None:
                self.sinks.tools_sink(parameter.annotation, self.expr(parameter.annotation, scope), sink=TOOL_SCHEMA)

    def deletion(self, node: ast.Delete, scope: Scope, returns: list[Value]) -> None:
        for target in node.targets:
            if isinstance(target, ast.Name):
                scope.vars.pop(target.id, None)

    def branches(self, node: ast.If | ast.Match, scope: Scope, returns: list[Value]) -> None:
        """``if`` and ``match``: each body runs on its own fork of the scope, then the forks merge (a missing
        ``else``, or no case matching, is an empty body). One handler for both, not two calling a helper, so each
        ``elif`` of a long chain costs three Python frames, not four, before the recursion limit."""
        bodies: list[Sequence[ast.stmt]]
        script: ast.If | None = None
        taken: bool | None = None  # a match's cases are never decided
        deciding, gated = self.deciding, self.gating
        if isinstance(node, ast.If):
            tested = self.expr(node.test, scope)
            taken = self.decided(node.test, scope)
            if taken is None and tested.origins and _compares(node.test):
                self.deciding = deciding | order_free(volatile(tested.origins))
                if type(node.test) is ast.Compare and not node.orelse and _skips(node.body):
                    # if age >= TTL: continue: what the rest of the loop's body adds is there at some times only
                    gated = self.gating | order_free(volatile(tested.origins))
            bodies = [node.body, node.orelse] if taken is None else [node.body if taken else node.orelse]
            if not self.stack and _runs_as_script(node.test):
                script = node
        else:
            self.expr(node.subject, scope)
            bodies = [*(case.body for case in node.cases), []]
        forks = []
        ends = False
        outer = self.sinks.script
        if script is not None and self.sinks.globals_read is None:
            self.sinks.globals_read = read_as_globals(self.nodes)
        alone = self.one_item(node.test, scope) if isinstance(node, ast.If) else None
        for body in bodies:
            fork = scope.fork()
            if script is not None:  # the body is a script's: its names are the script's locals, not the module's
                self.sinks.script = script if body is script.body else outer
            if alone is not None and body is bodies[0] and taken is not False:
                fork.vars[alone[0]] = alone[1]
            ends = self.block(body, fork, returns)
            forks.append(fork)
        self.sinks.script, self.deciding, self.gating = outer, deciding, gated
        self.ended = taken is not None and (ends or _exits(bodies[0]))  # the one branch run returns or raises
        if not self.must:
            scope.merge(*forks)
            return
        going = [fork for fork, body in zip(forks, bodies, strict=True) if not _exits(body)]
        if going:  # a branch that returns or raises goes on nowhere after the statement
            scope.meet(*going)

    def one_item(self, test: ast.expr, scope: Scope) -> tuple[str, Value] | None:
        """What an ``if`` that tests a list to hold one item (``if len(matches) == 1:``) knows of it in its body:
        the order the comprehension that built it iterated in is gone (one item comes in one order), not an order
        the item holds (a text joined from a set)."""
        name = _only_item(test)
        held = scope.lookup(name) if name is not None else None
        if name is None or held is None:
            return None
        built = _iterated_into(self.stack[-1], name) if self.stack else frozenset()
        kept = frozenset(o for o in held.origins if o.kind != ORDER or (o.line, o.column) not in built)
        return name, replace(held, origins=kept)

    def decided(self, test: ast.expr, scope: Scope) -> bool | None:
        """Whether an ``if`` on a parameter the running function never rebinds holds, where the parameter's value is
        known: a literal the function was called with, or that every call of it in the module gives it
        (:func:`~.syntax.agreed_arguments`). The tests decided are the parameter itself, ``not`` it, and its
        comparison with a string: ``self._set_message(message, "state")`` does not take the branch ``if
        message_type == "system":``, and ``_build_system_prompt(base, use_compiled=True)``, its only call, never
        builds the legacy prompt after ``if use_compiled: return ...``. None: not known (any other test, a function
        run on its own with nothing agreed), both branches run."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            taken = self.decided(test.operand, scope)
            return None if taken is None else not taken
        if isinstance(test, ast.Name):
            known = self.known_literal(test, scope)
            return None if known is _UNKNOWN else bool(known)
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.NotEq))):
            return None
        sides = []
        for side in (test.left, test.comparators[0]):
            if isinstance(side, ast.Constant) and isinstance(side.value, str):
                sides.append(side.value)
                continue
            known = self.known_literal(side, scope) if isinstance(side, ast.Name) else _UNKNOWN
            if not isinstance(known, str):
                return None
            sides.append(known)
        return (sides[0] == sides[1]) == isinstance(test.ops[0], ast.Eq)

    def known_literal(self, name: ast.Name, scope: Scope) -> object:
        """The literal a parameter of the running function that it never rebinds holds (:meth:`decided`): the
        string it was called with, else what every call in the module gives it; :data:`_UNKNOWN` otherwise. The
        cheap questions first: this is asked at every ``if`` on a name."""
        if not self.stack:
            return _UNKNOWN
        function = self.stack[-1]
        known = scope.lookup(name.id)
        if known is not None and known != CLEAN:
            if known.origins or not isinstance(known.text, str) or name.id not in self.fixed(function):
                return _UNKNOWN
            return known.text
        if self.private is None:
            self.private = private_functions(self.tree)
        if self.private.get(function.name, (None, False))[0] is not function or name.id not in self.fixed(function):
            return _UNKNOWN  # the module's calls are read only for a function that may agree
        if self.agreed is None:
            self.agreed = agreed_arguments(self.tree, self.private)
        return self.agreed.get(id(function), {}).get(name.id, _UNKNOWN)

    def fixed(self, function: Function) -> frozenset[str]:
        """The parameters ``function`` never rebinds (asked once per function)."""
        known = self.unbound.get(id(function))
        if known is None:
            spec = function.args
            names = {arg.arg for arg in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs)}
            rebound = {
                node.id
                for node in ast.walk(function)
                if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
            }
            known = self.unbound[id(function)] = frozenset(names - rebound)
        return known

    def loop(self, node: ast.For | ast.AsyncFor | ast.While, scope: Scope, returns: list[Value]) -> None:
        """The body runs zero or more times: twice is enough for a value to travel around it once. Loops nested
        deeper than :data:`MAX_REPEATED_LOOPS` run once, so the cost stays linear in the source, not exponential.
        One handler for ``for`` and ``while``, like :meth:`branches`, to spend one frame less per level."""
        target: ast.expr | None
        outer, items = self.order, self.items
        if isinstance(node, ast.While):
            self.expr(node.test, scope)
            target, item = None, CLEAN
        else:
            iterable = self.expr(node.iter, scope)
            target, item = node.target, self.element_of(iterable, node.iter, scope)
            order = sequence_order(iterable, node.iter)
            if order:
                self.order, self.items = outer | order, items | bound_names(target)
        before = scope.fork()
        self.loops += 1
        for _ in range(2 if self.loops <= MAX_REPEATED_LOOPS else 1):
            if target is not None:
                self.assign(target, item, scope, None)
            self.block(node.body, scope, returns)
        self.loops -= 1
        self.order, self.items = outer, items
        if self.must:  # the body may not run; else runs when it ends
            scope.meet(before, scope)
            self.block(node.orelse, scope, returns)
            return
        self.block(node.orelse, scope, returns)
        scope.merge(before, scope)

    def element_of(self, iterable: Value, site: ast.expr, scope: Scope) -> Value:
        """An item of ``iterable`` (:func:`element`); of ``zip(a, b)`` and ``enumerate(a)`` of names or attributes,
        a tuple whose parts are the items of each (``for state, config in zip(states, configs)``: ``state`` holds
        nothing of the configs)."""
        item = element(iterable)
        method = site.func.attr if isinstance(site, ast.Call) and isinstance(site.func, ast.Attribute) else None
        if iterable.cls == SETS and method in ("values", "items"):
            held = Value(item.origins, Origin.at(site, ORDER))  # by_tag.values(): each a set
            return held if method == "values" else Value(item.origins, items=(CLEAN, held))
        if not (isinstance(site, ast.Call) and isinstance(site.func, ast.Name) and not site.keywords):
            return item
        called, args = site.func.id, site.args
        if called not in ("zip", "enumerate") or scope.lookup(called) is not None or not args:
            return item
        names = all(isinstance(arg, (ast.Name, ast.Attribute)) for arg in args)
        if not names or (called == "enumerate" and len(args) != 1):
            return item
        parts = tuple(element(self.expr(arg, scope)) for arg in args)
        return Value(item.origins, items=(CLEAN, *parts) if called == "enumerate" else parts)

    def attempt(self, node: ast.stmt, scope: Scope, returns: list[Value]) -> None:
        """``try``: each handler starts from any point of the body (before it or after it), ``else`` follows
        the whole body, and ``finally`` follows all of them."""
        before = scope.fork()
        self.block(getattr(node, "body", []), scope, returns)
        forks = [scope.fork()]
        for handler in getattr(node, "handlers", []):
            fork = before.fork()
            fork.merge(before, scope)
            self.block(handler.body, fork, returns)
            forks.append(fork)
        self.block(getattr(node, "orelse", []), forks[0], returns)
        (scope.meet if self.must else scope.merge)(*forks)
        self.block(getattr(node, "finalbody", []), scope, returns)

    STATEMENTS: ClassVar[dict[type[ast.stmt], StatementHandler]] = {
        ast.Assign: assignment,
        ast.AnnAssign: annotated_assignment,
        ast.AugAssign: augmented_assignment,
        ast.Return: return_statement,
        ast.Expr: expression_statement,
        ast.If: branches,
        ast.For: loop,
        ast.AsyncFor: loop,
        ast.While: loop,
        ast.With: with_statement,
        ast.AsyncWith: with_statement,
        **dict.fromkeys(_TRIES, attempt),
        ast.Match: branches,
        ast.ClassDef: class_body,
        ast.FunctionDef: definition,
        ast.AsyncFunctionDef: definition,
        ast.Delete: deletion,
    }

    def read(self, target: ast.expr, scope: Scope) -> Value:
        key = dotted(target)
        return (scope.lookup(key) if key else None) or CLEAN

    def assign(self, target: ast.expr, value: Value, scope: Scope, source: ast.expr | None) -> None:
        """Bind ``target``; an assignment to a name that says system prompt or tools is a sink of its own."""
        if isinstance(target, ast.Name):
            scope.vars[target.id] = value
            self.sinks.named_sink(target.id, source, value, local=True)
            self.sinks.bind(target.id, source)
        elif isinstance(target, ast.Attribute):
            key = dotted(target)
            if key:
                scope.vars[key] = value
            if target.attr in DESCRIBING:  # tool.description = f"... {today}": what the tool is sent as
                self.changed(target.value, value, scope)
            else:
                self.field_set(target, value, scope)
            if not self.default_rebuilt(target):
                self.sinks.named_sink(target.attr, source, value, last_name(target.value))
        elif isinstance(target, ast.Subscript):
            key = dotted(target.value)
            name = target.slice.value if isinstance(target.slice, ast.Constant) else None
            if key:
                old = scope.lookup(key) or CLEAN
                order, arrived = arrival_of(self.order)  # keys added as tasks finish: read in that order, not by key
                if arrived is not None and positional(target.slice):
                    arrived = None  # results[index] = future.result(): each where it was started
                held = old.origins | value.origins | keyed(order)
                if old.cls == TABLE or (name is None and value.entries and old.entries is None and old.cls is None):
                    entries, kept = _tabled(old, value)  # sessions[session_id] = {"id": session_id, ...}
                else:
                    entries = with_entry(old, name, value) if isinstance(name, str) else old.entries
                    kept = SETS if old.cls == SETS and value.unordered is not None else None  # given one more set
                scope.update(key, Value(held, old.unordered or arrived, entries=entries, cls=kept))
                self.store(key, value)
            else:  # d["function"]["description"] = ..., tool.info.properties()[k] = ...: a key added in the loop's
                order = keyed(self.order) if name is None else frozenset()  # order when it is not a constant
                self.changed(target.value, Value(value.origins | order), scope)
            if isinstance(name, str) and not (key and self.sinks.records(key)):
                self.sinks.item_sink(name, source, value)
        elif isinstance(target, (ast.Tuple, ast.List)):
            pairs = unpacked(target, source)
            items = value.items
            if items is None and isinstance(source, ast.Subscript):
                items = self.stored_items(source, value)
            if items is not None and len(items) != len(pairs):
                items = None
            for index, (part, part_source) in enumerate(pairs):
                if part_source is not None:
                    part_value = self.expr(part_source, scope)
                else:
                    part_value = combine(value) if items is None or isinstance(part, ast.Starred) else items[index]
                self.assign(part, part_value, scope, part_source)
        elif isinstance(target, ast.Starred):
            self.assign(target.value, combine(value), scope, None)

    def default_rebuilt(self, target: ast.Attribute) -> bool:
        """Whether ``self.x = ...`` in an ``__init__`` binds a system prompt no code of the module reads before it
        binds another (:func:`~agentcache.lint.python.syntax.rebuilt_before_read`): not sent, so no sink."""
        constructor = self.stack[-1] if self.stack else None
        if not (
            constructor is not None
            and constructor.name == "__init__"
            and isinstance(target.value, ast.Name)
            and target.value.id == "self"
            and target.attr.lower().endswith(self.words.system_names)
        ):
            return False
        key = (id(constructor), target.attr)
        if key not in self.defaults:
            cls = next(
                (node for node in self.nodes if isinstance(node, ast.ClassDef) and constructor in node.body), None
            )
            self.defaults[key] = cls is not None and rebuilt_before_read(self.tree, cls, constructor, target.attr)
        return self.defaults[key]

    def changed(self, part: ast.expr, value: Value, scope: Scope) -> None:
        """The object a part of which is set to ``value`` (``tool.description = ...``, ``d["function"]["name"] =
        ...``) now carries it too: what is sent of it may print that part."""
        if not value.origins:
            return
        key = _changed_object(part)
        old = scope.lookup(key) if key else None  # an import, a function, a field not set here: no value to change
        if key and old is not None and not value.origins <= old.origins:
            held = old.origins | value.origins
            scope.update(key, Value(held, old.unordered, old.text, entries=old.entries, cls=old.cls))

    def field_set(self, target: ast.Attribute, value: Value, scope: Scope) -> None:
        """``config.branch_prefix = f"run_{now}"`` on an object bound to a name here (not ``self``): the object
        holds the value under that field, where a function it is given reads it (``config.branch_prefix``), but its
        other fields do not, and neither does the object whole (a record's ids and times are its bookkeeping). Not
        on a module's object in a function: the module's other functions would see it or not by the order they
        run in."""
        holder = target.value
        if not isinstance(holder, ast.Name) or holder.id in ("self", "cls") or self.words.is_bookkeeping(target.attr):
            return
        if not (value.origins or value.unordered is not None):
            return
        if self.stack and scope.binder(holder.id) is self.globals:
            return  # a module's object set in a function: which function runs first is not known
        old = scope.lookup(holder.id)
        if old is not None and old.text is None and old.items is None:
            scope.update(holder.id, replace(old, entries=with_entry(old, target.attr, value)))

    def store(self, key: str, value: Value) -> None:
        """Record an item stored in the container ``key`` (``cache[url] = (schemas, time.time())``): while every
        item stored in it is a tuple of one length, what each position holds (:meth:`stored_items`)."""
        known = self.tuples.get(key, ())
        if known is None or value.items is None or (known and len(known) != len(value.items)):
            self.tuples[key] = None
        else:
            self.tuples[key] = tuple(map(join, known, value.items)) if known else value.items

    def stored_items(self, read: ast.Subscript, value: Value) -> tuple[Value, ...] | None:
        """The positions of an item read from a container that holds tuples of one length (``data, stamp =
        cache[url]``): each the values stored there, with what else the container holds (``value``'s other
        origins), so that the time a cache entry was stored does not reach the data stored beside it."""
        key = dotted(read.value)
        known = self.tuples.get(key) if key else None
        if not known:
            return None
        stored = reduce(frozenset.union, (item.origins for item in known))
        rest = value.origins - stored
        return tuple(Value(item.origins | rest) if rest else item for item in known)

    def passed(self, bindings: dict[str, Value]) -> Value:
        """What a call not followed returns: all it is given (not the fields of ``self`` its caller set, which it
        may not read), but a parameter's own value in a run that looks for the parameters sent
        (:attr:`Sinks.parameters`): that the call passes it on is not known."""
        value = combine(*(value for name, value in bindings.items() if not name.startswith("self.")))
        if self.sinks.parameters is None or not value.origins:
            return value
        return Value(frozenset(origin for origin in value.origins if origin.kind != PARAM))

    def invoke(self, function: Function, bindings: dict[str, Value], fields: dict[str, Value] | None = None) -> Value:
        """The return value of ``function`` run with its parameters bound to ``bindings`` (others CLEAN); a method
        starts with the ``self.x`` its class's ``__init__`` set, and ``fields`` collects those an ``__init__`` sets.
        A run deep in a chain of calls that cut a call short (:data:`MAX_CALL_DEPTH`) is remembered with the depth
        it had, and run again where it can follow more: its sinks then see what they are sent."""
        known_values = sorted(
            (item for item in bindings.items() if item[1] != CLEAN or item[0].startswith("self.")),
            key=lambda item: item[0],
        )
        key = (id(function), tuple(known_values))  # a parameter bound to CLEAN is one not given (a field is given)
        depth = self.reach - len(self.stack)
        known = self.memo.get(key) if fields is None else None  # a run that collects fields runs the body
        if known is not None and known[1] >= depth:
            self.cut = self.cut or known[1] < MAX_CALL_DEPTH  # what it returned then was cut short too
            calls = self.sinks.reaching.get(id(function))
            if calls is not None:  # its sinks are its callers' too, one call deeper
                self.sinks.reach_from(calls + 1)
            return known[0]
        if function in self.stack:  # a recursive call: what it reads again, not how long it waits for it
            return self.passed({name: value for name, value in bindings.items() if not self.words.names_a_wait(name)})
        if not depth:
            self.cut = True
            return self.passed(bindings)
        self.stack.append(function)
        outer, self.order = self.order, frozenset()  # a call's own collections are not the caller's loop's
        items, self.items = self.items, frozenset()
        deciding, self.deciding = self.deciding, frozenset()  # nor its texts the caller's branch's
        gating, self.gating = self.gating, frozenset()
        outer_cut, self.cut = self.cut, False
        scope = Scope(self.globals)
        scope.vars.update(self.fields.get(id(function), {}))
        given = {name: value for name, value in bindings.items() if name.startswith("self.")}
        scope.vars.update(given)
        self.given_fields.append(frozenset(given))
        spec = function.args
        for arg in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs, spec.vararg, spec.kwarg):
            if arg is not None:
                scope.vars[arg.arg] = bindings.get(arg.arg, CLEAN)
        returns: list[Value] = []
        self.block(function.body, scope, returns)
        if fields is not None:  # what it sets; what it sets again to a plain value is no longer known
            for name, value in scope.vars.items():  # (self.names = sorted(names) of a set field)
                if name.startswith("self."):
                    if _kept(value):
                        fields[name] = value
                    else:
                        fields.pop(name, None)
        self.stack.pop()
        self.given_fields.pop()
        self.order, self.items, self.deciding, self.gating = outer, items, deciding, gating
        if self.must:  # what every path returns: falling off the end returns None
            result = meet(*returns, *([] if _exits(function.body) else [CLEAN])) if returns else CLEAN
        else:
            result = reduce(join, returns) if returns else CLEAN
        self.memo[key] = (result, depth if self.cut else MAX_CALL_DEPTH)
        self.cut = self.cut or outer_cut
        return result


def _compares(test: ast.expr) -> bool:
    """Whether an ``if`` compares what a value holds (``hour >= 22``, ``period == "night"``, and ``and``/``or``/
    ``not`` of such), not whether there is one: ``if existing:`` of records that hold ids, ``prompt is DEFAULT``, ``key
    in ids`` are decided by what is there, the same at any time."""
    if isinstance(test, ast.BoolOp):
        return any(_compares(value) for value in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _compares(test.operand)
    return isinstance(test, ast.Compare) and not any(
        isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)) for op in test.ops
    )


def _only_item(test: ast.expr) -> str | None:
    """The name an ``if`` tests to hold one item (``len(matches) == 1``), else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return None
    counted, count = test.left, test.comparators[0]
    if not (isinstance(count, ast.Constant) and count.value == 1 and isinstance(counted, ast.Call)):
        return None
    if isinstance(counted.func, ast.Name) and counted.func.id == "len" and len(counted.args) == 1:
        return counted.args[0].id if isinstance(counted.args[0], ast.Name) else None
    return None


def _iterated_into(function: Function, name: str) -> frozenset[tuple[int, int]]:
    """Where what a function binds ``name`` to by a comprehension iterates (``matches = [k for k in servers if
    ...]``: ``servers``), as (line, column): the order it takes there is the list's own, not its items'."""
    return frozenset(
        (generator.iter.lineno, generator.iter.col_offset)
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        and any(isinstance(target, ast.Name) and target.id == name for target in node.targets)
        and isinstance(node.value, (ast.ListComp, ast.SetComp, ast.GeneratorExp))
        for generator in node.value.generators
    )


def _skips(body: Sequence[ast.stmt]) -> bool:
    """Whether a block only leaves its loop's iteration (``continue``, ``break``): the loop's body after it runs
    only where it was not taken. Not ``return``: what a function returns before a fresh build (a cached prompt
    while it is young) is most often what the build makes; not a block that does more first (a command a REPL
    runs, then reads the next)."""
    return len(body) == 1 and isinstance(body[0], (ast.Continue, ast.Break))


def _own_text(node: ast.expr) -> bool:
    """Whether an expression is text written out where it is (a string, an f-string, or such joined with ``+``)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _own_text(node.left) and _own_text(node.right)
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _bound_on_self(init: Function | None) -> set[str]:
    """The fields an ``__init__`` binds (``self.x = ...``), as ``self.x``."""
    if init is None:
        return set()
    return {
        f"self.{field}"
        for node in ast.walk(init)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign))
        for target in targets_of(node)
        if (field := self_field(target)) is not None
    }


def _called_on_self(init: Function, methods: list[Function]) -> list[Function]:
    """The methods of its class that ``__init__`` calls on ``self`` (``self._set_from_env()``): the fields they set
    are the object's too."""
    called = self_uses(init).called
    return [method for method in methods if method.name in called and method is not init]


def _exits(body: Sequence[ast.stmt]) -> bool:
    """Whether a block always returns or raises at its end (an ``if`` whose branches all do, a ``try`` whose body
    and handlers do): what follows it is not reached from it."""
    if not body:
        return False
    last = body[-1]
    if isinstance(last, (ast.Return, ast.Raise)):
        return True
    if isinstance(last, ast.If):
        return _exits(last.body) and _exits(last.orelse)
    if isinstance(last, (ast.With, ast.AsyncWith)):
        return _exits(last.body)
    if isinstance(last, _TRIES):
        handlers = getattr(last, "handlers", [])
        ended = _exits(getattr(last, "body", [])) or _exits(getattr(last, "orelse", []))
        return _exits(getattr(last, "finalbody", [])) or (ended and all(_exits(handler.body) for handler in handlers))
    return False


def _maps_to_sets(annotation: ast.expr) -> bool:
    """Whether an annotation is a mapping whose values are sets (``dict[str, set[str]]``, ``Dict[str, Set[int]]``)."""
    if not isinstance(annotation, ast.Subscript) or last_name(annotation.value) not in MAPPING_ANNOTATIONS:
        return False
    parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else []
    held = parts[-1] if len(parts) == 2 else None
    if isinstance(held, ast.Subscript):
        held = held.value
    return held is not None and last_name(held) in SET_ANNOTATIONS


def declares_set(annotation: ast.expr, optional: bool = True) -> bool:
    """Whether an annotation declares a set whose order differs between processes (``set[str]``, ``Set[str]``,
    ``frozenset``; ``set[str] | None`` and ``Optional[set[str]]`` too when ``optional``): not an ``AbstractSet`` (a
    dict's keys view, in insertion order), nor a set of ints or bools, which hash to themselves."""
    if optional and isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        if isinstance(annotation.right, ast.Constant) and annotation.right.value is None:
            annotation = annotation.left
    elif optional and isinstance(annotation, ast.Subscript) and last_name(annotation.value) == "Optional":
        annotation = annotation.slice
    if isinstance(annotation, ast.Subscript):
        if last_name(annotation.slice) in ("int", "bool"):
            return False
        annotation = annotation.value
    name = last_name(annotation)
    return name is not None and name in SET_ANNOTATIONS and name != "AbstractSet"


def set_fields(node: ast.ClassDef) -> dict[str, ast.expr]:
    """The fields a class declares to hold the sets its constructor is given, kept as they are, with their
    annotations: of a class whose constructor keeps what it is given (no ``__init__`` of its own: a dataclass, a
    pydantic or attrs model; not a ``TypedDict`` nor a ``NamedTuple``, read by key or position), the fields
    annotated as sets (:func:`declares_set`) with no default of their own (``tools: set[str]``, ``= None``,
    ``= Field(default=None)``, ``= Field(default_factory=set)``; a field with a default is followed from it)."""
    if any(
        isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "__init__" for item in node.body
    ) or any(last_name(base) in ("TypedDict", "NamedTuple") for base in node.bases):
        return {}
    return {
        item.target.id: item.annotation
        for item in node.body
        if isinstance(item, ast.AnnAssign)
        and isinstance(item.target, ast.Name)
        and _no_default(item.value)
        and declares_set(item.annotation)
    }


def _no_default(value: ast.expr | None) -> bool:
    """Whether a field is declared with no value of its own: none, ``None``, or pydantic's ``Field(None)`` and
    dataclasses' ``field(default=None)``; or an empty set made for each object (``Field(default_factory=set)``),
    which holds nothing until it is given or filled, then in hash order."""
    if value is None or (isinstance(value, ast.Constant) and value.value is None):
        return True
    if not (isinstance(value, ast.Call) and last_name(value.func) in ("Field", "field")):
        return False
    given = {keyword.arg: keyword.value for keyword in value.keywords}
    factory = given.get("default_factory")
    if factory is not None:
        made = factory.body if isinstance(factory, ast.Lambda) else factory
        if isinstance(made, ast.Call) and not made.args and not made.keywords:
            made = made.func  # lambda: set()
        return isinstance(made, ast.Name) and made.id in ("set", "frozenset")
    default = value.args[0] if value.args else given.get("default")
    return isinstance(default, ast.Constant) and default.value is None


def _tabled(table: Value, value: Value) -> tuple[tuple[tuple[str, Value], ...] | None, str | None]:
    """The entries and class of a table of records once ``value`` is stored in it by key (:data:`TABLE`): what each
    key of its records holds, joined; a value that differs and is no record leaves it a plain dict."""
    if value.entries:
        known = value if table.cls != TABLE else join(Value(entries=table.entries), Value(entries=value.entries))
        return known.entries, TABLE
    if value.origins:
        return None, None
    return table.entries, table.cls


def _kept(value: Value) -> bool:
    """Whether an object's field is worth knowing in its methods: it differs, is a set, or is an object whose class
    the project knows (:attr:`Value.cls`: its own fields are read through it)."""
    return bool(value.origins) or value.unordered is not None or value.cls is not None


def _decorator_name(decorator: ast.expr) -> str | None:
    """A decorator's last name, called or not (``@function_tool(...)``, ``@agent.tool``)."""
    return last_name(decorator.func if isinstance(decorator, ast.Call) else decorator)


def _count(node: ast.expr) -> bool:
    """Whether ``node`` is a number (``count += 1``, ``total += len(s)``): a sum is the same in any order."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in ("len", "sum", "int", "float", "abs", "round", "min", "max")
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def _extends(node: ast.Assign) -> bool:
    """Whether ``name = name + ...`` or ``name = f"{name}..."`` extends the name it rebinds."""
    if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
        return False
    name, value = node.targets[0].id, node.value
    if isinstance(value, ast.JoinedStr):
        return any(
            isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.value.id == name
            for part in value.values
        )
    while isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):  # text + " " + s: its first operand
        value = value.left
    return value is not node.value and isinstance(value, ast.Name) and value.id == name


def _runs_as_script(test: ast.expr) -> bool:
    """Whether an ``if`` test is ``__name__ == "__main__"``."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and constant(test.comparators[0]) == "__main__"
    )


def _changed_object(node: ast.expr) -> str | None:
    """The key of the object an item assignment into a nested part of it changes: the nearest part bound to a name
    (``schema`` of ``schema["function"]["description"] = ...``, ``tool.stats`` of ``tool.stats["calls"]["n"] =
    ...``), but through a getter, whose result is a part of the object it is called on: then the object
    (``tool`` of ``tool.info.properties()[k] = ...``), or ``self.x`` for a field (``self`` as a whole would reach
    every other field)."""
    through_getter = False
    while (key := dotted(node)) is None:
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func.value if isinstance(node.func, ast.Attribute) else node.func
            through_getter = True
        elif isinstance(node, ast.Attribute):
            node = node.value
        else:
            return None
    if not through_getter:
        return key
    root, _, rest = key.partition(".")
    if root in ("self", "cls"):
        return f"{root}.{rest.partition('.')[0]}" if rest else None
    return root
