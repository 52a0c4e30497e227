"""What one module learns from the others it is linted with: helpers in other modules that return the time, a
random value, a fresh id or what was built in a set's order (``get_today_str()``), module constants and class
fields that hold one, and those that are sets (``ALL_TOOLS = frozenset({...})``), an order where they are iterated.

A function or method of a module that makes or renders a template is also summed up for the others
(:class:`Summary`): of the arguments it is given, which ones reach what it returns (a template's variables it does
not print do not).

Modules are checked one by one; each one's findings use what the modules checked before it exported. A module that
read a name before what it exports was learned (a helper, a class's field) is checked again at the end
(:meth:`Project.revisit`), so the order of the walk changes no finding. A name a package re-exports from its
``__init__`` is known under the package too (``from pkg.agents import Agent``).

A worker process of a parallel run checks its share of the modules with a project of its own; each module's
:class:`Lesson` records what it read there, and the parent keeps the worker's verdict only when the parent's project
gives the same reads (:meth:`Project.holds`), so a parallel run finds exactly what one process finds.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agentcache.lint.python.syntax import imports, unpacks
from agentcache.lint.python.templates import TemplateFiles
from agentcache.lint.python.values import Value, combine, export_kind, join, kind_rank, read_export, under
from agentcache.lint.python.vocabulary import VOCABULARY, Vocabulary

#: What a module exports under ``Class(.)`` when it sums up the class's methods (:class:`Summary`), a method sends
#: a parameter as the system prompt (:class:`Sent`), returns a clock on its own (``Class().build(~)``, rare), or
#: it declares fields that hold the sets its constructor is given (``Class(sets)``): an
#: object made of it elsewhere is then known as one of it
#: (:attr:`Value.cls`), whose methods are followed by their summaries, and whose fields and methods that take no
#: arguments are read. Not for a class whose fields or methods' results only are exported: following every object
#: made of one costs an eighth of the analysis, as a volatile field reaches all that is done with the object.
OBJECT = "object"


@dataclass(frozen=True)
class Summary:
    """What a function (or a method, without ``self``) returns of its arguments, exported as text under
    ``name(*)`` (``pkg.mod.Budget().render(*)``): its positional parameters in order, its ``*args`` and
    ``**kwargs``, the parameters that reach what it returns (``variables[diff]``: only the item of a dict a
    template prints), the kind of what it returns on its own, and, when that is all it returns on its own, the
    variables it adds to a template whose text its caller gives whole (``offers``, the text given ``templated``:
    holmesgpt's ``load_and_render_prompt(prompt, context)`` adds ``now`` to every template it renders)."""

    positional: tuple[str, ...]
    varargs: str
    varkeywords: str
    passing: frozenset[str]
    own: str
    templated: str = ""
    offers: frozenset[str] = frozenset()

    def encode(self) -> str:
        offered = f"{self.templated}:{','.join(sorted(self.offers))}" if self.offers else ""
        passing = ",".join(sorted(self.passing))
        return ";".join((",".join(self.positional), self.varargs, self.varkeywords, passing, self.own, offered))

    @classmethod
    def decode(cls, text: str) -> Summary:
        positional, varargs, varkeywords, passing, own, offered = text.split(";")
        names = frozenset(filter(None, passing.split(",")))
        templated, _, offers = offered.partition(":")
        return cls(
            tuple(filter(None, positional.split(","))),
            varargs,
            varkeywords,
            names,
            own,
            templated,
            frozenset(filter(None, offers.split(","))),
        )

    def argument(self, node: ast.Call) -> ast.expr | None:
        """The argument the call gives the parameter whose text the function renders (:attr:`templated`)."""
        for index, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                return None
            if _parameter(self.positional, self.varargs, index) == self.templated:
                return arg
        return next((keyword.value for keyword in node.keywords if keyword.arg == self.templated), None)

    def returned(self, node: ast.Call, args: list[Value], kwargs: dict[str, Value], own: bool = True) -> Value | None:
        """What the call returns: the arguments of the parameters that reach the result, and what it returns on
        its own (unless ``own`` is False: the template the call names prints none of :attr:`offers`). None for a
        call that unpacks its arguments (``*args``, ``**kwargs``): which parameter each fills is not known."""
        if unpacks(node):
            return None
        given = dict(kwargs)
        for index, value in enumerate(args):
            name = _parameter(self.positional, self.varargs, index)
            given[name] = join(given[name], value) if name in given else value
        passed = [read_export(self.own, node)] if self.own and own else []
        for name in self.passing:
            parameter, _, key = name.partition("[")
            if parameter == self.varkeywords:  # **kwargs: the keywords no parameter is named by
                passed += [value for keyword, value in kwargs.items() if keyword not in self.positional]
            elif parameter in given:
                passed.append(under(given[parameter], key[:-1]) if key else given[parameter])
        return combine(*passed)


@dataclass(frozen=True)
class Sent:
    """Which parameters of a function reach a system prompt it sends, exported as text under ``name(sent)``
    (``pkg.llm.chat(sent)`` of ``def chat(system, user)``): a call from another module is the sink of what it gives
    them, reported at the argument."""

    positional: tuple[str, ...]
    varargs: str
    names: frozenset[str]

    def encode(self) -> str:
        return ";".join((",".join(self.positional), self.varargs, ",".join(sorted(self.names))))

    @classmethod
    def decode(cls, text: str) -> Sent:
        positional, varargs, names = text.split(";")
        return cls(tuple(filter(None, positional.split(","))), varargs, frozenset(filter(None, names.split(","))))

    def arguments(self, node: ast.Call, args: list[Value], kwargs: dict[str, Value]) -> list[tuple[ast.expr, Value]]:
        """(argument, its value) of each argument the call gives a parameter that is sent; none when it unpacks its
        arguments (which parameter each fills is not known)."""
        if unpacks(node):
            return []
        found = [
            (arg, value)
            for index, (arg, value) in enumerate(zip(node.args, args, strict=True))
            if _parameter(self.positional, self.varargs, index) in self.names
        ]
        return found + [(kw.value, kwargs[kw.arg]) for kw in node.keywords if kw.arg in self.names]


def _parameter(positional: tuple[str, ...], varargs: str, index: int) -> str:
    """The parameter the positional argument at ``index`` fills (``varargs`` past the named ones)."""
    return positional[index] if index < len(positional) else varargs


@dataclass(frozen=True)
class Lesson:
    """What checking one module read from the project and taught it."""

    path: Path
    module: str
    exports: dict[str, str]
    """Its volatile, set-ordered or set names (``name``, ``name()`` for a helper, ``Class().field`` for a class's
    field) -> the origin kind they give, or :data:`~agentcache.lint.python.values.SET`."""
    reads: dict[str, str | None] = field(default_factory=dict)
    """Each name it looked up among the project's exports -> what it found (None: nothing)."""
    gives: dict[str, str] = field(default_factory=dict)
    """What it gives the constructors of the project's classes (``pkg.mod.Config(schema=)``, by the dotted name
    it imports the class by) -> the kind it gives, as :attr:`exports`."""


class Reading:
    """The project's exports as one module's analysis sees them: each lookup is recorded into a lesson's reads."""

    def __init__(self, exports: dict[str, str]) -> None:
        self.exports = exports
        self.reads: dict[str, str | None] = {}

    def get(self, name: str) -> str | None:
        found = self.exports.get(name)
        self.reads[name] = found
        return found


class Project:
    """The volatile names every checked module exports, by dotted name (``pkg.dates.get_today_str``)."""

    def __init__(self, words: Vocabulary = VOCABULARY) -> None:
        self.words = words
        self.exports: dict[str, str] = {}
        """Dotted name -> origin kind of what calling (a function) or reading (a constant) it gives."""
        self.reads: dict[Path, dict[str, str | None]] = {}
        """What each checked module read of :attr:`exports` (its lesson's reads)."""
        self.readers: dict[str, set[Path]] = {}
        """Export name -> the checked modules that read it."""
        self.stale: set[Path] = set()
        """Checked modules that read a name as something it no longer gives."""
        self._packages: dict[Path, str] = {}
        self._reexports: dict[Path, dict[str, str]] = {}
        self._located: dict[tuple[Path, str], str | None] = {}
        self._holders: dict[tuple[Path, str], Path | None] = {}

    def module(self, path: Path) -> str:
        """The dotted module name of ``path``: its name under the folders that hold an ``__init__.py`` (and the
        folders without one below them: namespace packages inside a package), whatever folder lint runs in."""
        folder = path.absolute().parent
        package = self._package(folder)
        name = path.stem
        if name == "__init__":
            return package
        return f"{package}.{name}" if package else name

    def package(self, path: Path) -> str:
        """The package a module's relative imports start from."""
        return self.module(path) if path.stem == "__init__" else self._package(path.absolute().parent)

    def _package(self, folder: Path) -> str:
        known = self._packages.get(folder)
        if known is None:
            parent = folder.parent
            if parent == folder:
                known = ""
            elif (folder / "__init__.py").is_file():
                above = self._package(parent)
                known = f"{above}.{folder.name}" if above else folder.name
            else:  # a folder without one inside a package is a namespace package of it (``pkg/utils/``)
                above = self._package(parent)
                known = f"{above}.{folder.name}" if above and folder.name.isidentifier() else ""
            self._packages[folder] = known
        return known

    def located(self, path: Path, names: dict[str, str]) -> dict[str, str]:
        """``names`` (local name -> imported dotted name) with each import of a module found by folders rather
        than by ``__init__.py`` files renamed to what that module is known by here: ``from pkg.utils import today``
        in ``src/pkg/graph.py``, where ``src/pkg/`` has no ``__init__.py`` (a namespace package, PEP 420: a src
        layout), is ``utils.today`` of ``src/pkg/utils.py``. The module is looked for under the importer's nearest
        ancestor folder that holds the import's first folder, so a module of the same name elsewhere is not it; an
        import whose first name no folder holds names a module beside the importer when there is one
        (``from helpers import stamp`` in a script of ``pkg/examples/``)."""
        folder = path.absolute().parent
        return {local: self._locate(folder, target) for local, target in names.items()}

    def _locate(self, folder: Path, target: str) -> str:
        first, _, rest = target.partition(".")
        key = (folder, target)
        if key not in self._located:
            root = self._holder(folder, first) if rest else None
            if root is None:  # a module beside the importer: a script's folder is where its imports start
                beside = folder / f"{first}.py"
                module = self.module(beside) if beside.is_file() else first
                self._located[key] = None if module == first else ".".join(filter(None, (module, rest)))
            elif self._package(root / first) == first:  # a package its imports already name
                self._located[key] = None
            else:
                self._located[key] = self._module_file(root, target)
        return self._located[key] or target

    def _holder(self, folder: Path, name: str) -> Path | None:
        """The nearest of ``folder`` and its ancestors that holds a folder ``name``, asked once per folder and
        name: every module imports the standard library's and other packages' names, which none holds."""
        key = (folder, name)
        if key not in self._holders:
            parent = folder.parent
            if (folder / name).is_dir():
                self._holders[key] = folder
            else:
                self._holders[key] = self._holder(parent, name) if parent != folder else None
        return self._holders[key]

    def _module_file(self, root: Path, target: str) -> str | None:
        """``target`` with its longest prefix that names a module file under ``root`` renamed to that module's
        name here (None: no such file, or it is known by that name already)."""
        parts = target.split(".")
        for end in range(len(parts), 1, -1):
            base = root.joinpath(*parts[:end])
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file():
                    module = self.module(candidate) if self.package(candidate) else _by_path(candidate)
                    prefix = ".".join(parts[:end])
                    return None if module == prefix else ".".join((module, *parts[end:])).lstrip(".")
        return None

    def templates(self, path: Path) -> TemplateFiles:
        """The template files and modules of the package ``path`` is in, found from its import root."""
        module = self.module(path)
        root = path.absolute().parent
        while self._package(root):  # above its packages' folders (a folder's name may hold dots: klauso-0.1.1/)
            root = root.parent
        return TemplateFiles(root if module else None, module)

    def reading(self) -> Reading:
        """A view of :attr:`exports` for one module's analysis, that records what it reads."""
        return Reading(self.exports)

    def lesson(
        self, path: Path, module: str, exported: dict[str, Value | str], given: dict[str, Value], reading: Reading
    ) -> Lesson:
        """What a checked module teaches: its exports that are volatile, set-ordered or sets
        (:func:`~agentcache.lint.python.values.export_kind`), its summaries (text already), and what it gives the
        project's constructors."""
        exports, gives = {}, {}
        for name, value in exported.items():
            kind = export_kind(value) if isinstance(value, Value) else value
            if kind is not None:
                exports[name] = kind
                if "()." in name:  # Budget().render(*), Registry().names: of an object made elsewhere
                    exports[name.partition("()")[0] + "(.)"] = OBJECT
                elif name.endswith("(sets)"):  # ToolsConfig(sets): its set fields are read through its objects
                    exports[name.removesuffix("(sets)") + "(.)"] = OBJECT
        for name, value in given.items():
            kind = export_kind(value)
            if kind is not None:
                gives[name] = kind
        return Lesson(path, module, exports, dict(reading.reads), gives)

    def holds(self, lesson: Lesson) -> bool:
        """Whether the module, checked here, would read what it read where it was checked: then its verdict and
        its lesson are the same here."""
        return all(self.exports.get(name) == found for name, found in lesson.reads.items())

    def learn(self, lesson: Lesson) -> None:
        """Record what a checked module exports, also under each package that re-exports it, and which modules
        checked before read those names as something else (they are stale: :meth:`revisit`)."""
        self.reads[lesson.path] = lesson.reads
        self.stale.discard(lesson.path)
        for name in lesson.reads:
            self.readers.setdefault(name, set()).add(lesson.path)
        for name, kind in lesson.exports.items():
            for module in self._exporters(lesson.path, lesson.module, _EXPORTED.split(name, maxsplit=1)[0]):
                self._export(f"{module}.{name}", kind)
        for name, kind in lesson.gives.items():  # several modules may give one: the strongest kind, in any order
            known = self.exports.get(name)
            self._export(name, kind if known is None else min(known, kind, key=kind_rank))

    def _export(self, export: str, kind: str) -> None:
        """Know ``export`` as ``kind``; the modules that read it as something else are stale."""
        if self.exports.get(export) != kind:
            self.exports[export] = kind
            self.stale.update(path for path in self.readers.get(export, ()) if self.reads[path].get(export) != kind)

    def _exporters(self, path: Path, module: str, name: str) -> Iterable[str]:
        """``module``, then each enclosing package whose ``__init__`` re-exports its ``name`` (``from .agent import
        Agent``, or a lazy import's ``{"Agent": ".agent"}``): ``from pkg.agents import Agent`` is that object."""
        yield module
        path = path.absolute()
        if not self.package(path):  # a module of a namespace package, as its importers find it (:meth:`located`)
            yield _by_path(path)
        folder = path.parent.parent if path.stem == "__init__" else path.parent
        while (package := self._package(folder)) and self._reexported(folder, package).get(name) == module:
            yield package
            module, folder = package, folder.parent

    def _reexported(self, folder: Path, package: str) -> dict[str, str]:
        """Name -> the module it comes from, for the names the package's ``__init__.py`` (or its stub,
        ``__init__.pyi``, which a lazily importing package keeps for type checkers) imports from its modules."""
        known = self._reexports.get(folder)
        if known is None:
            known = self._reexports[folder] = {}
            for stub in (folder / "__init__.pyi", folder / "__init__.py"):
                try:
                    tree = ast.parse(stub.read_bytes())
                except (OSError, SyntaxError, ValueError):
                    continue
                nodes = list(ast.walk(tree))
                found = imports([node for node in nodes if isinstance(node, ast.ImportFrom)], package)
                known.update((local, target.rpartition(".")[0]) for local, target in found.items())
                known.update(_lazy(nodes, package))
        return known

    def know(self, exports: dict[str, str]) -> None:
        """Know these exports (another project's :attr:`exports`), as if their modules had been checked here."""
        self.exports.update(exports)

    def revisit(self) -> dict[Path, frozenset[tuple[str, str | None]]]:
        """Modules that read a name before what it exports was learned (their findings may change), sorted, each
        with those names and what they now give: a helper learned later, or another field of a class it had
        already read one of."""
        found = {}
        for path in sorted(self.stale):
            changed = frozenset(
                (name, self.exports.get(name))
                for name, read in self.reads[path].items()
                if self.exports.get(name) != read
            )
            if changed:
                found[path] = changed
        return found


def _by_path(path: Path) -> str:
    """The name a module outside any package (no ``__init__.py`` beside it) is known by to the modules that import
    it by folder (:meth:`Project.located`): its path as a dotted name, which no module of the same name elsewhere
    shares."""
    return ".".join(part.replace(".", "_") for part in path.with_suffix("").parts if part != path.anchor)


#: Where an export's name ends: ``Agent`` of ``Agent().name``, ``today`` of ``today()``.
_EXPORTED = re.compile(r"[(.\[]")


def _lazy(nodes: list[ast.AST], package: str) -> Iterable[tuple[str, str]]:
    """(name, module) of a lazy import's table (``_AGENTS = {"Agent": ".agent"}``, that ``__getattr__`` imports
    from): a dict literal of names to the modules of the package (``.agent``, ``pkg.agents.agent``)."""
    for node in nodes:
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if (
                    isinstance(key, ast.Constant)
                    and isinstance(key.value, str)
                    and key.value.isidentifier()
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                ):
                    module = f"{package}{value.value}" if value.value.startswith(".") else value.value
                    if module.startswith(f"{package}."):
                        yield key.value, module
