"""Templates rendered into a prompt (Jinja's ``render(agent=...)``): where their text is, and what of each variable
it prints or iterates (``{{ agent.name }}``, ``{% for m in memories %}``), so that only those attributes of the
objects passed flow into the rendered text, and a set it iterates leaves its order there.

The text is found statically or not at all: a string the module holds, a file the module's package holds by the
name the code gives (``env.get_template("agent.jinja")``), the file a template class names in its body
(``template_path: str = "agent.jinja"``), or a string of the package's data files (TOML, YAML, JSON) under the
key path the code reads (``get_settings().review_prompt.system``, ``config["agent"]["system_template"]``). Jinja's
own parser reads it when ``jinja2`` is installed (an optional dependency: it is imported when a template is first
read), else a regular expression reads ``{{ ... }}`` and ``{% for ... in ... %}``.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from agentcache.lint.config import toml_reader
from agentcache.lint.core import SKIP_DIRS, is_test_code

#: How the files of templates rendered by name end (Jinja's, and Markdown prompts rendered through Jinja).
TEMPLATE_SUFFIXES = (".jinja", ".jinja2", ".j2", ".md")
#: Data files whose strings may be templates read by a key path (settings, configs shipped in the package).
DATA_SUFFIXES = (".toml", ".yaml", ".yml", ".json")
#: Larger data files are datasets or recorded fixtures, not settings: they are not read.
MAX_DATA_BYTES = 256 * 1024
#: Files searched for the placeholders a package's templates name (:meth:`TemplateFiles.placeholders`): its code
#: (read as text: an f-string's fields and a set display read as placeholders too, which only keeps a finding), its
#: template and data files, and prompts kept as text.
PLACEHOLDER_SUFFIXES = (".py", ".txt", ".prompt", ".tmpl", *TEMPLATE_SUFFIXES, *DATA_SUFFIXES)
#: Larger files are generated code or datasets: a placeholder in one names no template.
MAX_PLACEHOLDER_BYTES = 1024 * 1024

Reads = dict[str, frozenset[str | None]]
"""Variable -> what the template puts into its text of it: attributes (``agent.name``), None for the value itself
(``{{ memories }}``, ``{% for m in memories %}``)."""

#: Tags that bring another template's text, whose reads are not known here.
_OTHER_TEMPLATE = re.compile(r"\{%[-+]?\s*(?:include|extends|import|from)\b")
#: Such a tag when it brings one template named by a literal, and nothing else (``{% include "x.jinja2" ignore
#: missing %}``, ``{% from "macros.jinja2" import card as c %}``; not ``{% include "a" if x else "b" %}``).
_BRINGS = re.compile(
    r"\{%[-+]?\s*(?:include|extends|import|from)\s+(['\"])([^'\"]+)\1(?:\s+ignore\s+missing)?"
    r"(?:\s+(?:with|without)\s+context)?(?:\s+as\s+\w+)?(?:\s+import\s+\w+(?:\s+as\s+\w+)?"
    r"(?:\s*,\s*\w+(?:\s+as\s+\w+)?)*)?(?:\s+(?:with|without)\s+context)?\s*[-+]?%\}"
)
_EXPRESSIONS = re.compile(r"\{\{(.*?)\}\}|\{%-?\s*(?:for\s.*?\sin|set\s[^=%]*=)\s(.*?)-?%\}", re.DOTALL)
_STRINGS = re.compile(r"'[^']*'|\"[^\"]*\"")
_FILTERS = re.compile(r"\|\s*[A-Za-z_]\w*")
_CHAIN = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(?:\s*\.\s*([A-Za-z_]\w*))?")
#: Where a text names a variable to print: a Jinja or Mustache tag (any name inside it), a ``str.format`` field
#: (``{date}``, ``{date:%Y}``, ``{task.id}``), a ``string.Template`` one (``$date``, ``${date}``).
_TAGS = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.DOTALL)
_FIELDS = re.compile(r"\{([A-Za-z_]\w*)(?:[.\[!:](?:[^{}\n]|\{[^{}\n]*\})*)?\}|\$\{?([A-Za-z_]\w*)")
_NAMES = re.compile(r"[A-Za-z_]\w*")


@lru_cache(maxsize=256)
def reads(text: str) -> Reads | None:
    """What ``text`` prints or iterates of each variable (None: it cannot tell, as for a template that includes
    another or does not parse)."""
    if _OTHER_TEMPLATE.search(text):
        return None
    try:
        from jinja2 import Environment, TemplateSyntaxError, nodes
    except ImportError:
        return _read_by_pattern(text)
    try:
        tree = Environment().parse(text)
    except TemplateSyntaxError:
        return None
    found: dict[str, set[str | None]] = {}
    for node in tree.find_all((nodes.Output, nodes.For, nodes.Assign)):
        expressions: list[Any]
        if isinstance(node, nodes.Output):
            expressions = node.nodes
        else:
            expressions = [node.iter if isinstance(node, nodes.For) else getattr(node, "node", None)]
        for expression in expressions:
            for name, attribute in _chains(expression, nodes):
                found.setdefault(name, set()).add(attribute)
    return {name: frozenset(attributes) for name, attributes in found.items()}


def _chains(node: Any, nodes: Any) -> Iterator[tuple[str, str | None]]:
    """The variables a Jinja expression reads, each with the attribute read of it first (``task.parent.id``:
    ``task``'s ``parent``)."""
    if isinstance(node, nodes.Name):
        yield node.name, None
        return
    if isinstance(node, (nodes.Getattr, nodes.Getitem)) and isinstance(node.node, nodes.Name):
        if isinstance(node, nodes.Getattr):
            key = node.attr
        else:
            key = node.arg.value if isinstance(node.arg, nodes.Const) else None
        yield node.node.name, key if isinstance(key, str) else None
        if isinstance(node, nodes.Getitem):
            yield from _chains(node.arg, nodes)
        return
    for child in node.iter_child_nodes():
        yield from _chains(child, nodes)


def _read_by_pattern(text: str) -> Reads:
    """:func:`reads` without Jinja: the names and first attributes in ``{{ ... }}``, ``{% for ... in ... %}`` and
    ``{% set ... = ... %}``, strings and filter names left out."""
    found: dict[str, set[str | None]] = {}
    for match in _EXPRESSIONS.finditer(text):
        expression = _FILTERS.sub("|", _STRINGS.sub("''", match.group(1) or match.group(2) or ""))
        for chain in _CHAIN.finditer(expression):
            found.setdefault(chain.group(1), set()).add(chain.group(2))
    return {name: frozenset(attributes) for name, attributes in found.items()}


class TemplateFiles:
    """The template files and modules of the package a module belongs to, found by the names its code gives."""

    def __init__(self, root: Path | None = None, package: str = "") -> None:
        """``root``: the folder the top-level package is in (the import root); ``package``: the module's
        package, whose top level is searched for template files."""
        self.root = root
        top = package.partition(".")[0]
        self.folder = root / top if root is not None and top else None

    def named(self, name: str) -> str | None:
        """The text of the one template file in the package whose path ends with ``name`` (None: none, or several
        that the name does not tell apart)."""
        return _named(self.folder, name) if self.folder is not None else None

    def variables(self, name: str) -> frozenset[str] | None:
        """The variables the package's template file named ``name`` prints (the path after any ``scheme://``:
        ``builtin://generic_ask.jinja2``), with those of the templates it includes, imports or extends. None: no
        such file, or one it brings is not known."""
        if self.folder is None:
            return None
        return _variables(self.folder, name.rpartition("://")[2])

    def class_template(self, qualname: str, local: ast.Module | None = None) -> str | None:
        """The text of the template file a template class names in its body or a base's in the same module:
        ``local`` is the module a class defined there is looked up in, else the module ``qualname`` names."""
        module, _, name = qualname.rpartition(".")
        tree = local if local is not None else self._module(module)
        classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)} if tree else {}
        seen: set[str] = set()
        while name in classes and name not in seen:
            seen.add(name)
            for file in _template_names(classes[name]):
                text = self.named(file)
                if text is not None:
                    return text
            name = next((base.id for base in classes[name].bases if isinstance(base, ast.Name)), "")
        return None

    def keys(self) -> frozenset[str]:
        """The last keys of the texts the package's data files hold (:class:`_DataTexts`): a key path read in code
        is looked up only when it ends with one of them."""
        return _data(self.folder).keys if self.folder is not None else frozenset()

    def keyed(self, path: tuple[str, ...]) -> str | None:
        """The text of the string the package's data files hold under the key path the code reads
        (``("review_prompt", "system")`` of ``get_settings().review_prompt.system``): of the strings under its last
        key, those whose paths end with the most of its keys (``agent.system_template`` for
        ``self.config.system_template``, a config object's field named as the key). The same setting in several
        files (each config's ``agent.system_template``) is read as one text made of them all, which prints
        whatever any of them prints. None: no string under that key, or several settings the code's path does not
        tell apart (``self.handler.system`` and the ``system`` of each prompt's table)."""
        if self.folder is None or not path:
            return None
        return _data(self.folder).text(path)

    def placeholders(self) -> frozenset[str] | None:
        """The names any text of the package could print as a template's variable (``{date}``, ``{{ date }}``,
        ``$date``), in its code, templates and data files: a value a template whose text is not known is filled
        with by a name none of them holds (``system_prompt.format(date=today)``, the date offered to a template the
        user writes) reaches no prompt the package ships. None: the module is in no package (a script, a folder of
        modules without ``__init__.py``), whose texts are not known."""
        if self.folder is None or not self.folder.is_dir():  # a top-level module: where its texts are is not known
            return None
        return _placeholders(self.folder)

    def _module(self, dotted: str) -> ast.Module | None:
        if self.root is None or not dotted:
            return None
        base = self.root.joinpath(*dotted.split("."))
        for path in (base.with_suffix(".py"), base / "__init__.py"):
            if path.is_file():
                return _parsed(path)
        return None


