"""Private functions and methods nothing in their project calls, and constants nothing in it reads: what they
build is never sent, so a sink inside one is not reported (aacode's ``_compact_context``, left behind when its
caller was rewritten; computer-use-ootb's dated ``SYSTEM_PROMPT`` of a planner that builds its own).

Only private names qualify (``_name``; not a dunder, nor a sunder such as Enum's ``_missing_``, which libraries
call): a public one may be the package's API, called by its users. Constants are the exception, read by the
project's code or named in ``__all__`` when they are its API. The project is the nearest folder above the module
(from its absolute path) that holds ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or ``.git``; its test code is
left out, as a walk leaves it out (a module that is itself test code is not judged). A private name is called when:

- a module of the project mentions it in code: a call, a reference, an import, a string that is the name or ends
  in ``.name`` or ``:name`` (``getattr``, an entry point, a dotted path given to ``import_module``); not a
  comment or a docstring's prose. ``self._name`` in another class that defines its own ``_name`` reaches that
  class's method, not this one, unless the method's class derives from it or a class derives from both (a mixin's
  method overrides a base's), by the class statements' base names and the names bound to a class
  (``BaseRunner = runner.Runner``): omagent's LLM classes each define and call their own
  ``_generate_default_sys_prompt``;
- a name is built from a literal prefix of it anywhere in the project (:data:`_PREFIX`: ``f"_on_{kind}"``,
  ``"_on_%s" % kind``, ``PREFIX = "_on_"``, ``.startswith("_handle_")``, ``getattr(self, "_" + name)``):
  dispatch by name;
- the project's ``pyproject.toml`` or ``setup.cfg`` names it (a script's entry point).

A constant (a name in capitals bound at a module's top level) is read the same ways, but for a bare name in a
module that binds a constant of that name itself and imports none with ``*`` (its own), and also when a name is
built from a literal suffix of it (:data:`_SUFFIX`: ``f"{role}_SYSTEM_PROMPT"``), or its module is scanned by
name (``getattr(prompts, name)``, ``vars(prompts)``, ``prompts.__dict__``; ``globals()`` in its own module), or a
notebook of the project (``.ipynb``, unparsed) names it. Only
the value it is bound to is dropped: a request made while it is computed is sent all the same.

A method counts as unreached only when every class its class derives from, resolved through its module's imports,
is one of the project's own (derived the same way) or calls no private hook of its subclasses
(:data:`INERT_BASES`): a library's base class calls ``_run`` or ``_generate`` without the project naming them. A
base made by a call, a metaclass, or a module whose name two files share leaves the method reached.

The project's files are read when a module has a finding inside a private function or at a constant its own module
never mentions, once per lint process: the private and capitalized names each file holds and its class statements'
bases, by regular expressions; a file is parsed only when it holds the name (or has a class statement they do not
read), and a module larger than the checker's part size that holds it counts as a caller.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentcache.lint.core import SKIP_DIRS, is_test_code
from agentcache.lint.python.syntax import imports, last_name, statements

#: Base classes that call no private method of their subclasses (sunder hooks aside).
INERT_BASES = frozenset(
    {
        "builtins.object",
        "builtins.Exception",
        "abc.ABC",
        "typing.Generic",
        "typing.Protocol",
        "enum.Enum",
        "enum.StrEnum",
        "enum.IntEnum",
        "pydantic.BaseModel",
        "pydantic.main.BaseModel",
        "pydantic_settings.BaseSettings",
    }
)
#: Stands for a class that may derive from another, in a file that cannot be read as code.
UNKNOWN = "?"
#: Names a module uses without importing them.
_BUILTINS = frozenset({"object", "Exception"})
#: Files whose presence makes a folder a project's root.
_ROOT_MARKS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
#: Project files that may name a function as an entry point.
_CONFIGS = ("pyproject.toml", "setup.cfg")
_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*[A-Z][A-Z0-9_]*")
#: A literal suffix a constant's name is built with: ``f"{role}_SYSTEM_PROMPT"``, ``role + "_SYSTEM_PROMPT"``,
#: ``"%s_SYSTEM_PROMPT" % role``.
_SUFFIX = re.compile(r"""(?:\}|%s|\+\s*["'])(_[A-Z][A-Z0-9_]*)["']""")
#: A module whose names are looked up by a name built at run time: ``getattr(prompts, name)``, ``vars(prompts)``,
#: ``prompts.__dict__``.
_SCANNED = re.compile(
    r"""getattr\(\s*(\w+)\s*,\s*(?!(?:"[^"\n]*"|'[^'\n]*')\s*[,)])|vars\(\s*(\w+)\s*\)|(?<!\w)(\w+)\.__dict__"""
)
#: Every match of :data:`_SCANNED` holds one of these: a file without them is not searched (:func:`_searched`).
_SCANNED_NEEDS = ("getattr(", "vars(", ".__dict__")
#: The words the project index keeps: private names, and constants' (``SYSTEM_PROMPT``).
_INDEXED_WORD = re.compile(r"(?<!\w)(?:_\w*|[A-Z][A-Z0-9_]*(?!\w))")
#: A literal prefix a name is built from: ``getattr(self, f"_on_{kind}")``, ``name = "_on_" + kind``,
#: ``"_on_%s" % kind``, ``"_on_{}".format(kind)``, ``.startswith("_handle_")``, ``PREFIX = "_on_"``; and a bare
#: ``"_"`` only given to ``getattr`` (``setattr(self, f"_{key}", value)`` stores fields, and ``startswith("_")``
#: leaves private names out).
_PREFIX = re.compile(
    r"""[(,=]\s*(?:f["'](_\w+)\{|["'](_\w+)["']\s*\+)"""
    r"""|["'](_\w+)(?:%s|\{\}["']\s*\.format)"""
    r"""|startswith\(\s*["'](_\w+)["']"""
    r"""|^[ \t]*\w+[ \t]*=[ \t]*["'](_\w*_)["'][ \t]*$"""
    r"""|getattr\([^,()]+,\s*(?:f["']_\{|["']_["']\s*\+)""",
    re.MULTILINE,
)
#: Every match of :data:`_PREFIX` holds one of these, a quote before the name's underscore (:func:`_searched`).
_PREFIX_NEEDS = ('"_', "'_")
#: A class statement and its bases' text (one level of parentheses inside: ``with_metaclass(Meta, Base)``), and
#: any class statement with bases: a file with more of the second than of the first is parsed for its classes.
_HEADER = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(((?:[^()]|\([^()]*\))*)\)[ \t]*(?:->[^:]*)?:", re.MULTILINE)
_OPEN_HEADER = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\(", re.MULTILINE)
#: A name bound to a class of another name (``BaseRunner = runner.Runner``): what derives from it derives from that.
_ALIAS = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*(?:[A-Za-z_]\w*\.)*([A-Z]\w*)[ \t]*$", re.MULTILINE)
_BASE_NAME = re.compile(r"(?<![\w.=])\w+(?:\.\w+)*(?![\w.]*[ \t]*=)")


def private(name: str) -> bool:
    """``_name``, not ``__name__`` nor a sunder ``_name_`` (Enum's ``_missing_``, which its library calls)."""
    return name.startswith("_") and not name.startswith("__") and not (len(name) > 2 and name.endswith("_"))


@dataclass
class _Module:
    """What one file of the project says about the names it mentions and the classes it defines."""

    module: str
    mentions: set[str] = field(default_factory=set)
    #: the mentions but bare names (an import, an attribute, a string): what may be another module's constant
    qualified: set[str] = field(default_factory=set)
    #: the constants it binds at the top level: its bare names of them read its own
    constants: set[str] = field(default_factory=set)
    #: whether it imports names with ``*``: a bare name may be another module's, though it binds its own after
    star: bool = False
    #: class name -> (the names its methods define, the names read as ``self.x`` / ``cls.x`` in its body)
    classes: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)
    #: class name -> its bases' dotted names (None: a base the module cannot name, or a metaclass)
    bases: dict[str, list[str | None]] = field(default_factory=dict)


class _Project:
    """The non-test Python files under one project root, read once: the private names each holds."""

    def __init__(self, root: Path, names: Callable[[Path], tuple[str, str]], largest: int) -> None:
        self.root, self.names, self.largest = root, names, largest
        self.words: dict[str, list[Path]] = {}
        self.prefixes: set[str] = set()
        self.suffixes: set[str] = set()
        self.scanned: set[str] = set()
        """The names of the modules some file looks names up in by a name built at run time (:data:`_SCANNED`)."""
        self.sizes: dict[Path, int] = {}
        self.modules: dict[str, Path | None] = {}
        """Dotted module name -> its file (None: two files share the name, scripts in two folders)."""
        self.subclasses: dict[str, set[str]] = {}
        """A name a class statement gives as a base (its last part) -> the classes that give it, and the names
        bound to it (:data:`_ALIAS`)."""
        self.unclear: list[Path] = []
        """Files with a class statement :data:`_HEADER` does not read: parsed when subclasses are asked for."""
        self.parsed: dict[Path, _Module | None] = {}
        self.below: dict[str, set[str]] = {}
        self.keys: dict[str, bool] = {}
        for path in _python_files(root):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            text = data.decode("utf-8", "replace")
            self.sizes[path] = len(data)  # in bytes, as the checker cuts its parts
            for word in set(_INDEXED_WORD.findall(text)):
                self.words.setdefault(word, []).append(path)
            if path.suffix == ".ipynb":  # a notebook's code in JSON strings: a mention there is a call, unparsed
                continue
            module = names(path)[0]
            self.modules[module] = None if module in self.modules else path
            for match in _searched(_PREFIX, _PREFIX_NEEDS, text):
                self.prefixes.add(next((part for part in match.groups() if part is not None), "_"))
            for match in _SUFFIX.finditer(text):
                self.suffixes.add(match.group(1))
            for match in _searched(_SCANNED, _SCANNED_NEEDS, text):
                self.scanned.add(next(part for part in match.groups() if part is not None))
            headers = _HEADER.findall(text)
            for name, bases in headers:
                for base in _BASE_NAME.findall(bases):
                    self.subclasses.setdefault(base.rpartition(".")[2], set()).add(name)
            for alias, name in _ALIAS.findall(text):
                self.subclasses.setdefault(name, set()).add(alias)
            if len(_OPEN_HEADER.findall(text)) > len(headers):
                self.unclear.append(path)
        self.configured = " ".join(
            (root / name).read_text(errors="replace") for name in _CONFIGS if (root / name).is_file()
        )

    def reads_key(self, key: str) -> bool:
        """Whether a file of the project reads ``key`` of a dict or an object (``cfg.get("key")``, ``cfg["key"]``
        not assigned, ``"key" in cfg``, ``getattr(cfg, "key")``), found once per key: not to hand it on under its
        own name (``add_datetime_to_context=opts.get("add_datetime_to_context")``, the framework reads it)."""
        if key not in self.keys:
            name = re.escape(key)
            reads = re.compile(
                rf"""\.(?:get|pop)\(\s*["']{name}["']|(?<=[\w)\]])\s*\[\s*["']{name}["']\s*\](?!\s*=[^=])"""
                rf"""|["']{name}["']\s+(?:not\s+)?in\b|getattr\([^,()]+,\s*["']{name}["']"""
            )
            handed = re.compile(rf"""\b{name}\s*=\s*[\w.]*$""")  # add_datetime_to_context=opts.get(...): passed on
            self.keys[key] = any(
                not handed.search(text, max(0, match.start() - 200), match.start())
                for text in self._texts(key)
                for match in reads.finditer(text)
            )
        return self.keys[key]

    def _texts(self, word: str) -> Iterator[str]:
        """The text of each file of the project that holds ``word``."""
        needle = word.encode()
        for path in self.sizes:
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if needle in data:
                yield data.decode("utf-8", "replace")

    def summary(self, path: Path) -> _Module | None:
        """The file's :class:`_Module`, made once (None: it does not parse, or is a notebook)."""
        if path.suffix == ".ipynb":
            return None
        if path not in self.parsed:
            try:
                tree = ast.parse(path.read_bytes())
            except (SyntaxError, ValueError, RecursionError, OSError):
                self.parsed[path] = None
            else:
                self.parsed[path] = _summarize(tree, *self.names(path))
        return self.parsed[path]

    def called(self, name: str, path: Path, owner: str | None) -> bool:
        """Whether anything in the project but the module at ``path`` may call ``name`` (a method of ``owner``), or
        read it (a constant)."""
        if any(name.startswith(prefix) for prefix in self.prefixes) or re.search(
            rf"\b{re.escape(name)}\b", self.configured
        ):
            return True
        if _CONSTANT.fullmatch(name) and (
            any(name.endswith(suffix) for suffix in self.suffixes)
            or self.names(path)[0].rpartition(".")[2] in self.scanned
        ):
            return True
        for other in self.words.get(name, ()):
            if other == path:
                continue
            if self.sizes[other] > self.largest:
                return True
            summary = self.summary(other)
            if summary is None or (
                name in summary.mentions
                and (name not in summary.constants or name in summary.qualified or summary.star)
            ):
                return True
            if any(
                name in used and not (name in defined and self._private_to(cls, owner))
                for cls, (defined, used) in summary.classes.items()
            ):
                return True
        return False

    def _private_to(self, cls: str, owner: str | None) -> bool:
        """Whether ``self.name`` in class ``cls`` reaches only that class's own method, not the one judged (of
        ``owner``): the owner does not derive from ``cls``, and no class derives from both (a mixin's method
        overrides a base's). Classes are matched by name, so a namesake only keeps more findings."""
        if owner is None:
            return True
        below = self.descendants(cls)
        return UNKNOWN not in below and owner not in below and below.isdisjoint(self.descendants(owner))

    def descendants(self, name: str) -> set[str]:
        """The names of the project's classes that derive from a class of this name, all the way down
        (:data:`UNKNOWN` among them when a file that names it cannot be read as code); made once per name."""
        if name not in self.below:
            found: set[str] = set()
            pending = [name]
            while pending:
                for sub in self._subclasses(pending.pop()) - found:
                    found.add(sub)
                    if sub != UNKNOWN:
                        pending.append(sub)
            self.below[name] = found
        return self.below[name]

    def _subclasses(self, name: str) -> set[str]:
        """The classes whose class statement names a class of this name among its bases (:data:`UNKNOWN` too when a
        file whose class statements the index could not read, or that does not parse, holds the name)."""
        found = set(self.subclasses.get(name, ()))
        word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
        for path in self.unclear:
            try:
                if word.search(path.read_bytes().decode("utf-8", "replace")) is None:
                    continue
            except OSError:
                continue
            summary = self.summary(path) if self.sizes[path] <= self.largest else None
            if summary is None:
                found.add(UNKNOWN)
            else:
                found.update(cls for cls, bases in summary.bases.items() if name in map(last_name_of, bases))
        return found

    def inert(self, qualified: str, bases: list[str | None]) -> bool:
        """Whether every class a class (of these ``bases``) derives from, all the way up, is the project's own or
        inert; a class that derives from itself is not (a chain that comes back to it)."""
        seen = {qualified}
        pending = [bases]
        while pending:
            for base in pending.pop():
                if base is None:
                    return False
                if base in seen:  # a base met twice (ABC of a class and of its base), or the class itself
                    if base == qualified:
                        return False
                    continue
                seen.add(base)
                if base not in INERT_BASES:
                    above = self._bases(base)
                    if above is None:
                        return False
                    pending.append(above)
        return True

    def _bases(self, qualified: str) -> list[str | None] | None:
        """A project class's bases' dotted names (None: not a class the project defines)."""
        module, _, name = qualified.rpartition(".")
        path = self.modules.get(module)  # None too for a module name two files share: not known
        summary = self.summary(path) if path is not None else None
        return summary.bases.get(name) if summary is not None else None


def last_name_of(dotted: str | None) -> str | None:
    return dotted.rpartition(".")[2] if dotted else None


class Callers:
    """The private functions nothing in their project calls, for one lint process (:meth:`unreached`)."""

    def __init__(self, names: Callable[[Path], tuple[str, str]], largest: int) -> None:
        """``names``: a file's dotted module name and the package its relative imports start from; ``largest``:
        the size of a module beyond which one that holds the name counts as a caller unparsed (the checker's part
        size)."""
        self.names, self.largest = names, largest
        self.projects: dict[Path, _Project] = {}

    def unreached(
        self, tree: ast.Module, path: Path, positions: set[tuple[int, int]]
    ) -> tuple[list[tuple[int, int]], set[tuple[int, int]]]:
        """Of the module at ``path``, given the ``positions`` (line, column) of its findings: the lines (first,
        last) of each private top-level function and private method of a top-level class that holds one and that
        nothing in its project calls; and the position of each value bound to a constant at the top level that is
        one of them and that nothing in the project reads."""
        spans: list[tuple[int, int]] = []
        values: set[tuple[int, int]] = set()
        lines = {line for line, _ in positions}
        mentioned: _Module | None = None
        project: _Project | None = None
        path = path.absolute()  # the project around it, wherever the lint runs from
        for name, node, owner, value in _candidates(tree):
            first, last = node.lineno, node.end_lineno or node.lineno
            if value is None and not any(first <= line <= last for line in lines):
                continue
            if value is not None and value not in positions:
                continue
            if mentioned is None:
                mentioned = _summarize(tree, *self.names(path))
            if (
                name in mentioned.mentions
                or any(name in used for _, used in mentioned.classes.values())
                or (value is not None and "globals" in mentioned.mentions)  # globals()[f"{kind}_PROMPT"]
            ):
                continue
            project = project or self._project(path)
            if project is None:
                return [], set()  # no project around it, or the module is its test code: what reads it is unknown
            if owner is not None and not project.inert(
                f"{mentioned.module}.{owner.name}", mentioned.bases.get(owner.name, [None])
            ):
                continue
            if not project.called(name, path, owner.name if owner is not None else None):
                if value is None:
                    spans.append((first, last))
                else:
                    values.add(value)
        return spans, values

    def reads_key(self, path: Path, key: str) -> bool:
        """Whether the project of the module at ``path`` reads ``key`` (:meth:`_Project.reads_key`): its code
        implements the flag itself (astrbot's ``cfg.get("datetime_system_prompt")``). False when the module is in
        no project or is its test code: the flag is then kept, as a private function is."""
        project = self._project(path.absolute())
        return project is not None and project.reads_key(key)

    def _project(self, path: Path) -> _Project | None:
        root = next((folder for folder in path.parents if any((folder / m).exists() for m in _ROOT_MARKS)), None)
        if root is None:
            return None
        relative = path.relative_to(root).parts
        if any(is_test_code(part, True) for part in relative[:-1]) or is_test_code(relative[-1], False):
            return None
        if root not in self.projects:
            self.projects[root] = _Project(root, self.names, self.largest)
        return self.projects[root]


def _searched(pattern: re.Pattern[str], needs: tuple[str, ...], text: str) -> Iterator[re.Match[str]]:
    """The matches of ``pattern`` in ``text``, searched only when the text holds one of the ``needs`` every match
    holds: a pattern of alternatives is tried at each character, seconds on a large project's files."""
    return pattern.finditer(text) if any(need in text for need in needs) else iter(())


def _python_files(root: Path) -> Iterator[Path]:
    """The project's Python files and notebooks, as a walk finds them: no tool caches or environments, no test
    code."""
    for directory, subdirs, names in os.walk(root):
        subdirs[:] = sorted(name for name in subdirs if name not in SKIP_DIRS and not is_test_code(name, True))
        for name in sorted(names):
            if name.endswith((".py", ".ipynb")) and not is_test_code(name, False):
                yield Path(directory) / name


def _candidates(
    tree: ast.Module,
) -> Iterator[tuple[str, ast.stmt, ast.ClassDef | None, tuple[int, int] | None]]:
    """(name, statement, class, value's position): each undecorated private top-level function, and private method
    of a top-level class (a static or class method too) with its class; and each top-level binding of one constant
    (``SYSTEM_PROMPT = f"... {today}"``) with the position of the value it binds, where its finding is."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if private(node.name) and not node.decorator_list:
                yield node.name, node, None, None
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            name = _bound(node)
            if name is not None:
                yield name, node, None, (node.value.lineno, node.value.col_offset)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and private(item.name):
                    kinds = {last_name(decorator) for decorator in item.decorator_list}
                    if kinds <= {"staticmethod", "classmethod"}:
                        yield item.name, item, node, None


def _bound(node: ast.stmt) -> str | None:
    """The constant a statement binds (``NAME = ...``, ``NAME: str = ...``): a name of capitals, digits and
    underscores with two letters at least."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1:
        target: ast.expr = node.targets[0]
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        target = node.target
    else:
        return None
    if isinstance(target, ast.Name) and _CONSTANT.fullmatch(target.id):
        return target.id
    return None


def _summarize(tree: ast.Module, module: str, package: str) -> _Module:
    """The names ``tree`` mentions outside ``self.x`` of its classes, each class's own ``self.x`` and methods (of
    every class of that name, nested ones too), and its top-level classes' bases resolved through its imports."""
    imported = imports(statements(tree), package)
    summary = _Module(module)
    own: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            defined, used = summary.classes.setdefault(node.name, (set(), set()))
            defined.update(item.name for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)))
            for inner in ast.walk(node):
                if (
                    isinstance(inner, ast.Attribute)
                    and isinstance(inner.value, ast.Name)
                    and inner.value.id in ("self", "cls")
                ):
                    used.add(inner.attr)
                    own.add(id(inner))
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            summary.bases.setdefault(node.name, []).extend(_resolved_bases(node, imported, module, tree))
    summary.constants.update(name for name in map(_bound, tree.body) if name is not None)
    summary.star = any(
        isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names) for node in tree.body
    )
    for node in ast.walk(tree):
        if id(node) not in own:
            named = set(_names(node))
            summary.mentions |= named
            if not isinstance(node, ast.Name):
                summary.qualified |= named
    return summary


