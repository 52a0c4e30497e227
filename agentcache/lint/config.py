"""``[tool.agentcache.lint]`` in ``pyproject.toml``: which rules run where, and the names that make sources and
sinks in the user's own frameworks, as ruff reads ``[tool.ruff.lint]``.

```toml
[tool.agentcache.lint]
select = ["AC1"]                      # codes or prefixes; default: every rule
ignore = ["AC105"]
per-file-ignores = {"tests/*" = ["AC101"]}
system-keywords = ["persona"]         # extend the Python vocabulary (docs/lint.md, Framework vocabulary)
clock-calls = ["myapp.dates.today_str"]
```
"""

from __future__ import annotations

import fnmatch
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentcache.errors import InputError


def toml_reader() -> Any:
    """The TOML reader: the standard library's from Python 3.11, tomli (same API) on 3.10 when installed."""
    for name in ("tomllib", "tomli"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


_RULE_KEYS = frozenset({"select", "ignore", "per-file-ignores"})


@dataclass(frozen=True)
class Config:
    """Rule selection and the settings each file kind reads (the Python vocabulary)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)
    """Keys other than the rule selection, for the file kinds (``system-keywords = [...]``)."""
    root: Path = Path()
    """Where per-file patterns are relative to: the folder of the ``pyproject.toml``."""

    def enabled(self, code: str, path: str) -> bool:
        """Whether a finding of ``code`` in ``path`` is reported."""
        if self.select and not code.startswith(tuple(self.select)):
            return False
        if code.startswith(self.ignore):
            return False
        relative = _relative(path, self.root)
        return not any(
            code.startswith(codes) and (fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path, pattern))
            for pattern, codes in self.per_file_ignores.items()
        )

    def with_rules(self, select: Sequence[str] | None, ignore: Sequence[str] | None) -> Config:
        """Command-line ``--select`` replaces the file's; ``--ignore`` adds to it."""
        return Config(
            tuple(select) if select else self.select,
            (*self.ignore, *(ignore or ())),
            self.per_file_ignores,
            self.settings,
            self.root,
        )


def load(start: Path) -> Config:
    """The ``[tool.agentcache.lint]`` table of the nearest ``pyproject.toml`` at or above ``start``."""
    for folder in (start.resolve(), *start.resolve().parents):
        path = folder / "pyproject.toml"
        if path.is_file():
            return parse(path)
    return Config()


def parse(path: Path) -> Config:
    tomllib = toml_reader()
    if tomllib is None:
        return Config(root=path.parent)
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    table = document.get("tool", {}).get("agentcache", {}).get("lint", {})
    if not isinstance(table, dict):
        raise InputError(f"{path}: [tool.agentcache.lint] must be a table")
    per_file = table.get("per-file-ignores", {})
    return Config(
        tuple(_codes(path, "select", table.get("select", []))),
        tuple(_codes(path, "ignore", table.get("ignore", []))),
        {pattern: tuple(_codes(path, f"per-file-ignores.{pattern}", codes)) for pattern, codes in per_file.items()},
        {key: value for key, value in table.items() if key not in _RULE_KEYS},
        path.parent,
    )


def _codes(path: Path, key: str, value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(code, str) for code in value):
        raise InputError(f'{path}: [tool.agentcache.lint] {key} must be a list of rule codes such as "AC101"')
    return [code.upper() for code in value]


def _relative(path: str, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()
