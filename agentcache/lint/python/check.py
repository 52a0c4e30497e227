"""The Python file kind's checker: parse, run the interpreter, and turn its reports into findings, minus the ones a
``# noqa`` comment silences."""

from __future__ import annotations

import ast
import io
import itertools
import re
import sys
import tokenize
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agentcache.errors import InputError
from agentcache.lint.core import Checked, Finding, Rule, SourceFile
from agentcache.lint.python.arrival import starting_lines
from agentcache.lint.python.interpreter import Interpreter
from agentcache.lint.python.project import Lesson, Project
from agentcache.lint.python.unreached import Callers
from agentcache.lint.python.values import Value
from agentcache.lint.python.vocabulary import CLOCK_UNLESS_GIVEN, FIELDS, PROCESS_CALLS, VOCABULARY, Vocabulary

#: A module larger than this is parsed and analysed in parts of about this size, cut between top-level
#: statements: the syntax tree of a whole 4 MB module alone takes 360 MB. A function defined in one part is not
#: followed into the calls of a later one; module-level names are.
PART_BYTES = 512 * 1024
#: The newest grammar LibCST is asked to parse a file with, when the running interpreter's parser refuses it.
NEWEST = "3.14"

#: A Jinja statement tag (``{% for agent in agents %}``), which no Python source holds outside a string.
_JINJA_STATEMENT = re.compile(
    r"\{%[-+]?\s*(?:if|elif|else|endif|for|endfor|set|endset|block|endblock|macro|endmacro|include|extends|import|"
    r"from|raw|endraw|with|endwith|filter|endfilter|call|endcall)\b"
)
#: A Jinja expression tag (``{{ cookiecutter.name }}``), valid Python only as a set inside a set.
_JINJA_EXPRESSION = re.compile(r"\{\{-?\s*[A-Za-z_][\w.]*\s*(?:\|[^{}]*)?-?\}\}")
_LINES = re.compile(r"\r\n|\r|\n")
#: The string literals of one line (a prefix, then quotes with their escapes), left out before looking for a tag.
_LINE_STRINGS = re.compile(r"""[A-Za-z]{0,2}(?:'(?:\\.|[^'\\])*'|"(?:\\.|[^"\\])*")""")
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def check(source: SourceFile) -> Checked:
    """AC1xx findings for one Python file, judged alone; a note when it does not parse."""
    return PythonSession().check(source)


