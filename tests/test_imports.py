"""The package's import graph: no cycles, and no module reaching into another package's private names.

Read from the source with ``ast``, so it covers every module whether a test imports it or not. An import counts
wherever it stands (a function-level import still ties the modules together), except under ``if TYPE_CHECKING``,
which never runs. Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so those are edges too,
except for a package the importing module is itself inside (it is already being imported then).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"agentcache": ROOT / "agentcache"} | {
    path.name: path for path in sorted((ROOT / "integrations").iterdir()) if (path / "__init__.py").is_file()
}


def _modules() -> dict[str, Path]:
    found = {}
    for name, folder in SOURCES.items():
        for path in folder.rglob("*.py"):
            parts = [name, *path.relative_to(folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _package(module: str) -> str:
    return module if _is_package(module) else module.rpartition(".")[0]


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement except those under ``if TYPE_CHECKING:``."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """``(target module, imported name or None, line)`` for each project import of ``module``."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    found = []
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, None, node.lineno) for alias in node.names]
            continue
        base = node.module or ""
        if node.level:  # relative: from the importing module's package upwards
            anchor = _package(module).split(".")
            base = ".".join(anchor[: len(anchor) - node.level + 1] + ([base] if base else []))
        for alias in node.names:
            child = f"{base}.{alias.name}"
            found.append((child, None, node.lineno) if child in MODULES else (base, alias.name, node.lineno))
    return [(target, name, line) for target, name, line in found if target in MODULES]


def _edges(module: str) -> set[str]:
    edges = set()
    for target, _, _ in _imports(module):
        parts = target.split(".")
        for end in range(1, len(parts) + 1):
            step = ".".join(parts[:end])
            inside = module == step or module.startswith(step + ".")
            if step in MODULES and step != module and not (inside and step != target):
                edges.add(step)
    return edges


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return components


def test_the_sources_are_found() -> None:
    assert {"agentcache", "agentcache.predict.replay", "agentcache_crewai.interceptor"} <= MODULES.keys()


def test_no_import_cycles() -> None:
    graph = {module: _edges(module) for module in MODULES}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_names_from_another_package(module: str) -> None:
    """A name or module whose own name starts with one underscore belongs to its package."""
    wrong = []
    for target, name, line in _imports(module):
        parts = [*target.split("."), name or ""]
        private = [part for part in parts if part.startswith("_") and not part.startswith("__")]
        if private and _package(target) != _package(module):
            wrong.append(f"line {line}: {target}{'' if name is None else ' ' + name}")
    assert wrong == []


def _public_names(module: str) -> set[str]:
    """The names a module lists in ``__all__`` (empty when it has none)."""
    for node in ast.parse(MODULES[module].read_text()).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not m.startswith("agentcache.") and m != "agentcache"))
def test_integrations_use_the_public_surface(module: str) -> None:
    """An integration imports the core only through names a core module publishes in ``__all__``: what the
    integrations need is the API every user has."""
    wrong = [
        f"line {line}: {target}{'' if name is None else ' ' + name}"
        for target, name, line in _imports(module)
        if (target == "agentcache" or target.startswith("agentcache."))
        and (name is None or name not in _public_names(target))
    ]
    assert wrong == []
