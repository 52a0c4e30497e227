"""What the analysis knows of the standard library and the agent frameworks by name: the calls that read the
clock, draw randomness or make fresh ids, the keywords and names that are sinks, and how builtins treat order."""

from __future__ import annotations

import ast
import re

from agentcache.lint.python.values import CLOCK, FRESH_ID, RANDOM

CLOCK_CALLS = frozenset(
    {
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "time.time",
        "time.time_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
    }
)
#: These read the clock only when called with fewer arguments than this (else they format the time given).
CLOCK_UNLESS_GIVEN = {"time.strftime": 2, "time.ctime": 1, "time.asctime": 1, "time.localtime": 1, "time.gmtime": 1}
ID_CALLS = frozenset({"uuid.uuid1", "uuid.uuid4"})
#: Module functions that draw nothing: seeding, state, in-place shuffles (handled as a mutation).
NOT_DRAWS = frozenset({"random.seed", "random.getstate", "random.setstate", "random.shuffle", "secrets.compare_digest"})

SYSTEM_KEYWORDS = frozenset({"system", "system_prompt", "system_message", "instructions"})
AGENT_FACTORIES = frozenset({"create_agent", "create_react_agent"})
TOOLS_KEYWORDS = frozenset({"tools", "functions"})
SYSTEM_ROLES = frozenset({"system", "developer"})

#: Builtins whose result does not depend on the order of their iterable, or carries none of it.
ORDER_FREE = frozenset({"sorted", "min", "max", "sum", "any", "all"})
OPAQUE = frozenset({"len", "isinstance", "issubclass", "hasattr", "callable", "id", "type", "bool", "hash"})
#: Builtins that turn an iterable into a sequence in its iteration order.
SEQUENCERS = frozenset(
    {"list", "tuple", "enumerate", "iter", "reversed", "next", "map", "filter", "zip", "str", "repr"}
)
#: Text transformations that keep the layout AC105 reads (prompts are often dedented triple-quoted strings).
LAYOUT_KEEPING = frozenset({"textwrap.dedent", "inspect.cleandoc"})
LAYOUT_KEEPING_METHODS = frozenset({"strip", "lstrip", "rstrip"})
MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "extendleft", "setdefault"})
SET_ALGEBRA = frozenset({"union", "intersection", "difference", "symmetric_difference", "copy"})
#: Operators that make a set of two sets (``a | b``); on anything else they combine like any operator.
SET_OPERATORS = (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)

#: AC104: a dumped expression names tool schemas when one of its words is here and none is in _RESULT_WORDS
#: (``json.dumps(function_response)`` is a tool's result, sent once, not a schema re-sent every turn).
_SCHEMA_WORDS = frozenset({"tool", "tools", "schema", "schemas", "function", "functions", "parameters"})
_RESULT_WORDS = frozenset(
    {"result", "results", "output", "outputs", "response", "responses", "call", "calls", "args", "arguments"}
    | {"message", "messages", "return", "returns", "value", "values"}
)
SCHEMA_FIELDS = frozenset({"parameters", "input_schema"})
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def is_schema_name(name: str) -> bool:
    """Whether an identifier or key says tool schemas (``tool_specs``), not a tool's result (``tool_output``)."""
    words = {word.lower() for word in _WORD.findall(name)}
    return bool(words & _SCHEMA_WORDS) and not words & _RESULT_WORDS


def source_kind(name: str, given: int) -> str | None:
    """The origin kind of a call to the imported ``name`` with ``given`` arguments: a clock read, a random draw or
    a fresh id; None for any other call."""
    if name in CLOCK_CALLS or (name in CLOCK_UNLESS_GIVEN and given < CLOCK_UNLESS_GIVEN[name]):
        return CLOCK
    if name in ID_CALLS:
        return FRESH_ID
    if name == "os.urandom" or (name.startswith(("random.", "secrets.")) and name not in NOT_DRAWS):
        return None if name == "random.Random" and given else RANDOM  # seeded: the same draws on every run
    return None
