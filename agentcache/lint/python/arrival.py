"""Collections filled in the order concurrent tasks finish: what a coroutine started many times at once (by
``asyncio.gather``, ``create_task`` in a loop, a list of coroutines) or a function run on a pool's threads stores
after it has waited, in a field of ``self`` or a collection of the function around it. The order of such a
collection is the order the tasks finished in, which differs from call to call (MCP servers connected at once, each
client stored as its connection completes, their tools listed in that order)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field

from agentcache.lint.python.syntax import Function, code, dotted, last_name, own_nodes, self_field, statements
from agentcache.lint.python.values import ARRIVAL, ARRIVAL_KEYS, Origin

#: Calls that run the coroutines or tasks in their arguments at once: a call made in them is started with others.
_RUNNERS = frozenset({"gather", "wait", "as_completed"})
#: Calls that start a task or a thread of what they are given, at once with others when made in a for loop or a
#: comprehension: by name, the position of what they run (a coroutine ``create_task(f(x))``, a coroutine function
#: ``start_soon(f, x)``, a function ``executor.submit(f, x)``), and whether it runs on a thread, where all it stores
#: is in finishing order.
_STARTERS = {
    "create_task": (0, False),
    "ensure_future": (0, False),
    "start_soon": (0, False),
    "run_coroutine_threadsafe": (0, False),
    "submit": (0, True),
    "to_thread": (0, True),
    "run_sync": (0, True),
    "run_in_executor": (1, True),
}
#: Calls that run the coroutine they are given to its end before returning.
_BLOCKING = frozenset({"run", "run_until_complete", "wait_for", "shield"})
#: Methods that add to a collection in place.
_ADDERS = frozenset({"append", "extend", "insert", "add", "update", "setdefault", "appendleft", "extendleft"})
#: Of those, the ones that add keys to a dict.
_KEYED_ADDERS = frozenset({"update", "setdefault"})
#: Names of a position in a sequence: a task that stores its result there keeps the order the tasks started in.
_INDEX_NAMES = frozenset({"i", "j", "idx", "index", "position", "pos", "slot", "ordinal"})
#: Calls on a task or a future that wait for it to finish: a task made and waited for in one iteration runs alone.
_WAITS = frozenset({"result", "wait", "join"})
#: Words of the name of what ``submit`` is called on that say it runs functions on threads (not a web form's).
_POOL_WORDS = ("pool", "executor")

#: Nodes that hold no call: the walk does not enter them.
_BARE = (
    ast.Name,
    ast.Constant,
    ast.expr_context,
    ast.operator,
    ast.cmpop,
    ast.unaryop,
    ast.boolop,
    ast.Import,
    ast.ImportFrom,
    ast.Pass,
    ast.Break,
    ast.Continue,
    ast.arguments,
)
#: The names of what starts or runs tasks at once, looked for in a module's text.
_STARTS = tuple(sorted({*_RUNNERS, *_STARTERS}))
#: What follows a name that is called.
_CALLED = re.compile(r"\s*\(")

#: The collections one start fills in finishing order: the scope key (``self._clients``, ``results``) -> the store.
Marks = tuple[tuple[str, Origin], ...]


@dataclass
class Arrivals:
    """What a module's concurrent starts fill in finishing order: by the start's call (its node id), what to mark
    in the scope where it runs; by class (its node id), the fields of ``self`` every method then reads in that order."""

    by_call: dict[int, Marks] = field(default_factory=dict)
    by_class: dict[int, dict[str, Origin]] = field(default_factory=dict)


def starting_lines(text: str) -> frozenset[int]:
    """The lines of a module's text that call what starts or runs tasks at once: only the statements around them
    are walked (a tree's walk costs as much as a fifth of the analysis). Each name is looked for with ``find``,
    faster than a regular expression's alternation tried at every word (4 times on agent packages' modules)."""
    found: set[int] = set()
    for name in _STARTS:
        start = text.find(name)
        while start >= 0:
            end = start + len(name)
            before = text[start - 1] if start else " "
            if not (before.isalnum() or before == "_") and _CALLED.match(text, end):
                found.add(text.count("\n", 0, start) + 1)
            start = text.find(name, end)
    return frozenset(found)


def arrivals(tree: ast.Module, lines: frozenset[int] | None = None) -> Arrivals:
    """The module's concurrent starts and what they fill: in the top-level statements (the methods, in a class)
    that hold one of ``lines`` (None: all)."""
    found = Arrivals()
    if lines is not None and not lines:
        return found
    scan = _Scan(tree, found)
    for node in tree.body:
        if lines is not None and not _holds(node, lines):
            continue
        if isinstance(node, ast.ClassDef) and lines is not None:
            scan.classes.append(node)
            for item in node.body:
                if _holds(item, lines):
                    scan.visit(item)
            scan.classes.pop()
        else:
            scan.visit(node)
    return found


def _holds(node: ast.stmt, lines: frozenset[int]) -> bool:
    end = node.end_lineno or node.lineno
    return any(node.lineno <= line <= end for line in lines)


class _Scan(ast.NodeVisitor):
    """One walk of the module, knowing the class and the functions around each node, whether it repeats, and the
    tasks the iteration it is in waits for."""

    def __init__(self, tree: ast.Module, found: Arrivals) -> None:
        self.found = found
        self.top = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.class_nodes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
        self.classes: list[ast.ClassDef | None] = [None]
        self.functions: list[Function] = []
        self.loops: list[list[ast.stmt]] = []  # the bodies of the for loops around (not a while loop's: turns)
        self.comprehensions = 0  # how many comprehensions are around
        self.nested: dict[int, dict[str, Function]] = {}  # function id -> the functions defined in it, by name
        self.stored: dict[tuple[int, bool], Marks] = {}  # (function id, on a thread) -> what it stores as it finishes

    def visit(self, node: ast.AST) -> None:
        if not isinstance(node, _BARE):
            super().visit(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.classes.append(node)
        outer, self.functions = self.functions, []
        self.generic_visit(node)
        self.functions = outer
        self.classes.pop()

    def visit_FunctionDef(self, node: Function) -> None:
        self.functions.append(node)
        outer, self.loops, self.comprehensions = (self.loops, self.comprehensions), [], 0
        self.generic_visit(node)
        self.loops, self.comprehensions = outer
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def comprehension_around(self, node: ast.AST) -> None:
        self.comprehensions += 1
        self.generic_visit(node)
        self.comprehensions -= 1

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = comprehension_around

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)  # made once: ``async for chunk in self.stream()`` starts nothing with others
        self.loops.append(node.body)
        for statement in (*node.body, *node.orelse):
            self.visit(statement)
        self.loops.pop()

    visit_AsyncFor = visit_For

    def visit_Assign(self, node: ast.Assign) -> None:
        names = [target.id for target in node.targets if isinstance(target, ast.Name)]
        value = node.value
        started = _started(value) if self.loops and names and isinstance(value, ast.Call) else None
        if isinstance(value, ast.Call) and started and self.stores(*started) and _waited_in(self.loops[-1], names):
            self.run_through(value)  # task = create_task(fetch(s)); await task: one at a time
        else:
            self.generic_visit(node)

    def visit_Await(self, node: ast.Await) -> None:
        if isinstance(node.value, ast.Call) and last_name(node.value.func) not in _RUNNERS:
            self.run_through(node.value)  # awaited: it runs to its end before the next starts
        else:
            self.generic_visit(node)

    def run_through(self, call: ast.Call) -> None:
        """Visit what a call run to its end is made of, not the call, nor the calls it is given (``await
        asyncio.wait_for(f(x), 10)``): they are not started at once with others."""
        for child in (call.func, *call.args, *(keyword.value for keyword in call.keywords)):
            if isinstance(child, ast.Call) and last_name(child.func) not in _RUNNERS:
                self.run_through(child)
            else:
                self.visit(child)

    def visit_Call(self, node: ast.Call) -> None:
        called = last_name(node.func)
        if called in _BLOCKING or (called in _RUNNERS and not any(_many(arg) for arg in node.args)):
            # one coroutine run to its end (asyncio.run(main(x)) in a loop), or a few run at once (gather(a(), b())):
            # a collection is in finishing order only where two of them add to it
            if called in _RUNNERS:
                self.together(node.args)
            self.run_through(node)
            return
        if called in _WAITS and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Call):
            self.run_through(node.func.value)  # pool.submit(load, path).result(): waited for where it is started
            for argument in (*node.args, *(keyword.value for keyword in node.keywords)):
                self.visit(argument)
            return
        if self.loops or self.comprehensions:  # a coroutine made with others, a task or a thread started with others
            started = _started(node)
            if started is not None:
                self.record(node, self.stores(*started))
        self.generic_visit(node)

    def together(self, arguments: list[ast.expr]) -> None:
        """Coroutines run at once by one call, one each: what two or more of them add to is in finishing order."""
        items = [item for arg in arguments for item in (arg.elts if isinstance(arg, (ast.List, ast.Tuple)) else [arg])]
        started = []
        for call in items:
            run = _started(call) if isinstance(call, ast.Call) else None
            if isinstance(call, ast.Call) and run is not None:  # gather(create_task(a()), to_thread(load))
                started.append((call, self.stores(*run)))
        counts = Counter(key for _, marks in started for key, _ in marks)
        for call, marks in started:
            self.record(call, tuple((key, origin) for key, origin in marks if counts[key] > 1))

    def stores(self, target: ast.expr, threaded: bool) -> Marks:
        """What the function ``target`` names adds, in finishing order, to collections that outlive it: a
        coroutine function's (not an async generator's), or any function's run on a thread."""
        function = self.resolve(target)
        if function is None or (not threaded and not isinstance(function, ast.AsyncFunctionDef)):
            return ()
        known = self.stored.get((id(function), threaded))
        if known is None:
            nodes = list(own_nodes(function))
            generator = not threaded and any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in nodes)
            known = self.stored[id(function), threaded] = (
                () if generator else tuple(_stores(function, nodes, waited=threaded).items())
            )
        return known

    def record(self, call: ast.Call, marks: Marks) -> None:
        """Note the collections a start fills in finishing order, at its call and as its class's fields (unless the
        method that starts them sorts or rebinds the field after: ``self.tools.sort(key=...)``)."""
        if not marks:
            return
        self.found.by_call[id(call)] = marks
        owner = self.classes[-1]
        if owner is None:
            return
        method = self.functions[0] if self.functions else None
        fields = self.found.by_class.setdefault(id(owner), {})
        for key, origin in marks:
            if key.startswith("self.") and not (method is not None and _settled(method, key, call)):
                fields.setdefault(key, origin)

    def resolve(self, target: ast.expr) -> Function | None:
        """The function a name or ``self.name`` calls: one nested in the functions around, a method of the class
        around or of a base of it the module defines, or one of the module's."""
        if isinstance(target, ast.Name):
            for function in reversed(self.functions):
                nested = self.nested.get(id(function))
                if nested is None:
                    nested = self.nested[id(function)] = {
                        item.name: item
                        for item in statements(function)
                        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                    }
                if target.id in nested:
                    return nested[target.id]
            return self.top.get(target.id)
        owner = self.classes[-1]
        if not (isinstance(target, ast.Attribute) and dotted(target.value) == "self" and owner is not None):
            return None
        seen: set[str] = set()
        lineage = [owner]
        while lineage:
            cls = lineage.pop(0)
            for item in cls.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == target.attr:
                    return item
            for base in cls.bases:
                if isinstance(base, ast.Name) and base.id in self.class_nodes and base.id not in seen:
                    seen.add(base.id)
                    lineage.append(self.class_nodes[base.id])
        return None


