"""What one module learns from the others it is linted with: helpers in other modules that return the time, a
random value or a fresh id (``get_today_str()``), and module constants that hold one.

Modules are checked one by one; each one's findings use what the modules checked before it exported. A module that
imports a helper learned only later is checked again at the end (:meth:`Project.revisit`), so the order of the walk
changes no finding.

A worker process of a parallel run checks its share of the modules with a project of its own; each module's
:class:`Lesson` records what it read there, and the parent keeps the worker's verdict only when the parent's project
gives the same reads (:meth:`Project.holds`), so a parallel run finds exactly what one process finds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agentcache.lint.python.templates import TemplateFiles
from agentcache.lint.python.values import Origin, volatile
from agentcache.lint.python.vocabulary import VOCABULARY, Vocabulary


@dataclass(frozen=True)
class Lesson:
    """What checking one module read from the project and taught it."""

    path: Path
    module: str
    exports: dict[str, str]
    """Its volatile names (``name``, ``name()`` for a helper, ``Class().field`` for a class's field) -> the origin
    kind they give."""
    imports: frozenset[str]
    """Every dotted name it imports."""
    reads: dict[str, str | None] = field(default_factory=dict)
    """Each name it looked up among the project's exports -> what it found (None: nothing)."""


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
        self.names: set[str] = set()
        """The dotted names of :attr:`exports`, as an import names them."""
        self.imported: dict[Path, frozenset[str]] = {}
        """A checked module's imports that named no known export when it was checked."""
        self._packages: dict[Path, str] = {}

    def module(self, path: Path) -> str:
        """The dotted module name of ``path``: its name under the folders that hold an ``__init__.py``."""
        folder = path.parent
        package = self._package(folder)
        name = path.stem
        if name == "__init__":
            return package
        return f"{package}.{name}" if package else name

    def package(self, path: Path) -> str:
        """The package a module's relative imports start from."""
        return self.module(path) if path.stem == "__init__" else self._package(path.parent)

    def _package(self, folder: Path) -> str:
        known = self._packages.get(folder)
        if known is None:
            parent = folder.parent
            if (folder / "__init__.py").is_file() and parent != folder:
                above = self._package(parent)
                known = f"{above}.{folder.name}" if above else folder.name
            else:
                known = ""
            self._packages[folder] = known
        return known

    def templates(self, path: Path) -> TemplateFiles:
        """The template files and modules of the package ``path`` is in, found from its import root."""
        module = self.module(path)
        depth = module.count(".") + (path.stem == "__init__")
        return TemplateFiles(path.parents[depth] if module else None, module)

    def reading(self) -> Reading:
        """A view of :attr:`exports` for one module's analysis, that records what it reads."""
        return Reading(self.exports)

    def lesson(
        self, path: Path, module: str, exported: dict[str, frozenset[Origin]], imports: set[str], reading: Reading
    ) -> Lesson:
        """What a checked module teaches: its exports that are volatile (by the first kind of their origins)."""
        exports = {}
        for name, origins in exported.items():
            kinds = sorted(origin.kind for origin in volatile(origins))
            if kinds:
                exports[name] = kinds[0]
        return Lesson(path, module, exports, frozenset(imports), dict(reading.reads))

    def holds(self, lesson: Lesson) -> bool:
        """Whether the module, checked here, would read what it read where it was checked: then its verdict and
        its lesson are the same here."""
        return all(self.exports.get(name) == found for name, found in lesson.reads.items())

    def learn(self, lesson: Lesson) -> None:
        """Record what a checked module exports, and which of its imports could still turn out volatile."""
        for name, kind in lesson.exports.items():
            self.exports[f"{lesson.module}.{name}"] = kind
        self._name(f"{lesson.module}.{name}" for name in lesson.exports)
        self.imported[lesson.path] = frozenset(name for name in lesson.imports if name not in self.names)

    def know(self, exports: dict[str, str]) -> None:
        """Know these exports (another project's :attr:`exports`), as if their modules had been checked here."""
        self.exports.update(exports)
        self._name(exports)

    def _name(self, exports: Iterable[str]) -> None:
        """Add the names an import of these exports takes: ``pkg.dates.today`` for ``pkg.dates.today()`` and
        ``pkg.base.Agent`` for ``pkg.base.Agent().name``, and the module that holds each (``from . import base``)."""
        for export in exports:
            name = export.partition("(")[0]
            self.names.update((name, name.rpartition(".")[0]))

    def revisit(self) -> dict[Path, frozenset[str]]:
        """Modules checked before an export they import was learned (their findings may change), sorted, each with
        those exports."""
        found = {path: names & self.names for path, names in self.imported.items()}
        return {path: found[path] for path in sorted(found) if found[path]}
