"""Syntax newer than the running interpreter's parser, rewritten into what it reads (issue 15: parse any Python).

The analysis reads :mod:`ast` trees, and :func:`ast.parse` knows only its interpreter's grammar. A module of newer
Python is parsed by LibCST with the newest grammar (``agentcache[lint]``) and written back without what the older
parser refuses, none of which a value the rules follow goes through:

- type parameters (``def first[T](items: list[T])``, ``class Box[T]:``) are blanked out;
- a type alias (``type Tools = list[Tool]``) is bound as a name (``Tools = list[Tool]``);
- a string inside an f-string's replacement field quoted like the f-string (``f"{d["key"]}"``) takes the other
  quote, and one that holds a backslash (``f"{'\\n'.join(lines)}"``) becomes a name as wide (``____``): its text
  is a separator's.

Every line stays where it was, and what follows a rewrite on its line keeps its column, so findings point into the
file as written. What cannot be rewritten this way (a comment inside a replacement field, an f-string nested in
another with the same quotes, a rewrite that would move a line) leaves the module to the note that it needs a newer
parser.
"""

from __future__ import annotations

from typing import TypeVar

import libcst as cst

__all__ = ["older_text"]

_Generic = TypeVar("_Generic", cst.FunctionDef, cst.ClassDef)


def _untyped(node: _Generic) -> _Generic:
    """A function or class without its type parameters (``def first[T](...)``: ``def first   (...)``), blanks in
    their place so that what follows on the line keeps its column."""
    if node.type_parameters is None:
        return node
    code = cst.Module(body=[]).code_for_node
    blank = " " * len(code(node.type_parameters) + code(node.whitespace_after_type_parameters))
    return node.with_changes(
        type_parameters=None,
        whitespace_after_type_parameters=cst.SimpleWhitespace(""),
        whitespace_after_name=cst.SimpleWhitespace(code(node.whitespace_after_name) + blank),
    )


def older_text(text: str, grammar: str) -> str | None:
    """``text`` rewritten for the running interpreter's parser; ``text`` as it is when the rewrite would move a line
    (a string over several lines in a replacement field, type parameters written over several lines); None when
    LibCST does not parse it with ``grammar`` (a syntax error in any Python)."""
    try:
        module = cst.parse_module(text, config=cst.PartialParserConfig(python_version=grammar))
    except Exception:  # LibCST raises its ParserSyntaxError, and others on text it cannot tokenize
        return None
    try:
        older = module.visit(_Older()).code
    except cst.CSTValidationError:  # a rewrite LibCST refuses to write (none is known): the module stays unchecked
        return text
    return older if len(older.splitlines()) == len(text.splitlines()) else text


class _Older(cst.CSTTransformer):
    """The rewrites of the module docstring, in one walk: f-strings being visited are stacked by their quotes."""

    def __init__(self) -> None:
        super().__init__()
        self.quotes: list[str] = []

    def leave_FunctionDef(self, original_node: cst.FunctionDef, updated_node: cst.FunctionDef) -> cst.FunctionDef:
        return _untyped(updated_node)

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef) -> cst.ClassDef:
        return _untyped(updated_node)

    def leave_TypeAlias(self, original: cst.TypeAlias, updated: cst.TypeAlias) -> cst.Assign:
        return cst.Assign(targets=[cst.AssignTarget(updated.name)], value=updated.value, semicolon=updated.semicolon)

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self.quotes.append(node.end[0])

    def leave_FormattedString(self, original: cst.FormattedString, updated: cst.FormattedString) -> cst.FormattedString:
        self.quotes.pop()
        return updated

    def leave_SimpleString(self, original: cst.SimpleString, updated: cst.SimpleString) -> cst.BaseExpression:
        if not self.quotes:
            return updated
        quote, prefix = updated.quote, updated.prefix
        body = updated.value[len(prefix) + len(quote) : -len(quote)]
        other = "'" if quote[0] == '"' else '"'
        if "\\" in updated.value or (quote[0] in self.quotes and (other in body or other in self.quotes)):
            return cst.Name("_" * len(updated.value))  # a name as wide: its text, a separator's, is not followed
        if quote[0] not in self.quotes:
            return updated
        swapped = quote.replace(quote[0], other)
        return updated.with_changes(value=f"{prefix}{swapped}{body}{swapped}")