def _started(call: ast.Call) -> tuple[ast.expr, bool] | None:
    """What a call starts, and whether on a thread: the function a starter is given (``create_task(f(x))``,
    ``executor.submit(f, x)``: not a web form's ``submit``), else the call's own function (a coroutine made)."""
    called = last_name(call.func)
    if called not in _STARTERS:
        return call.func, False
    if called == "submit" and not any(word in (_receiver(call.func) or "").lower() for word in _POOL_WORDS):
        return None
    position, threaded = _STARTERS[called]
    if len(call.args) <= position:
        return None
    run = call.args[position]
    return (run.func if isinstance(run, ast.Call) else run), threaded


def _receiver(func: ast.expr) -> str | None:
    """What a method is called on, dotted (``self.pool`` of ``self.pool.submit``)."""
    return dotted(func.value) if isinstance(func, ast.Attribute) else None


def _waited_in(body: list[ast.stmt], names: list[str]) -> bool:
    """Whether a loop's body waits for what one of ``names`` holds (``await task``, ``future.result()``): a task bound
    to it is waited for in the iteration that starts it."""
    for node in (item for statement in body for item in ast.walk(statement)):
        if isinstance(node, ast.Await) and isinstance(node.value, ast.Name) and node.value.id in names:
            return True
        if isinstance(node, ast.Call) and last_name(node.func) in _WAITS and _receiver(node.func) in names:
            return True
    return False


