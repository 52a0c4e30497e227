"""The Python file kind's checker: parse, run the interpreter, and turn its reports into findings, minus the ones a
``# noqa`` comment silences."""

from __future__ import annotations

import ast
import io
import re
import sys
import tokenize
from pathlib import Path

from agentcache.lint.core import UNPARSABLE, Checked, Finding, SourceFile
from agentcache.lint.python.interpreter import Interpreter
from agentcache.lint.python.project import Project
from agentcache.lint.python.vocabulary import CLOCK_UNLESS_GIVEN, VOCABULARY, Vocabulary

#: The newest grammar LibCST is asked to parse a file with, when the running interpreter's parser refuses it.
NEWEST = "3.14"

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def check(source: SourceFile) -> Checked:
    """AC1xx findings for one Python file, judged alone; AC001 when it does not parse."""
    return PythonSession().check(source)


class PythonSession:
    """The Python checker of one lint run: modules learn the volatile helpers and constants of the modules checked
    with them (:class:`~agentcache.lint.python.project.Project`)."""

    def __init__(self, words: Vocabulary = VOCABULARY) -> None:
        self.project = Project(words)
        self.words = words
        self.relevant = _relevant(words)

    def revisit(self) -> list[Path]:
        return self.project.revisit()

    def check(self, source: SourceFile) -> Checked:
        data = source.data
        if not self.relevant.search(data):
            return Checked()  # no sink and no source named anywhere in it: nothing to find, nothing to export
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
            text = data.decode(encoding)
            tree = ast.parse(text, filename=source.display)
        except (SyntaxError, ValueError) as exc:
            if isinstance(exc, SyntaxError) and newer_syntax(data):
                return Checked(note=f"skipped: needs a newer parser (valid Python {NEWEST}, not {_running()})")
            line = getattr(exc, "lineno", None) or 1
            column = getattr(exc, "offset", None) or 1
            reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
            return Checked((_unparsable(source, line, max(column, 1), f"not valid Python: {reason}"),))
        except RecursionError:
            return Checked((_unparsable(source, 1, 1, "not parsable: nesting too deep for Python's parser"),))
        module = self.project.module(source.path)
        analysis = Interpreter(tree, self.words, self.project.package(source.path), self.project.exports)
        try:
            analysis.run()
        except RecursionError:
            return Checked((_unparsable(source, 1, 1, "not analysed: expressions or branches nested too deep"),))
        self.project.learn(source.path, module, analysis.exports(), set(analysis.imports.values()))
        return _findings(source, text, analysis)


def _relevant(words: Vocabulary) -> re.Pattern[bytes]:
    """Bytes a module must hold to matter: a sink's name, or a call that reads the clock, draws or makes an id
    (the prefilter that spares most modules of a framework a parse)."""
    names = {
        *words.system_keywords,
        *words.tools_keywords,
        *words.system_messages,
        *words.tool_binders,
        *words.agent_factories,
        *words.system_names,
        *words.system_roles,
        *(name.rsplit(".", 1)[-1] for name in (*words.clock_calls, *words.id_calls)),
        *CLOCK_UNLESS_GIVEN,
        "system",
        "prompt",
        "tools",
        "random",
        "secrets",
        "urandom",
    }
    return re.compile("|".join(sorted(re.escape(name.rsplit(".", 1)[-1]) for name in names)).encode())


def newer_syntax(data: bytes) -> bool:
    """Whether ``data`` is valid Python of a grammar newer than the running interpreter's, by LibCST's parser
    (``agentcache[lint]``). Without it, an interpreter older than :data:`NEWEST` cannot tell, and says so."""
    if sys.version_info >= tuple(int(part) for part in NEWEST.split(".")):
        return False
    try:
        import libcst
    except ImportError:
        return True
    try:
        libcst.parse_module(data, config=libcst.PartialParserConfig(python_version=NEWEST))
    except Exception:  # LibCST raises its ParserSyntaxError, and others on bytes it cannot decode
        return False
    return True


def _running() -> str:
    return f"Python {sys.version_info.major}.{sys.version_info.minor}"


def _findings(source: SourceFile, text: str, analysis: Interpreter) -> Checked:
    data = source.data
    lines = [line.encode() for line in re.split(r"\r\n|\r|\n", text)]
    silenced = _noqa(data)
    findings = []
    for rule, node, message in analysis.sinks.results():
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


def _unparsable(source: SourceFile, line: int, column: int, message: str) -> Finding:
    return Finding(source.display, line, column, UNPARSABLE.code, message, UNPARSABLE.hint)


def _column(lines: list[bytes], line: int, offset: int) -> int:
    """1-based code-point column of ast's UTF-8 byte offset."""
    return len(lines[line - 1][:offset].decode("utf-8", "replace")) + 1