def _named(folder: Path, name: str) -> str | None:
    """:meth:`TemplateFiles.named` in the package at ``folder``."""
    if not name.endswith(TEMPLATE_SUFFIXES):
        return None
    suffix = "/" + name.replace("\\", "/").lstrip("./")
    found = [path for path in _template_files(folder) if path.as_posix().endswith(suffix)]
    return _text(found[0]) if len(found) == 1 else None


@lru_cache(maxsize=256)
def _variables(folder: Path, name: str) -> frozenset[str] | None:
    """:meth:`TemplateFiles.variables` of ``name``: the names in its tags and in those of every template it brings,
    each template read once."""
    found: set[str] = set()
    pending, seen = [name], {name}
    while pending:
        tags = _tags(folder, pending.pop())
        if tags is None:
            return None
        names, brought = tags
        found |= names
        pending += [other for other in brought if other not in seen]
        seen.update(brought)
    return frozenset(found)


@lru_cache(maxsize=256)
def _tags(folder: Path, name: str) -> tuple[frozenset[str], tuple[str, ...]] | None:
    """The names in the tags of the package's template file ``name`` (a loop's own variable and a filter's name
    too, which only keeps what a caller returns), and the templates it brings. None: no such file, or a template it
    brings is not named by one literal."""
    source = _named(folder, name)
    if source is None:
        return None
    brought = []
    for match in _OTHER_TEMPLATE.finditer(source):
        tag = _BRINGS.match(source, match.start())
        if tag is None:
            return None
        brought.append(tag.group(2))
    return _tag_names(source, strings=False), tuple(brought)