class PythonSession:
    """The Python checker of one lint run: modules learn the volatile helpers and constants of the modules checked
    with them (:class:`~agentcache.lint.python.project.Project`)."""

    def __init__(self, settings: Mapping[str, Any] | None = None) -> None:
        """``settings``: ``[tool.agentcache.lint]``, whose vocabulary keys (``system-keywords = [...]``) extend
        :class:`~agentcache.lint.python.vocabulary.Vocabulary`."""
        words = VOCABULARY.extend(_vocabulary(settings or {}))
        self.project = Project(words)
        self.words = words
        self.relevant = _Relevant(words)
        self.callers = Callers(lambda path: (self.project.module(path), self.project.package(path)), PART_BYTES)

        self.last: Lesson | None = None
        self.tree: ast.Module | None = None
        """The syntax tree of the module last checked, when it was parsed whole: the breakpoint rules read it too,
        instead of parsing the file again (:class:`~agentcache.lint.python_breakpoints.WithBreakpoints`)."""

    def revisit(self) -> dict[Path, frozenset[tuple[str, str | None]]]:
        return self.project.revisit()

    def lesson(self) -> Lesson | None:
        return self.last

    def adopt(self, lesson: object) -> bool:
        if lesson is None:
            return True  # a module that was not analysed read nothing and taught nothing
        if not isinstance(lesson, Lesson) or not self.project.holds(lesson):
            return False
        self.project.learn(lesson)
        return True

    def state(self) -> dict[str, str]:
        return dict(self.project.exports)

    def resume(self, state: object) -> None:
        if not isinstance(state, dict):
            raise TypeError(f"a Python session resumes from another one's state, not from {type(state).__name__}")
        self.project = Project(self.words)
        self.project.know(state)

    def check(self, source: SourceFile) -> Checked:
        self.last, self.tree = None, None
        data = source.data
        if not self.relevant(data):
            return Checked()  # no sink and no source named anywhere in it: nothing to find, nothing to export
        text = ""  # decoded with the file's own encoding, where it has a valid one
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            text, trees, tree = _parsed(data.decode(encoding), source.display)
        except _Newer:
            return _needs_newer()
        except (SyntaxError, ValueError) as exc:
            line = getattr(exc, "lineno", None) or 1
            if isinstance(exc, SyntaxError) and _template(source.path, text or data.decode("utf-8", "replace"), line):
                return Checked(note="skipped: a template of Python code (Jinja tags), not Python until rendered")
            column = getattr(exc, "offset", None) or 1
            return _not_python(line, column, exc.msg if isinstance(exc, SyntaxError) else str(exc))
        except RecursionError:
            return Checked(note="skipped: nesting too deep for Python's parser")
        module, package = self.project.module(source.path), self.project.package(source.path)
        templates = self.project.templates(source.path)
        results: list[tuple[Rule, ast.expr, str]] = []
        exports: dict[str, Value | str] = {}
        gives: dict[str, Value] = {}
        flags: dict[tuple[int, int], str] = {}
        scope = None
        reading = self.project.reading()
        starting = starting_lines(text)
        try:
            for part in itertools.chain([tree], trees):
                analysis = Interpreter(part, self.words, package, reading, scope, templates, module, starting)
                analysis.imports = self.project.located(source.path, analysis.imports)
                if len(text) > PART_BYTES:  # a part holds only some of the module's calls: none agree
                    analysis.agreed = {}
                analysis.run()
                results.extend(analysis.sinks.results())
                flags.update(analysis.sinks.flag_items)
                exports.update(analysis.exports())
                exports.update(analysis.roles_given())
                exports.update(analysis.unread())
                exports.update(analysis.set_fields())
                exports.update(analysis.instances())
                gives.update(analysis.gives)
                # last: a summary's runs, with parameters of their own and calls cut short, report and give nothing
                exports.update(analysis.summaries())
                exports.update(analysis.sending())
                exports.update(analysis.own_returns())
                scope = analysis.globals
        except SyntaxError as exc:  # a later part of a large module: the whole module is unparsable
            if _older(text) is not None:  # not rewritten: the module is not parsed whole, to bound its memory
                return _needs_newer()
            return _not_python(exc.lineno or 1, exc.offset or 1, exc.msg)
        except RecursionError:
            return Checked(note="skipped: expressions or branches nested too deep to analyse")
        self.last = self.project.lesson(source.path, module, exports, gives, reading)
        self.project.learn(self.last)
        if len(text) <= PART_BYTES:  # one part: the tree of the whole module
            self.tree = tree
            results = self.reached(tree, source.path, results, flags)
        return _findings(source, text, results)

    def reached(
        self,
        tree: ast.Module,
        path: Path,
        results: list[tuple[Rule, ast.expr, str]],
        flags: dict[tuple[int, int], str],
    ) -> list[tuple[Rule, ast.expr, str]]:
        """``results`` but those inside private functions or constants nothing in the project calls or reads, and
        clock flags given as dict items (``flags``, by position) whose key the project reads itself
        (:class:`~agentcache.lint.python.unreached.Callers`). A module of several parts keeps all: its trees are
        not kept."""
        if not results:
            return results
        positions = {(node.lineno, node.col_offset) for _, node, _ in results}
        spans, dropped = self.callers.unreached(tree, path, positions)
        dropped.update(
            position for position, key in flags.items() if position in positions and self.callers.reads_key(path, key)
        )
        return [
            result
            for result in results
            if not any(a <= result[1].lineno <= b for a, b in spans)
            and (result[1].lineno, result[1].col_offset) not in dropped
        ]


def _trees(text: str, display: str) -> Iterator[ast.Module]:
    """The syntax trees of a module, in parts of about :data:`PART_BYTES` cut before top-level ``def``, ``class``
    or decorator lines, their line numbers those of the whole text. A cut that falls inside a string makes a part
    that does not parse: it is then joined with the next one. A syntax error is raised as of the whole text."""
    parts = _parts(text)
    pending, first = "", 1
    for index, (start, part) in enumerate(parts):
        if not pending:
            first = start
        pending += part
        try:
            with warnings.catch_warnings():  # invalid escapes in the linted code are its business, not ours to print
                warnings.simplefilter("ignore")
                tree = ast.parse(pending, filename=display)
        except SyntaxError as exc:
            if index + 1 < len(parts):
                continue
            if exc.lineno is not None:
                exc.lineno += first - 1
            raise
        if first > 1:
            ast.increment_lineno(tree, first - 1)
        pending = ""
        yield tree


