"""Reading the AST: the small questions every part of the analysis asks of a node (its dotted name, its constant,
its source text) and the facts gathered once per module (imports, functions it can follow)."""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import NamedTuple

Function = ast.FunctionDef | ast.AsyncFunctionDef


def code(node: ast.AST) -> str:
    """The node's source on one line, cut to fit in a message."""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= 48 else text[:45] + "..."


def constant(node: ast.expr | None) -> object:
    return node.value if isinstance(node, ast.Constant) else None


def constant_at(node: ast.Dict, key: str) -> object:
    """The constant a dict literal has under the constant ``key`` (None: absent or not a constant)."""
    return constant(entry_at(node, key))


def entry_at(node: ast.Dict, key: str) -> ast.expr | None:
    """The expression a dict literal has under the constant ``key`` (None: absent)."""
    for item_key, item_value in zip(node.keys, node.values, strict=True):
        if constant(item_key) == key:
            return item_value
    return None


@functools.lru_cache(maxsize=1)
def walk_module(tree: ast.Module) -> tuple[ast.AST, ...]:
    """Every node of ``tree``, as :func:`ast.walk` yields them, walked once for all who ask: several analyses of a
    module walk all of it (the message dicts a function never sends, the arguments its calls agree on, the
    breakpoint rules), and a walk costs as much as a twentieth of its analysis. The last module's is kept."""
    return tuple(ast.walk(tree))


def dotted(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name: the key a scope binds attributes under."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def last_name(node: ast.expr) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None


def starred(nodes: Iterable[ast.expr]) -> bool:
    """Whether any of ``nodes`` is ``*x``, after which no position is known."""
    return any(isinstance(node, ast.Starred) for node in nodes)


def unpacks(call: ast.Call) -> bool:
    """Whether a call unpacks arguments (``*args``, ``**kwargs``) into the parameters it fills."""
    return starred(call.args) or any(kw.arg is None for kw in call.keywords)


def callable_without_arguments(function: Function, bound: int = 0) -> bool:
    """Whether ``function`` can be called with no arguments but its ``bound`` first ones (a method's ``self``)."""
    spec = function.args
    return len(spec.defaults) >= len(spec.posonlyargs) + len(spec.args) - bound and None not in spec.kw_defaults


def takes_arguments(function: Function, bound: int = 0) -> bool:
    """Whether ``function`` has parameters besides its ``bound`` first ones (a method's ``self``)."""
    spec = function.args
    return len(spec.posonlyargs) + len(spec.args) > bound or bool(spec.vararg or spec.kwonlyargs or spec.kwarg)


def unread_parameters(function: Function, names: Collection[str]) -> frozenset[str]:
    """The parameters among ``names`` that ``function`` takes and its body never reads: what a call gives them is
    dropped. None of a body that only declares (a docstring, ``pass``, ``...``, a ``raise``: a stub that another
    definition replaces) or reads its ``locals()``."""
    spec = function.args
    unread = {arg.arg for arg in (*spec.posonlyargs, *spec.args, *spec.kwonlyargs) if arg.arg in names}
    if not unread or all(_declares(statement) for statement in function.body):
        return frozenset()
    for statement in function.body:
        for node in ast.walk(statement):
            if isinstance(node, ast.Name):
                unread.discard(node.id)
                if node.id in ("locals", "vars") or not unread:
                    return frozenset()
    return frozenset(unread)


def _declares(statement: ast.stmt) -> bool:
    return isinstance(statement, (ast.Pass, ast.Raise)) or (
        isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
    )


def returns_own_class(function: Function) -> bool:
    """Whether ``function`` returns, by name, a class defined in its body."""
    nodes = statements(function)
    classes = {node.name for node in nodes if isinstance(node, ast.ClassDef)}
    return any(
        isinstance(node, ast.Return) and isinstance(node.value, ast.Name) and node.value.id in classes for node in nodes
    )


#: Nodes whose ``value`` leaves where it is written: returned, yielded, awaited, bound.
_HOLDERS = (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Assign, ast.AnnAssign, ast.AugAssign)


def escaping(function: Function | ast.If, consumes: Callable[[ast.expr], bool] = lambda node: False) -> frozenset[str]:
    """The names whose object leaves ``function`` (or a script's block) as it is (or through a function nested in
    it): returned or yielded, given to a call, bound to another name or stored, or put in a collection (not bound by
    unpacking: ``prompt, tokens = ...``). A name only iterated, tested or combined with others (``requested &
    KNOWN``, ``for name in supported``), or given to a call or put in a dict that ``consumes`` says keeps nothing of
    it (a token estimate, ``sorted``, a report), or stored only in places ``consumes`` says keep no order (an
    assignment's targets, a dict's key: a policy), is consumed where it is."""
    found: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, (ast.Call, ast.Dict)) and consumes(node):
            continue
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and all(map(consumes, targets_of(node))):
            continue  # stored only where a policy is kept: profile["allowed_tools"] = tools
        if isinstance(node, _HOLDERS):
            held = [node.value]
        elif isinstance(node, ast.Call):
            held = [*node.args, *(keyword.value for keyword in node.keywords)]
        elif isinstance(node, ast.Set) or (
            isinstance(node, (ast.List, ast.Tuple)) and isinstance(node.ctx, ast.Load)
        ):  # not a target: ``prompt, tokens = build()`` binds the name, puts it in no collection
            held = list(node.elts)
        elif isinstance(node, ast.Dict):
            held = [value for key, value in zip(node.keys, node.values, strict=True) if not (key and consumes(key))]
        else:
            continue
        for value in held:
            if isinstance(value, ast.Starred):
                value = value.value
            if isinstance(value, ast.Name):
                found.add(value.id)
    return frozenset(found)


