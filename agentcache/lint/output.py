"""Lint results as text (for people), JSON (for scripts) and SARIF 2.1.0 (for code-scanning tools).

All three are deterministic: findings come sorted by path, line, column and code, and nothing depends on time,
the machine or hash order, so two runs over the same tree print the same bytes.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agentcache import __version__
from agentcache.lint.core import UNPARSABLE, Finding, LintResult, Rule, rules
from agentcache.totals import count

FORMATS = ("text", "json", "sarif")
#: Where the schema of the SARIF this module writes is published (OASIS SARIF 2.1.0, errata 01).
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
#: Version of the ``--format json`` schema; raised only when a field changes meaning or disappears.
JSON_SCHEMA_VERSION = 1


#: Paints text with a colour name (or None); the CLI passes one that paints only on a terminal.
Paint = Callable[[str, str | None], str]


def _plain(text: str, color: str | None) -> str:
    return text


@dataclass(frozen=True)
class Tool:
    """The command whose findings are written: its name in SARIF and the rules its codes come from."""

    name: str = "agentcache lint"
    catalog: Mapping[str, Rule] | None = None
    """Rules by code; None for every registered file kind's (:func:`~agentcache.lint.core.rules`)."""

    def rules(self) -> Mapping[str, Rule]:
        return rules() if self.catalog is None else self.catalog


LINT = Tool()


def render(result: LintResult, fmt: str, paint: Paint = _plain, width: int | None = None, tool: Tool = LINT) -> str:
    """The result in one of :data:`FORMATS`, ending with a newline. ``paint`` colours the text format only,
    ``width`` (a terminal's columns) wraps its lines, and ``tool`` is the command (lint unless told)."""
    if fmt == "text":
        return to_text(result, paint, width)
    if fmt == "json":
        return json.dumps(to_json(result, tool), indent=2, ensure_ascii=False) + "\n"
    if fmt == "sarif":
        return json.dumps(to_sarif(result, tool), indent=2, ensure_ascii=False) + "\n"
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def to_text(result: LintResult, paint: Paint = _plain, width: int | None = None) -> str:
    """``path:line:col: CODE message`` and an indented ``help:`` line per finding, then a summary line. With
    ``width``, a longer line is wrapped, its continuation indented."""
    lines = []

    def add(prefix: str, painted: str, text: str, indent: int) -> None:
        """``painted`` (``prefix`` in colour) then ``text``, wrapped at ``width`` as if uncoloured."""
        if width is None or len(prefix) + len(text) <= width:
            lines.append(painted + text)
            return
        wrapped = textwrap.wrap(
            text,
            width,
            initial_indent=" " * len(prefix),
            subsequent_indent=" " * indent,
            break_long_words=False,
            break_on_hyphens=False,
        )
        lines.append(painted + wrapped[0][len(prefix) :])
        lines.extend(wrapped[1:])

    for finding in result.fixed:
        where, code = _where(finding), finding.code
        add(f"{where}: {code} [fixed] ", f"{paint(where, 'bold')}: {paint(code, 'green')} [fixed] ", finding.message, 4)
    for finding in result.findings:
        where, code = _where(finding), finding.code
        add(f"{where}: {code} ", f"{paint(where, 'bold')}: {paint(code, 'red')} ", finding.message, 4)
        add("  help: ", f"  {paint('help:', 'cyan')} ", finding.hint, 8)
    for note in result.notes:
        add("note: ", f"{paint('note:', 'cyan')} ", note, 4)
    files = count(result.files, "file")
    if result.fixed:
        total = len(result.fixed) + len(result.findings)
        lines.append(
            f"Found {count(total, 'finding')} in {files}: {len(result.fixed)} fixed, {len(result.findings)} "
            f"remaining (rewrote {', '.join(result.rewritten)})."
        )
    elif result.findings:
        lines.append(f"Found {count(len(result.findings), 'finding')} in {files}.")
    elif result.notes:  # a file noted as skipped was not checked: say so where a clean run is read
        lines.append(f"All checks passed ({files} checked; {len(result.notes)} noted above).")
    else:
        lines.append(f"All checks passed ({files} checked).")
    return "\n".join(lines) + "\n"


