"""The Python file kind's checker: parse, run the interpreter, and turn its reports into findings, minus the ones a
``# noqa`` comment silences."""

from __future__ import annotations

import ast
import io
import re
import tokenize

from agentcache.lint.core import UNPARSABLE, Checked, Finding, SourceFile
from agentcache.lint.python.interpreter import Interpreter

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


def check(source: SourceFile) -> Checked:
    """AC1xx findings for one Python file; AC001 when it does not parse."""
    data = source.data
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
        tree = ast.parse(text, filename=source.display)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None) or 1
        column = getattr(exc, "offset", None) or 1
        reason = exc.msg if isinstance(exc, SyntaxError) else str(exc)
        return Checked((_unparsable(source, line, max(column, 1), f"not valid Python: {reason}"),))
    except RecursionError:
        return Checked((_unparsable(source, 1, 1, "not parsable: nesting too deep for Python's parser"),))
    analysis = Interpreter(tree)
    try:
        analysis.run()
    except RecursionError:
        return Checked((_unparsable(source, 1, 1, "not analysed: expressions or branches nested too deep to follow"),))
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
