"""``agentcache lint``: find what makes requests differ from call to call, before it costs cache hits.

Rules have stable codes, ``AC`` and three digits; the hundreds digit is the family (the kind of file):

- ``AC0xx`` any file: AC001, a tool-schema file cannot be parsed (a Python file that cannot is noted, not checked);
- ``AC1xx`` Python source (:mod:`agentcache.lint.python`; AC120-AC122, cache breakpoints built in code:
  :mod:`agentcache.lint.python_breakpoints`);
- ``AC2xx`` tool-schema JSON files (:mod:`agentcache.lint.tool_schema`), fixable with ``fix=True``;
- ``AC3xx`` trace files (``.jsonl``): the drift findings of ``explain`` (:mod:`agentcache.lint.trace`).

A new family registers a :class:`FileKind` (suffixes, rules, a checker ``SourceFile -> Checked``) with
:func:`register_kind`; the engine, the output formats and the CLI pick it up from the registry.
"""

from __future__ import annotations

from agentcache.lint import python, python_breakpoints, tool_schema, trace
from agentcache.lint.config import Config, load
from agentcache.lint.core import (
    SKIP_DIRS,
    UNPARSABLE,
    Checked,
    Checker,
    FileKind,
    Finding,
    LintResult,
    NotThisKind,
    Rule,
    SourceFile,
    kinds,
    lint_paths,
    register_kind,
    rules,
)
from agentcache.lint.output import FORMATS, render

__all__ = [
    "FORMATS",
    "SKIP_DIRS",
    "UNPARSABLE",
    "Checked",
    "Checker",
    "Config",
    "FileKind",
    "Finding",
    "LintResult",
    "NotThisKind",
    "Rule",
    "SourceFile",
    "kinds",
    "lint_paths",
    "load",
    "register_kind",
    "render",
    "rules",
]


register_kind(
    FileKind(
        "python",
        (".py",),
        (*python.RULES, *python_breakpoints.RULES),
        lambda source: python_breakpoints.check(source, python.check(source)),
        lambda settings: python_breakpoints.WithBreakpoints(python.PythonSession(settings)),
    )
)
register_kind(FileKind("tool-schema", (".json",), tool_schema.RULES, tool_schema.check))
register_kind(FileKind("trace", (".jsonl",), trace.RULES, trace.check))