def _parts(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each part of a module (one part unless it is larger than :data:`PART_BYTES`)."""
    if len(text) <= PART_BYTES:
        return [(1, text)]
    lines = text.splitlines(keepends=True)
    parts, start, size = [], 0, 0
    for index, line in enumerate(lines):
        if size >= PART_BYTES and line.startswith(("def ", "class ", "async def ", "@")):
            parts.append((start + 1, "".join(lines[start:index])))
            start, size = index, 0
        size += len(line)
    parts.append((start + 1, "".join(lines[start:])))
    return parts


def _vocabulary(settings: Mapping[str, Any]) -> dict[str, list[str]]:
    extra: dict[str, list[str]] = {}
    for key, names in settings.items():
        if key.replace("-", "_") not in FIELDS:
            known = ", ".join(sorted(name.replace("_", "-") for name in FIELDS))
            raise InputError(
                f"[tool.agentcache.lint] has no setting {key!r}; use select, ignore, per-file-ignores or {known}"
            )
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            raise InputError(f"[tool.agentcache.lint] {key} must be a list of names")
        extra[key] = names
    return extra


class _Relevant:
    """Whether a module's bytes can matter: a sink's name anywhere in them (in capitals too: a module of constants,
    ``ALL_TOOLS = {...}``, teaches the modules that import it), or, as a word, a name that calls the clock, draws
    or makes an id, or a flag that may ask for the clock (``add_datetime_to_context=True``, or as a dict's item):
    the prefilter that spares many modules of a framework a parse.

    The sink names are looked for one by one with ``in``, which scans bytes several times faster than a regular
    expression's alternation; a name that holds another one (``system_prompt``, ``system``) is left out, since
    the shorter one is found wherever the longer one is. Only modules that name no sink run the expression."""

    def __init__(self, words: Vocabulary) -> None:
        names = {
            name.rsplit(".", 1)[-1]
            for name in (
                *words.system_keywords,
                *words.tools_keywords,
                *words.system_messages,
                *words.tool_binders,
                *words.schema_keywords,
                *words.schema_binders,
                *words.agent_factories,
                *words.tool_decorators,
                *words.system_names,
                *words.system_roles,
                "system",
                "tools",
                "prompt",
            )
        }
        names |= {"SYSTEM", "TOOLS", "PROMPT"}
        shortest = sorted(names, key=lambda name: (len(name), name))
        self.sinks = tuple(
            name.encode() for index, name in enumerate(shortest) if not any(other in name for other in shortest[:index])
        )
        calls = {
            *(
                name.rsplit(".", 1)[-1]
                for name in (*words.clock_calls, *words.id_calls, *CLOCK_UNLESS_GIVEN, *PROCESS_CALLS)
            ),
            "random",
            "secrets",
            "urandom",
        }
        call = "|".join(sorted(re.escape(name) for name in calls))
        self.calls = re.compile(rf"\b(?:{call})\b".encode())
        # A flag that asks for the clock (add_datetime_to_context=True) names a prompt word: only the words no sink
        # name is part of need the flags' expression, and only in modules that hold one.
        self.flag_words = tuple(
            word.encode() for word in words.prompt_words if not any(name in word.encode() for name in self.sinks)
        )
        clock = "|".join(sorted(re.escape(word) for word in words.clock_words))
        # a keyword, a dict display's item, an item stored: flag=True, "flag": True, d["flag"] = True
        self.flags = re.compile(rf"""(?:{clock})\w*(?:\s*=|["']\s*:|["']\s*\]\s*=)\s*True\b""".encode())

    #: A function annotated to return a set (``-> set[str]``), and an object or a module that holds sets
    #: (``self._by_tag: dict[str, set[str]]``), teach the modules that call them: its methods iterate them.
    SET_MARKS = (b"-> set", b"-> frozenset", b"set[", b"Set[")

    def __call__(self, data: bytes) -> bool:
        return (
            any(name in data for name in self.sinks)
            or any(mark in data for mark in self.SET_MARKS)
            or self.calls.search(data) is not None
            or (any(word in data for word in self.flag_words) and self.flags.search(data) is not None)
        )


class _Newer(Exception):
    """A module valid in a grammar newer than the interpreter's that is not rewritten for its parser."""


def _parsed(text: str, display: str) -> tuple[str, Iterator[ast.Module], ast.Module]:
    """The text of a module, its trees (:func:`_trees`) and the first of them; of a module in a grammar newer than
    the interpreter's, its text rewritten for the interpreter's parser (:func:`~.older.older_text`). Raises the
    syntax error of the text as written when it is Python of no grammar, :class:`_Newer` when it is of a newer one
    that the rewrite leaves unparsable."""
    try:
        trees = _trees(text, display)
        return text, trees, next(trees)
    except SyntaxError:
        older = _older(text)
        if older is None:
            raise
    if older == text:
        raise _Newer
    try:
        trees = _trees(older, display)
        return older, trees, next(trees)
    except SyntaxError:
        raise _Newer from None


def _older(text: str) -> str | None:
    """A module's text that the interpreter's parser refuses, rewritten by :func:`~.older.older_text` with the
    newest grammar (``agentcache[lint]``); None when it is Python of no grammar, or the interpreter's is the
    newest. Without LibCST, an interpreter older than :data:`NEWEST` cannot tell new syntax from a syntax error: the
    text as it is."""
    if sys.version_info >= tuple(int(part) for part in NEWEST.split(".")):
        return None
    try:
        from agentcache.lint.python.older import older_text
    except ImportError:
        return text
    return older_text(text, NEWEST)


def _template(path: Path, text: str, line: int) -> bool:
    """Whether a file that does not parse is a template that renders Python (cookiecutter's and copier's project
    templates, code generators): a folder or file named by a Jinja tag, or a Jinja tag outside the strings of the
    line the parser stopped at (where the first tag of a template stops it; a prompt's tags in a string do not)."""
    if any(_JINJA_EXPRESSION.search(part) for part in path.parts):
        return True
    lines = _LINES.split(text)  # as the parser counts them (str.splitlines also breaks at a form feed)
    code = _LINE_STRINGS.sub("''", lines[line - 1]).partition("#")[0] if 0 < line <= len(lines) else ""
    return bool(_JINJA_STATEMENT.search(code) or _JINJA_EXPRESSION.search(code))


def _needs_newer() -> Checked:
    """The note of a module of a grammar newer than the interpreter's that is not checked."""
    return Checked(note=f"skipped: needs a newer parser (valid Python {NEWEST}, not {_running()})")


def _running() -> str:
    return f"Python {sys.version_info.major}.{sys.version_info.minor}"


def _findings(source: SourceFile, text: str, results: list[tuple[Rule, ast.expr, str]]) -> Checked:
    if not results:
        return Checked()  # most modules: no line split, no tokenizing for noqa comments
    lines = [line.encode() for line in _LINES.split(text)]
    silenced = _noqa(source.data)
    findings = []
    for rule, node, message in results:
        codes = silenced.get(node.lineno, frozenset())
        if codes is None or rule.code in codes:
            continue
        end_line = node.end_lineno or node.lineno
        end_offset = node.end_col_offset if node.end_col_offset is not None else node.col_offset
        findings.append(
            Finding(
                source.display,
                node.lineno,
                _column(lines, node.lineno, node.col_offset),
                rule.code,
                message,
                rule.hint,
                end_line,
                _column(lines, end_line, end_offset),
            )
        )
    return Checked(tuple(findings))


def _noqa(data: bytes) -> dict[int, frozenset[str] | None]:
    """Line -> codes a ``# noqa: AC101`` comment silences there (None: a bare ``# noqa`` silences all)."""
    found: dict[int, frozenset[str] | None] = {}
    if b"noqa" not in data.lower():
        return found
    try:
        for token in tokenize.tokenize(io.BytesIO(data).readline):
            if token.type == tokenize.COMMENT and (match := _NOQA.search(token.string)):
                codes = match.group("codes")
                found[token.start[0]] = frozenset(re.findall(r"[A-Z]+[0-9]+", codes.upper())) if codes else None
    except (tokenize.TokenError, SyntaxError):
        pass
    return found


def _not_python(line: int, column: int, reason: str) -> Checked:
    """The note of a module no Python grammar reads (a syntax error, bytes its encoding does not decode): it sends
    nothing, as Python would refuse to import it, and no rule could run on it; not a finding, which is a cache
    break (a tool-schema file that does not parse is AC001: it is what a tool list is read from)."""
    return Checked(note=f"skipped: not valid Python (line {line}, column {max(column, 1)}: {reason})")


def _column(lines: list[bytes], line: int, offset: int) -> int:
    """1-based code-point column of ast's UTF-8 byte offset."""
    return len(lines[line - 1][:offset].decode("utf-8", "replace")) + 1