def _settled(method: Function, key: str, start: ast.Call) -> bool:
    """Whether ``method`` sorts the field ``key`` in place or binds it again after ``start``."""
    after = (start.lineno, start.col_offset)
    for node in ast.walk(method):
        if (getattr(node, "lineno", 0), getattr(node, "col_offset", 0)) <= after:
            continue
        if isinstance(node, ast.Call) and last_name(node.func) == "sort" and _receiver(node.func) == key:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(dotted(target) == key for target in targets):
                return True
    return False


def _many(node: ast.expr) -> bool:
    """Whether an argument gives a gather many awaitables (``*tasks``, a comprehension)."""
    return isinstance(node, (ast.Starred, ast.ListComp, ast.GeneratorExp, ast.SetComp))


def _stores(function: Function, nodes: list[ast.AST], waited: bool) -> dict[str, Origin]:
    """The collections ``function`` (whose own ``nodes`` these are) adds to that outlive it (a field of ``self``, a
    name it does not bind), after it has first waited (``await``; a thread's: anywhere), each with the first place
    it adds there."""
    local = {argument.arg for argument in ast.walk(function.args) if isinstance(argument, ast.arg)}
    local |= {node.id for node in nodes if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)}
    first_wait = min(
        (
            (node.lineno, node.col_offset)
            for node in nodes
            if isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith))
        ),
        default=None,
    )
    positions = {  # parameters that give a position: results[index] = await coro keeps the order started in
        argument.arg
        for argument in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
        if (isinstance(argument.annotation, ast.Name) and argument.annotation.id == "int")
    }
    found: dict[str, Origin] = {}
    for node in nodes:
        places: list[tuple[ast.expr, ast.expr]]
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):  # a key given: the keys' order
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            places = [
                (target.value, target)
                for target in targets
                if isinstance(target, ast.Subscript) and not positional(target.slice, positions)
            ]
            kind = ARRIVAL_KEYS
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _ADDERS:
            places = [(node.func.value, node)]
            kind = ARRIVAL_KEYS if node.func.attr in _KEYED_ADDERS else ARRIVAL
        else:
            continue
        done = (node.end_lineno or node.lineno, node.end_col_offset or 0)  # what it awaits in itself comes first
        for held, site in places:
            key = _outliving(held, local)
            if key is None or (not waited and (first_wait is None or first_wait >= done)):
                continue
            origin = Origin(site.lineno, site.col_offset, kind, code(site))
            if key not in found or origin < found[key]:
                found[key] = origin
    return found


def positional(key: ast.expr, positions: Collection[str] = ()) -> bool:
    """Whether a store's key is a position (an int, one of ``positions``, a name that says index): results stored
    so keep the order their tasks were started in."""
    if isinstance(key, ast.Constant):
        return isinstance(key.value, int)
    if not isinstance(key, ast.Name):
        return False
    name = key.id.lower()
    return key.id in positions or name in _INDEX_NAMES or name.endswith(("_index", "_idx", "_position"))


def _outliving(node: ast.expr, local: set[str]) -> str | None:
    """The scope key of a collection that outlives the function: ``self.x``, or a name it does not bind."""
    field = self_field(node)
    if field is not None:
        return f"self.{field}"
    if isinstance(node, ast.Name) and node.id not in local and node.id != "self":
        return node.id
    return None
