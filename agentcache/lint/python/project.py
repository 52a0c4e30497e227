"""What one module learns from the others it is linted with: helpers in other modules that return the time, a
random value or a fresh id (``get_today_str()``), and module constants that hold one.

Modules are checked one by one; each one's findings use what the modules checked before it exported. A module that
imports a helper learned only later is checked again at the end (:meth:`Project.revisit`), so the order of the walk
changes no finding.
"""

from __future__ import annotations

from pathlib import Path

from agentcache.lint.python.values import Origin, volatile
from agentcache.lint.python.vocabulary import VOCABULARY, Vocabulary


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

    def learn(self, path: Path, module: str, exported: dict[str, frozenset[Origin]], imports: set[str]) -> None:
        """Record what a checked module exports, and which of its imports could still turn out volatile."""
        for name, origins in exported.items():
            kinds = sorted(origin.kind for origin in volatile(origins))
            if kinds:
                self.exports[f"{module}.{name}"] = kinds[0]
                self.names.add(f"{module}.{name.removesuffix('()')}")
        self.imported[path] = frozenset(name for name in imports if name not in self.names)

    def revisit(self) -> list[Path]:
        """Modules checked before an export they import was learned: their findings may change."""
        return sorted(path for path, names in self.imported.items() if names & self.names)