def _names(node: ast.AST) -> Iterator[str]:
    """The names a node mentions: a name read, an attribute, an import, a string that is a name or a dotted path."""
    if isinstance(node, ast.Name):
        if not isinstance(node.ctx, ast.Store):  # bound, not read: the constant's own statement
            yield node.id
    elif isinstance(node, ast.Attribute):
        yield node.attr
    elif isinstance(node, ast.alias):
        yield node.name.rpartition(".")[2]
        if node.asname:
            yield node.asname
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 200:
        yield re.split(r"[.:]", node.value)[-1]


def _resolved_bases(node: ast.ClassDef, imported: dict[str, str], module: str, tree: ast.Module) -> list[str | None]:
    """The dotted names of a class's bases (``Generic[T]`` as ``typing.Generic``); None for a base made by a call,
    or a metaclass given."""
    local = {item.name for item in tree.body if isinstance(item, ast.ClassDef)}
    found: list[str | None] = [None] if any(keyword.arg == "metaclass" for keyword in node.keywords) else []
    for base in node.bases:
        target = base.value if isinstance(base, ast.Subscript) else base
        parts: list[str] = []
        while isinstance(target, ast.Attribute):
            parts.insert(0, target.attr)
            target = target.value
        if not isinstance(target, ast.Name):
            found.append(None)
            continue
        head = target.id
        if head in imported:
            found.append(".".join((imported[head], *parts)))
        elif head in local and not parts:
            found.append(f"{module}.{head}")
        elif head in _BUILTINS and not parts:
            found.append(f"builtins.{head}")
        else:
            found.append(None)
    return found