def _template_names(node: ast.ClassDef) -> Iterator[str]:
    """The template file names a class body gives its fields (``template_path: str = "agent.jinja"``,
    ``source: Path = Path("agent.jinja")``)."""
    for item in node.body:
        value = item.value if isinstance(item, (ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call) and len(value.args) == 1 and getattr(value.func, "id", None) == "Path":
            value = value.args[0]
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.endswith(TEMPLATE_SUFFIXES):
            yield value.value


@lru_cache(maxsize=64)
def _template_files(folder: Path) -> tuple[Path, ...]:
    return tuple(sorted(path for path in folder.rglob("*") if path.suffix in TEMPLATE_SUFFIXES and path.is_file()))


@lru_cache(maxsize=256)
def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


@lru_cache(maxsize=64)
def _parsed(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return None


class _DataTexts:
    """The strings of a package's data files, by the key path that leads to each (lists are passed through: the
    prompts of a list of agents are under ``agents.system_prompt``). Only the keys that hold a text are looked up:
    a string of several lines or with a placeholder (``{{ diff }}``, ``{date}``) under one of them, not a model's
    name or a flag; the code's keys are matched as they are written."""

    def __init__(self, folder: Path) -> None:
        self.by_key: dict[str, list[tuple[tuple[str, ...], str]]] = {}
        for path in _package_files(folder, DATA_SUFFIXES, MAX_DATA_BYTES):
            data = _load(path)
            try:
                self._add((), data)
            except RecursionError:  # nested deeper than Python's stack: not settings
                continue
        for found in self.by_key.values():
            found.sort()
        self.keys = frozenset(key for key, found in self.by_key.items() if any(_text_like(text) for _, text in found))
        self.texts: dict[tuple[str, ...], str | None] = {}
        """Key path -> its text, once looked up: a module reads the same settings in many places."""

    def _add(self, path: tuple[str, ...], data: object) -> None:
        if isinstance(data, dict):
            for key, value in data.items():
                if isinstance(key, str):
                    self._add((*path, key), value)
        elif isinstance(data, list):
            for item in data:
                self._add(path, item)
        elif isinstance(data, str) and path:
            self.by_key.setdefault(path[-1], []).append((path, data))

    def text(self, path: tuple[str, ...]) -> str | None:
        if path not in self.texts:
            self.texts[path] = self._find(path)
        return self.texts[path]

    def _find(self, path: tuple[str, ...]) -> str | None:
        found = self.by_key.get(path[-1])
        if not found:
            return None
        matched = [(_common_tail(stored, path), stored, text) for stored, text in found]
        best = max(length for length, _, _ in matched)
        chosen = [(stored, text) for length, stored, text in matched if length == best]
        if best < len(path) and len({stored for stored, _ in chosen}) > 1:
            return None  # the key of several settings (review.system, changelog.system), the code's path tells none
        return "\n".join(dict.fromkeys(text for _, text in chosen))


def _text_like(text: str) -> bool:
    """Whether a data file's string reads as a text a prompt is made of: several lines, or a placeholder."""
    return "\n" in text or "{" in text


def _common_tail(first: tuple[str, ...], second: tuple[str, ...]) -> int:
    """How many keys two key paths end with alike."""
    count = 0
    for a, b in zip(reversed(first), reversed(second), strict=False):
        if a != b:
            break
        count += 1
    return count


@lru_cache(maxsize=64)
def _data(folder: Path) -> _DataTexts:
    return _DataTexts(folder)


def _package_files(folder: Path, suffixes: tuple[str, ...], limit: int) -> Iterator[Path]:
    """The package's files ending with one of ``suffixes``, but in test folders (their fixtures are not what it
    ships) and those larger than ``limit`` bytes."""
    for parent, subdirs, files in os.walk(folder):
        subdirs[:] = sorted(name for name in subdirs if name not in SKIP_DIRS and not is_test_code(name, True))
        for name in sorted(files):
            if name.endswith(suffixes) and not is_test_code(name, False):
                path = Path(parent, name)
                try:
                    if path.stat().st_size <= limit:
                        yield path
                except OSError:
                    continue


@lru_cache(maxsize=64)
def _placeholders(folder: Path) -> frozenset[str]:
    """The names the placeholders of a package's texts hold (:meth:`TemplateFiles.placeholders`)."""
    found: set[str] = set()
    for path in _package_files(folder, PLACEHOLDER_SUFFIXES, MAX_PLACEHOLDER_BYTES):
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if "{" not in text and "$" not in text:
            continue
        found |= _tag_names(text, strings=True)
        for match in _FIELDS.finditer(text):
            found.add(match.group(1) or match.group(2))
    return frozenset(found)


def _tag_names(text: str, strings: bool) -> frozenset[str]:
    """Every name in the Jinja or Mustache tags of ``text``, and (unless ``strings`` is False) in the strings they
    hold."""
    found: set[str] = set()
    for match in _TAGS.finditer(text):
        inside = match.group(1) or match.group(2) or ""
        found.update(_NAMES.findall(inside if strings else _STRINGS.sub("", inside)))
    return frozenset(found)


def _load(path: Path) -> object:
    """A data file's content (None: it does not parse, or its format's parser is not installed)."""
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            return json.loads(text)
        if path.suffix == ".toml":
            return toml_reader().loads(text)  # None on Python 3.10 without tomli: an AttributeError
        yaml = importlib.import_module("yaml")  # PyYAML, when installed
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except Exception:  # OSError, UnicodeDecodeError, ImportError, and each parser's own errors
        return None