def statistics(result: LintResult, tool: Tool = LINT) -> str:
    """``--statistics``: one line per rule with findings, most frequent first, as ruff prints them."""
    catalog = tool.rules()
    counted: dict[str, int] = {}
    for finding in result.findings:
        counted[finding.code] = counted.get(finding.code, 0) + 1
    ranked = sorted(counted.items(), key=lambda item: (-item[1], item[0]))
    width = max((len(str(number)) for number in counted.values()), default=1)
    lines = [f"{number:>{width}}\t{code}\t{catalog[code].name}" for code, number in ranked]
    lines.append(f"Found {count(len(result.findings), 'finding')} in {count(result.files, 'file')}.")
    return "\n".join(lines) + "\n"


def to_json(result: LintResult, tool: Tool = LINT) -> dict[str, Any]:
    """The ``--format json`` document (docs/lint.md describes each field)."""
    catalog = tool.rules()
    by_code: dict[str, int] = {}
    for finding in result.findings:
        by_code[finding.code] = by_code.get(finding.code, 0) + 1
    return {
        "version": JSON_SCHEMA_VERSION,
        "findings": [_finding_json(finding, catalog[finding.code]) for finding in result.findings],
        "fixed": [_finding_json(finding, catalog[finding.code]) for finding in result.fixed],
        "notes": list(result.notes),
        "summary": {
            "files": result.files,
            "findings": len(result.findings),
            "fixed": len(result.fixed),
            "rewritten": list(result.rewritten),
            "by_code": dict(sorted(by_code.items())),
        },
    }


def to_sarif(result: LintResult, tool: Tool = LINT) -> dict[str, Any]:
    """A SARIF 2.1.0 log with one run: every rule in the driver, a result per finding left, a tool execution
    notification per note."""
    catalog = list(tool.rules().values())
    index = {rule.code: position for position, rule in enumerate(catalog)}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": tool.name,
                        "version": __version__,
                        "rules": [_sarif_rule(rule) for rule in catalog],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": [_sarif_result(finding, index[finding.code]) for finding in result.findings],
                # a file skipped (not valid Python, a dataset, a newer grammar) is no result: it was not analysed
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "toolExecutionNotifications": [
                            {"level": "note", "message": {"text": note}} for note in result.notes
                        ],
                    }
                ],
            }
        ],
    }


def _finding_json(finding: Finding, rule: Rule) -> dict[str, Any]:
    return {
        "code": finding.code,
        "name": rule.name,
        "message": finding.message,
        "hint": finding.hint,
        "path": finding.path,
        "line": finding.line,
        "column": finding.column,
        "end_line": finding.end_line,
        "end_column": finding.end_column,
        "fixable": rule.fixable,
    }


def _sarif_rule(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "help": {"text": rule.hint},
        "defaultConfiguration": {"level": _level(rule.code)},
        "properties": {"fixable": rule.fixable},
    }


def _sarif_result(finding: Finding, rule_index: int) -> dict[str, Any]:
    region: dict[str, int] = {"startLine": finding.line, "startColumn": finding.column}
    if finding.end_line is not None and finding.end_column is not None:
        region.update(endLine=finding.end_line, endColumn=finding.end_column)
    return {
        "ruleId": finding.code,
        "ruleIndex": rule_index,
        "level": _level(finding.code),
        "message": {"text": f"{finding.message}. Help: {finding.hint}"},
        "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(finding.path)}, "region": region}}],
    }


def _level(code: str) -> str:
    return "error" if code == UNPARSABLE.code else "warning"


def _uri(path: str) -> str:
    """A file's URI reference: relative paths stay relative (to the directory lint ran in), with ``/``."""
    given = Path(path)
    # A file name that is not UTF-8 reaches Python with surrogates; fsencode gives back its bytes to percent-encode.
    return given.as_uri() if given.is_absolute() else quote(os.fsencode(given.as_posix()))


def _where(finding: Finding) -> str:
    return f"{finding.path}:{finding.line}:{finding.column}"
