"""Python source rules (AC1xx): a small dataflow over one module, from values that differ between calls to the
parts of a request that form its cached prefix.

Sources are clock reads, random draws, fresh ids, the iteration order of a set (string hashes are salted per
process, so that order differs between runs) and the order concurrent tasks finish in. Sinks are system prompts
and tool lists: they come first in every request, so a byte that changes there makes the server recompute
everything after it.

The analysis is abstract interpretation over the AST, flow-sensitive within a function: each expression evaluates
to a :class:`~agentcache.lint.python.values.Value` (where it may come from, whether it is a set, its text when
constant, and the layout of a string being built), assignments bind names, branches merge, loop bodies run twice so
a value carried around the loop is seen, and a call to a function defined in the module is evaluated with its
arguments' values, so sources flow through helpers and sinks inside helpers see their callers' sources. What it
cannot see (other modules, attributes across methods) it treats as clean: the rules prefer a missed finding to a
false one.

The modules, from the bottom up: :mod:`~agentcache.lint.python.syntax` (reading the AST),
:mod:`~agentcache.lint.python.values` (the abstract domain), :mod:`~agentcache.lint.python.vocabulary` (the
library names it knows), :mod:`~agentcache.lint.python.rules` (rules and messages),
:mod:`~agentcache.lint.python.sinks`, :mod:`~agentcache.lint.python.statements` and
:mod:`~agentcache.lint.python.interpreter` (the analysis), :mod:`~agentcache.lint.python.unreached` (private
functions nothing calls), :mod:`~agentcache.lint.python.arrival` (collections filled as concurrent tasks finish),
:mod:`~agentcache.lint.python.check` (the checker).
"""

from __future__ import annotations

from agentcache.lint.python.check import PythonSession, check
from agentcache.lint.python.rules import RULES

__all__ = ["RULES", "PythonSession", "check"]
