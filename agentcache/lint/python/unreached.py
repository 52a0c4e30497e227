"""Private functions and methods nothing in their package calls: what they build is never sent, so a sink inside
one is not reported (aacode's ``_compact_context``, left behind when its caller was rewritten).

Only private names (``_name``, not a dunder) qualify: a public one may be the package's API, called by its users.
A private name is called when any module of the package, tests aside, mentions it in code (a call, a reference, a
string that is the name, given to ``getattr``; not prose in a docstring), except ``self._name`` in another class
that defines its own ``_name`` and that the method's class does not derive from: that call reaches the other
class's method, not this one (omagent's LLM classes each define and call their own
``_generate_default_sys_prompt``). A method is taken as unreached only when every class it inherits from is the
package's own or one that calls no private hook (:data:`INERT_BASES`): a library's base class calls its
subclasses' ``_run`` or ``_generate`` without the package ever naming them.

The package's files are read only when a module has a finding inside a private function the module itself does
not mention, and once per package.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from agentcache.lint.python.syntax import Function, last_name

#: Base classes that call no private method of their subclasses: a method of a class built only on these and on
#: the package's own classes is called by the package or by nothing.
INERT_BASES = frozenset(
    {"object", "ABC", "Generic", "Protocol", "BaseModel", "BaseSettings", "Enum", "StrEnum", "IntEnum", "Exception"}
)
#: A class statement with its bases, as text: enough to tell a package's classes and what they derive from.
_CLASS = re.compile(rb"^[ \t]*class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?[ \t]*:", re.MULTILINE)
_KEYWORD = re.compile(rb"\w+\s*=\s*[\w.]+")
_NAME = re.compile(rb"[A-Za-z_][\w.]*")
_TEST_FOLDERS = frozenset({"test", "tests", "testing"})


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


@dataclass
class _Package:
    """The non-test modules of one package, read once: their bytes, and each class name's bases."""

    files: dict[Path, bytes]
    bases: dict[str, set[str]] = field(default_factory=dict)
    trees: dict[Path, ast.Module | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for data in self.files.values():
            for match in _CLASS.finditer(data):
                named = _NAME.findall(_KEYWORD.sub(b"", match.group(2) or b""))
                self.bases.setdefault(match.group(1).decode(), set()).update(
                    name.rsplit(b".", 1)[-1].decode() for name in named
                )

    def derives(self, name: str, ancestor: str) -> bool:
        """Whether a class of this name derives from a class named ``ancestor``, all the way up."""
        seen: set[str] = set()
        pending = [name]
        while pending:
            bases = self.bases.get(pending.pop(), set()) - seen
            if ancestor in bases:
                return True
            seen |= bases
            pending.extend(bases)
        return False

    def inert(self, bases: set[str], seen: set[str]) -> bool:
        """Whether every class of these names is inert or the package's own, derived from inert ones all the way
        up."""
        for base in bases - seen:
            seen.add(base)
            if base not in INERT_BASES and (base not in self.bases or not self.inert(self.bases[base], seen)):
                return False
        return True

    def tree(self, path: Path) -> ast.Module | None:
        if path not in self.trees:
            try:
                self.trees[path] = ast.parse(self.files[path])
            except (SyntaxError, ValueError, RecursionError):
                self.trees[path] = None
        return self.trees[path]


class Callers:
    """The private functions nothing in their package calls, for one lint run (:func:`unreached`)."""

    def __init__(self) -> None:
        self.packages: dict[Path, _Package] = {}

    def unreached(self, tree: ast.Module, path: Path, root: Path | None, lines: set[int]) -> list[tuple[int, int]]:
        """The lines (first, last) of each private top-level function, and private method of a top-level class,
        of the module at ``path`` that holds one of ``lines`` and that no module of the package under ``root``
        calls (None: a module outside any package, whose callers cannot be known)."""
        if root is None:
            return []
        spans, mentioned = [], None
        for function, owner in _privates(tree):
            first, last = function.lineno, function.end_lineno or function.lineno
            if not any(first <= line <= last for line in lines):
                continue
            if mentioned is None:
                mentioned = _Mentions(tree)
            if function.name in mentioned:
                continue
            package = self._package(root)
            if owner is not None and not package.inert(set(filter(None, map(_base, owner.bases))), set()):
                continue
            if not self._called(package, path, function, owner):
                spans.append((first, last))
        return spans

    def _package(self, root: Path) -> _Package:
        if root not in self.packages:
            files = {}
            for path in sorted(root.rglob("*.py")):
                relative = path.relative_to(root)
                if _TEST_FOLDERS.isdisjoint(relative.parts[:-1]) and not _test_file(path.name):
                    try:
                        files[path] = path.read_bytes()
                    except OSError:
                        continue
            self.packages[root] = _Package(files)
        return self.packages[root]

    def _called(self, package: _Package, path: Path, function: Function, owner: ast.ClassDef | None) -> bool:
        word = re.compile(rb"(?<![\w])" + re.escape(function.name.encode()) + rb"(?!\w)")
        for other, data in package.files.items():
            if other == path or not word.search(data):
                continue
            tree = package.tree(other)
            if tree is None or _calls(tree, function.name, owner, package):
                return True
        return False


def _privates(tree: ast.Module) -> Iterator[tuple[Function, ast.ClassDef | None]]:
    """Each undecorated private top-level function, and private method of a top-level class (a static or class
    method too), with its class."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if private(node.name) and not node.decorator_list:
                yield node, None
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and private(item.name):
                    kinds = {last_name(decorator) for decorator in item.decorator_list}
                    if kinds <= {"staticmethod", "classmethod"}:
                        yield item, node


class _Mentions:
    """The names a module mentions in its code (names, attributes, imports) and its string constants."""

    def __init__(self, tree: ast.Module) -> None:
        self.names: set[str] = set()
        self.texts: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                self.names.add(node.id)
            elif isinstance(node, ast.Attribute):
                self.names.add(node.attr)
            elif isinstance(node, ast.alias):
                self.names.update(filter(None, (node.name, node.asname)))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.texts.add(node.value)

    def __contains__(self, name: object) -> bool:
        return name in self.names or name in self.texts


def _base(node: ast.expr) -> str | None:
    """A base class's name (``Generic`` of ``Generic[T]``)."""
    return last_name(node.value if isinstance(node, ast.Subscript) else node)


def _mentions(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name
    if isinstance(node, ast.Attribute):
        return node.attr == name
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value == name
    if isinstance(node, ast.alias):
        return name in (node.name, node.asname)
    return False


def _calls(tree: ast.Module, name: str, owner: ast.ClassDef | None, package: _Package) -> bool:
    """Whether another module mentions ``name`` other than as ``self.name`` of a class of its own that defines
    ``name`` and that the owner of this one does not derive from."""
    others = set()
    if owner is not None:
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.ClassDef)
                and node.name != owner.name
                and not package.derives(owner.name, node.name)
            ):
                defines = any(
                    isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name
                    for item in node.body
                )
                if defines:
                    others.add(node)
    own = {
        id(node)
        for other in others
        for node in ast.walk(other)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
    }
    return any(_mentions(node, name) and id(node) not in own for node in ast.walk(tree))


def _test_file(name: str) -> bool:
    return name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