def targets_of(node: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[ast.expr]:
    """Where an assignment stores its value."""
    return node.targets if isinstance(node, ast.Assign) else [node.target]


def read_as_globals(nodes: Iterable[ast.stmt]) -> frozenset[str]:
    """The names the functions among ``nodes`` read without binding them (their own parameters and assignments
    bind): a module's names they read as globals."""
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            read: set[str] = set()
            bound: set[str] = set()
            for inner in ast.walk(node):
                if isinstance(inner, ast.Name):
                    (read if isinstance(inner.ctx, ast.Load) else bound).add(inner.id)
                elif isinstance(inner, ast.arg):  # a parameter, of the function or of one nested in it
                    bound.add(inner.arg)
            found |= read - bound
    return frozenset(found)


def bound_names(target: ast.expr) -> frozenset[str]:
    """The names a ``for`` target binds (``item``, ``key, (a, b)``, ``*rest``)."""
    return frozenset(node.id for node in ast.walk(target) if isinstance(node, ast.Name))


def top_level_bindings(tree: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """Each ``name = value`` and ``name: T = value`` at the module's top level, in order (a rebinding again)."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if isinstance(target, ast.Name):
            yield target.id, value


def unpacked(target: ast.Tuple | ast.List, source: ast.expr | None) -> list[tuple[ast.expr, ast.expr | None]]:
    """Pair each target with its own source expression when both sides are literal tuples of one length."""
    if (
        isinstance(source, (ast.Tuple, ast.List))
        and len(source.elts) == len(target.elts)
        and not starred((*source.elts, *target.elts))
    ):
        return list(zip(target.elts, source.elts, strict=True))
    return [(element, None) for element in target.elts]


#: Statement type -> its fields that hold statements (blocks), or ``handlers``/``cases`` whose items hold one.
_NESTED = {
    kind: tuple(name for name in ("body", "orelse", "finalbody", "handlers", "cases") if name in kind._fields)
    for kind in ast.stmt.__subclasses__()
}


def statements(tree: ast.Module | Function) -> list[ast.stmt]:
    """Every statement of the module (or function), nested ones too, without descending into expressions: imports
    and definitions are statements, and a walk of every node costs a third of the analysis."""
    return [statement for block, _ in blocks(tree) for statement in block]


def blocks(tree: ast.Module | Function) -> Iterator[tuple[list[ast.stmt], ast.AST]]:
    """Every block of statements of the module (or function), nested ones too, each with the definition it is the
    body of or nested in (the module, a class, a function): what its statements are defined in."""
    pending: list[tuple[list[ast.stmt], ast.AST]] = [(tree.body, tree)]
    while pending:
        block, owner = pending.pop()
        yield block, owner
        for statement in block:
            inner = statement if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else owner
            for name in _NESTED[type(statement)]:  # most statements hold none
                part = getattr(statement, name)
                if name in ("handlers", "cases"):
                    pending.extend((item.body, inner) for item in part)
                else:
                    pending.append((part, inner))


def own_nodes(function: Function) -> Iterator[ast.AST]:
    """The nodes of ``function``'s body, not those of the functions and classes defined in it (their own)."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))


#: Calls that make a container (:func:`returns_text`), and the last words of those that serialize one (``json.dumps``,
#: ``json_dumps``, ``model_dump``, ``to_json``, ``to_dict``): a time or an id is kept there beside other values.
_CONTAINERS = frozenset({"dict", "list", "set", "frozenset", "tuple", "asdict"})
_SERIALIZERS = frozenset({"dumps", "dump", "json", "dict"})


def returns_text(function: Function, parts: bool = False) -> bool:
    """Whether ``function`` returns text (or a tuple of texts), not an object or a container that holds a value
    among others (a record's timestamp, a cache entry's time): by its annotation (``-> str``, ``str | None``,
    ``tuple[str, str]``) where it has one, else by what its ``return`` statements give: no constructor, display of
    a container (or its JSON text) or read of an object's attribute or item, and the names they give bound to
    nothing of the kind. With ``parts``, a list of texts counts too (``-> list[str]``, ``[persona, *rules]``): a
    prompt's parts, where the function's name says it makes a prompt."""
    if function.returns is not None:
        return _text_annotation(function.returns, _PARTS_CONTAINERS if parts else _TEXT_CONTAINERS)
    bound: dict[str, list[ast.expr]] = {}
    returned: list[ast.expr] = []
    for node in own_nodes(function):  # a nested definition's returns are its own
        if isinstance(node, ast.Return) and node.value is not None:
            returned.append(node.value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
            for target in targets_of(node):
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)

    verdicts: dict[str, bool] = {}

    def named(name: str) -> bool:  # each name judged once: a name bound many times is text if every value is
        if name not in verdicts:
            verdicts[name] = True  # a name bound to itself, through others, adds nothing
            verdicts[name] = all(text(value) for value in bound.get(name, ()))
        return verdicts[name]

    def text(node: ast.expr) -> bool:
        if isinstance(node, ast.Tuple):
            return all(text(element) for element in node.elts)
        if isinstance(node, ast.List) and parts:
            return bool(node.elts) and all(text(element) for element in node.elts)
        if isinstance(node, ast.Starred):
            return text(node.value)
        if isinstance(node, ast.IfExp):
            return text(node.body) and text(node.orelse)
        if isinstance(node, ast.BinOp):  # a string on either side makes the other one a string too
            sides = (node.left, node.right)
            return any(map(_is_string, sides)) or all(map(text, sides))
        if isinstance(node, ast.Await):
            return text(node.value)
        if isinstance(node, ast.Name):  # a parameter, a global: what it is comes from elsewhere
            return named(node.id)
        if isinstance(node, ast.Call):  # a helper's text (update_prompt(prompt, context)); not an object made
            callee = last_name(node.func) or ""
            return not (
                callee.lstrip("_")[:1].isupper() or callee in _CONTAINERS or callee.rpartition("_")[2] in _SERIALIZERS
            )
        return isinstance(node, (ast.JoinedStr, ast.Constant))

    return bool(returned) and all(map(text, returned))


#: Generic types that hold text when their parameters do (``Optional[str]``, ``tuple[str, str]``), and those and the
#: ones that hold a prompt's parts (``list[str]``: :func:`returns_text`).
_TEXT_CONTAINERS = frozenset({"Optional", "Union", "tuple", "Tuple"})
_PARTS_CONTAINERS = _TEXT_CONTAINERS | {"list", "List", "Sequence", "Iterable"}


def _is_string(node: ast.expr) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def _text_annotation(annotation: ast.expr, containers: frozenset[str]) -> bool:
    """Whether a return annotation says text: ``str``, ``Optional[str]``, ``str | None``, ``tuple[str, ...]``, and
    whatever else of ``containers`` holds texts (``list[str]``)."""
    if isinstance(annotation, ast.Constant):
        return annotation.value in ("str", None) or annotation.value is Ellipsis
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _text_annotation(annotation.left, containers) and _text_annotation(annotation.right, containers)
    if isinstance(annotation, ast.Subscript) and last_name(annotation.value) in containers:
        parts = annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        return all(_text_annotation(part, containers) for part in parts)
    return last_name(annotation) == "str"


def imports(nodes: list[ast.stmt], package: str = "") -> dict[str, str]:
    """Local name -> imported dotted name, for every import in the module; relative imports are resolved against
    ``package`` (the importing module's package), and left out when it is not known."""
    names: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module or "", node.level, package)
            if base:
                for alias in node.names:
                    names[alias.asname or alias.name] = f"{base}.{alias.name}"
    return names


def definitions(nodes: list[ast.stmt]) -> tuple[dict[str, Function], dict[str, Function]]:
    """Functions and methods defined once in the module, by name (a name defined twice is not followed)."""
    functions: dict[str, list[Function]] = {}
    methods: dict[str, list[Function]] = {}
    in_class = {id(item) for node in nodes if isinstance(node, ast.ClassDef) for item in node.body}
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _property_accessor(node):
            (methods if id(node) in in_class else functions).setdefault(node.name, []).append(node)
    return (
        {name: defs[0] for name, defs in functions.items() if len(defs) == 1},
        {name: defs[0] for name, defs in methods.items() if len(defs) == 1},
    )


def rebuilt_before_read(tree: ast.Module, cls: ast.ClassDef, constructor: Function, attribute: str) -> bool:
    """Whether what ``constructor`` (the ``__init__`` of ``cls``) binds to ``self.attribute`` is a default no code
    of the module reads: every other method of ``cls`` that reads ``.attribute`` binds ``self.attribute`` first, by a
    statement of its own body run on every path before the statement that reads it, one of them does, and nothing
    else in the module reads it: not ``constructor``, not a class derived from ``cls`` or one ``cls`` derives from
    (their ``self`` may be one of its objects), not the module's own statements, nor anything of another object
    (``planner.system_prompt``); another class's own ``self.attribute`` is its own. Webresearcher's planner rebuilds
    its dated system prompt for each question in ``run``, then sends it: the one ``__init__`` binds is never sent."""
    classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    related = (
        {cls.name}
        | bases_of(cls, classes)
        | {name for name, other in classes.items() if cls.name in bases_of(other, classes)}
    )
    methods = {id(item) for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
    rebuilt = False
    pending: list[tuple[ast.AST, bool]] = [(tree, True)]  # (node, whether its self may be an object of cls)
    while pending:
        node, own = pending.pop()
        if id(node) in methods and node is not constructor:
            assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            first = _first_read(node.body, attribute)
            if first is None:
                continue
            if not any(_binds_self(statement, attribute) for statement in node.body[:first]):
                return False
            rebuilt = True
        elif _reads(node, attribute) and (own or not of_self(node)):
            return False
        else:
            if isinstance(node, ast.ClassDef):
                own = node.name in related
            pending.extend((child, own) for child in ast.iter_child_nodes(node))
    return rebuilt


def bases_of(cls: ast.ClassDef, classes: dict[str, ast.ClassDef]) -> set[str]:
    """The names of the module's classes (``classes``, by name) ``cls`` derives from, through them."""
    found: set[str] = set()
    pending = [cls]
    while pending:
        for base in pending.pop().bases:
            if isinstance(base, ast.Name) and base.id in classes and base.id not in found:
                found.add(base.id)
                pending.append(classes[base.id])
    return found


def held_reads(tree: ast.Module) -> frozenset[tuple[int, int]]:
    """Where the module's functions read what outlives their calls: an object's fields (``self.tags``,
    ``self.by_tag[tag]``, ``self.tags.get(t)``, ``self.registry.ids(tag)``) and the names the module binds at its top
    level that a function does not bind itself (``TOOLS``, ``REGISTRY[kind]``), as (line, column): the sites a set
    held there is iterated at. Not a call of the object's own method (``self._canon(names)``): what it holds is
    where that method reads it."""
    shared = {name for name, _ in top_level_bindings(tree)}
    found, calls = set(), set()
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        nodes = list(ast.walk(function))
        own = {node.id for node in nodes if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
        own.update(node.arg for node in nodes if isinstance(node, ast.arg))
        for node in nodes:
            if isinstance(node, ast.Call) and of_self(node.func):
                calls.add((node.lineno, node.col_offset))  # self._canon(names): what the method returns, given
            root = node
            while isinstance(root, (ast.Attribute, ast.Subscript, ast.Call)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and (
                (root.id == "self" and root is not node) or (root.id in shared and root.id not in own)
            ):
                found.add((node.lineno, node.col_offset))  # type: ignore[attr-defined]
    return frozenset(found - calls)


def of_self(node: ast.AST) -> bool:
    """Whether an attribute read or augmented assignment is of ``self``."""
    target = node.target if isinstance(node, ast.AugAssign) else node
    value = target.value if isinstance(target, ast.Attribute) else None
    return isinstance(value, ast.Name) and value.id == "self"


def _first_read(body: list[ast.stmt], attribute: str) -> int | None:
    """The index of the first statement of ``body`` that reads ``.attribute`` (``self.x += ...`` reads it)."""
    return next(
        (index for index, statement in enumerate(body) if any(_reads(node, attribute) for node in ast.walk(statement))),
        None,
    )


def _reads(node: ast.AST, attribute: str) -> bool:
    if isinstance(node, ast.AugAssign):
        return isinstance(node.target, ast.Attribute) and node.target.attr == attribute
    return isinstance(node, ast.Attribute) and node.attr == attribute and isinstance(node.ctx, ast.Load)


def _binds_self(statement: ast.stmt, attribute: str) -> bool:
    """Whether a statement is an assignment to ``self.attribute`` (run whenever the statement is)."""
    targets = statement.targets if isinstance(statement, ast.Assign) else []
    if isinstance(statement, ast.AnnAssign) and statement.value is not None:
        targets = [statement.target]
    return any(self_field(target) == attribute for target in targets)


class SelfUses(NamedTuple):
    """How a method uses ``self`` (:func:`self_uses`)."""

    bound: frozenset[str]
    """The fields it binds, whole or by key (``self.files = ...``, ``self.context[k] = ...``, ``self.a, self.b =
    ...``), as ``self.files``; not those it only adds to (``self.messages.append(message)``, ``+=``)."""
    read: frozenset[str]
    """The fields it reads (``self.files``: ``files``)."""
    called: frozenset[str]
    """The methods it calls on ``self`` (``self._build_prompt()``: ``_build_prompt``)."""


def self_uses(method: Function) -> SelfUses:
    """How ``method`` uses ``self``: the fields of ``self`` a method binds and then calls its own methods with, and
    which of them these read (the interpreter's ``state``)."""
    bound, read, called = set(), set(), set()
    for node in ast.walk(method):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in _bound_places(targets_of(node)):
                name = self_field(target.value if isinstance(target, ast.Subscript) else target)
                if name is not None:
                    bound.add(f"self.{name}")
        elif isinstance(node, ast.Attribute) and of_self(node):
            read.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and of_self(node.func):
            called.add(node.func.attr)
    return SelfUses(frozenset(bound), frozenset(read), frozenset(called))


def _bound_places(targets: Sequence[ast.expr]) -> Iterator[ast.expr]:
    """Each place an assignment's targets bind, those of a tuple or list unpacked one by one (``self.a, *rest``)."""
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            yield from _bound_places(target.elts)
        else:
            yield target.value if isinstance(target, ast.Starred) else target


def self_field(target: ast.expr) -> str | None:
    """The field an expression (an assignment's target) is of ``self`` (``self.tools``: ``tools``), else None."""
    return target.attr if isinstance(target, ast.Attribute) and of_self(target) else None


def calls_super(function: Function, name: str) -> bool:
    """Whether ``function`` calls ``super().name(...)``: an override that adds to what it overrides."""
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == name
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "super"
        for node in ast.walk(function)
    )


def _property_accessor(node: Function) -> bool:
    """Whether a method is a property's setter or deleter (``@name.setter``): the name's getter is its reading."""
    return any(
        isinstance(decorator, ast.Attribute) and decorator.attr in ("setter", "deleter")
        for decorator in node.decorator_list
    )


def _absolute(module: str, level: int, package: str) -> str | None:
    """The absolute name of ``from <level dots><module> import``, seen from ``package``."""
    if not level:
        return module or None
    parts = package.split(".") if package else []
    if not parts or level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    return ".".join([*base, module] if module else base) or None


def role_default(node: ast.ClassDef) -> ast.expr | None:
    """What a class makes its objects' ``role`` when not given one, as written: a class attribute or field default
    (``role: str = "system"``, ``Field(default="system")``), else what its ``__init__`` assigns (``self.role =
    "system"``, ``super().__init__(role="system", ...)``; a parameter's default for ``self.role = role``). None
    when it sets none, or ``__init__`` takes it from a parameter with no default: then it is always given."""
    found: ast.expr | None = None
    for item in node.body:
        if isinstance(item, (ast.Assign, ast.AnnAssign)) and item.value is not None:
            targets = [item.target] if isinstance(item, ast.AnnAssign) else item.targets
            if any(_named(target, "role") for target in targets):
                found = _field_default(item.value)
    init = next((item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"), None)
    assigned = _init_role(init) if init is not None else None
    return found if init is None or assigned is None else _parameter_default(init, assigned)


def _named(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _field_default(value: ast.expr) -> ast.expr:
    """A field's default: ``Field("system")``, ``field(default="system")`` and ``attr.ib(default=...)`` give theirs."""
    if isinstance(value, ast.Call):
        given = next((keyword.value for keyword in value.keywords if keyword.arg == "default"), None)
        return given if given is not None else value.args[0] if value.args else value
    return value


def _init_role(init: ast.FunctionDef) -> ast.expr | None:
    """What ``__init__``'s own statements set ``self.role`` to, or give ``super().__init__`` as ``role=``."""
    found = None
    for statement in init.body:
        if isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Attribute) and target.attr == "role" and _named(target.value, "self")
            for target in statement.targets
        ):
            found = statement.value
        elif (
            isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Attribute)
            and statement.value.func.attr == "__init__"
        ):
            found = next((kw.value for kw in statement.value.keywords if kw.arg == "role"), found)
    return found


def _parameter_default(function: ast.FunctionDef, value: ast.expr) -> ast.expr | None:
    """``value``, or the default of the parameter it names (None: a parameter without one)."""
    if not isinstance(value, ast.Name):
        return value
    spec = function.args
    positional = [*spec.posonlyargs, *spec.args]
    named = [arg.arg for arg in positional[len(positional) - len(spec.defaults) :]]
    defaults = dict(zip(named, spec.defaults, strict=True))
    keywords = zip(spec.kwonlyargs, spec.kw_defaults, strict=True)
    defaults.update((arg.arg, default) for arg, default in keywords if default is not None)
    if value.id in defaults:
        return defaults[value.id]
    return None if any(arg.arg == value.id for arg in (*positional, *spec.kwonlyargs)) else value


def unsent_messages(tree: ast.Module, tables: Callable[[str], bool], measures: Callable[[str], bool]) -> frozenset[int]:
    """The message dicts (by id) that a function writes only to give to a tool it runs or to a call that measures
    them (``measures`` says which by name: ``estimate_tokens([{"role": "system", ...}])``): written in the call, or
    in a list display bound to a name (``search_messages = [{"role": "system", ...}]``) that the function only adds
    to and passes to such a call, never returns, keeps or sends otherwise. A tool runs a callable the function took
    from a table of tools by name (``run = available_functions[name]``, ``tools.get(name)``: ``tables`` says which
    names hold tools). What a tool is given are its arguments (bambooai's search tool keeps only the last, user,
    message of the list it is handed); what is measured is counted, not sent."""
    found: set[int] = set()
    for function in walk_module(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        lists: dict[str, ast.List] = {}
        runners: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name, value = node.targets[0].id, node.value
                if isinstance(value, ast.List) and any(isinstance(item, ast.Dict) for item in value.elts):
                    lists[name] = value
                elif _looked_up(value, tables):
                    runners.add(name)
            elif isinstance(node, ast.Call) and measures(last_name(node.func) or ""):
                for given in (*node.args, *(keyword.value for keyword in node.keywords)):
                    items = given.elts if isinstance(given, (ast.List, ast.Tuple)) else [given]
                    found.update(id(item) for item in items if isinstance(item, ast.Dict))
        if not lists:
            continue
        parents = {id(child): parent for parent in ast.walk(function) for child in ast.iter_child_nodes(parent)}
        for name, made in lists.items():
            uses = [
                node
                for node in ast.walk(function)
                if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
            ]
            if uses and all(_only_run_or_measured(parents, use, runners, measures) for use in uses):
                found.update(id(item) for item in made.elts if isinstance(item, ast.Dict))
    return frozenset(found)


def _looked_up(value: ast.expr, tables: Callable[[str], bool]) -> bool:
    """``table[name]`` or ``table.get(name)`` of a table of tools."""
    if isinstance(value, ast.Subscript):
        table = last_name(value.value)
    elif isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get":
        table = last_name(value.func.value)
    else:
        return False
    return table is not None and tables(table)


def _only_run_or_measured(
    parents: dict[int, ast.AST], use: ast.Name, runners: set[str], measures: Callable[[str], bool]
) -> bool:
    """Whether a list's name is only added to here (``messages.append(...)``), given to a tool run or measured."""
    parent = parents.get(id(use))
    if isinstance(parent, ast.Attribute) and parent.attr in ("append", "extend", "insert"):
        return isinstance(parents.get(id(parent)), ast.Call)
    if isinstance(parent, ast.keyword):
        parent = parents.get(id(parent))
    if not isinstance(parent, ast.Call):
        return False
    return (isinstance(parent.func, ast.Name) and parent.func.id in runners) or measures(last_name(parent.func) or "")


def private_functions(tree: ast.Module) -> dict[str, tuple[Function, bool]]:
    """The private functions of a module that nothing outside it calls, by name, and whether each is a method
    (called on its object): a method of a class with no bases (a framework calls the hooks a subclass of its own
    class defines: LangChain's ``_generate``), or a function nested in another (a module-level one may be imported
    by another module of the package); defined once and undecorated. Found among statements only."""
    candidates: dict[int, bool] = {}
    defined: dict[str, list[Function]] = {}
    for block, owner in blocks(tree):
        for statement in block:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defined.setdefault(statement.name, []).append(statement)
                if isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    candidates[id(statement)] = False
                elif isinstance(owner, ast.ClassDef) and not owner.bases and not owner.keywords:
                    candidates[id(statement)] = True
    return {
        name: (found[0], candidates[id(found[0])])
        for name, found in defined.items()
        if len(found) == 1
        and id(found[0]) in candidates
        and name.startswith("_")
        and not name.endswith("__")
        and not found[0].decorator_list
    }


def agreed_arguments(tree: ast.Module, private: dict[str, tuple[Function, bool]]) -> dict[int, dict[str, object]]:
    """Function (by id) -> the parameters every call of it in the module gives the same literal, by position, by
    keyword or by a literal default (``use_compiled=True`` at the only call of ``_build_system_prompt``), for the
    ``private`` functions (:func:`private_functions`) whose name the module only calls, with no ``*args`` or
    ``**kwargs``: a branch on such a parameter is decided."""
    calls: dict[str, list[ast.Call]] = {}
    named: dict[str, int] = {}
    for node in walk_module(tree):
        if isinstance(node, ast.Call) and (name := last_name(node.func)) in private:
            calls.setdefault(name, []).append(node)
        elif isinstance(node, ast.Name) and node.id in private:
            named[node.id] = named.get(node.id, 0) + 1
        elif isinstance(node, ast.Attribute) and node.attr in private:
            named[node.attr] = named.get(node.attr, 0) + 1
    agreed: dict[int, dict[str, object]] = {}
    for name, found in calls.items():
        if named.get(name, 0) != len(found):  # its name read otherwise too: handed on, called with anything
            continue
        function, method = private[name]
        common = _literal_arguments(function, found[0], method)
        for call in found[1:]:
            arguments = _literal_arguments(function, call, method)
            if common is None or arguments is None:
                common = None
                break
            common = {key: value for key, value in common.items() if arguments.get(key) == value}
        if common:
            agreed[id(function)] = {key: value[1] for key, value in common.items()}
    return agreed


def _literal_arguments(function: Function, call: ast.Call, method: bool) -> dict[str, tuple[type, object]] | None:
    """The parameters ``call`` gives ``function`` a literal for (by type and value: ``True`` is not ``1``), given or
    by default; None when it unpacks arguments, which may give any, or calls a method otherwise than on an object
    (``Base._build(self, ...)``, the object given first)."""
    if unpacks(call):
        return None
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    if method != (receiver is not None) or (isinstance(receiver, ast.Name) and receiver.id[:1].isupper()):
        return None
    spec = function.args
    positional = [*spec.posonlyargs, *spec.args][1 if method else 0 :]  # a method's object, whatever it is named
    values: dict[str, ast.expr] = {}
    defaults = spec.defaults
    for arg, default in zip(positional[len(positional) - len(defaults) :], defaults, strict=True):
        values[arg.arg] = default
    for arg, keyword_default in zip(spec.kwonlyargs, spec.kw_defaults, strict=True):
        if keyword_default is not None:
            values[arg.arg] = keyword_default
    values.update((arg.arg, given) for arg, given in zip(positional, call.args, strict=False))
    values.update((kw.arg, kw.value) for kw in call.keywords if kw.arg is not None)
    return {
        key: (type(value.value), value.value)
        for key, value in values.items()
        if isinstance(value, ast.Constant) and not isinstance(value.value, bytes)
    }
