"""Canonical tool definitions and JSON Schemas: keys sorted everywhere, set-like arrays sorted, prose normalized.

Schemas are the bulk of a request (often 20k+ tokens), so the work is split by speed: orjson serializes with
sorted keys and parses back in C, which yields a sorted private copy; Python then walks only the schema skeleton
to sort set-like arrays and check the depth, and touches prose only when the bytes show it can change (non-ASCII,
or a CR).

The walk knows which positions hold schemas and which hold instance data, because the same word means different
things in each: inside ``properties`` a key named ``required`` is a property name, and inside ``default`` an array
named ``required`` is data. Only keywords at schema positions are interpreted.
"""

from __future__ import annotations

from typing import Any

import orjson

from agentcache.canon.jsonvalue import Invalid, check_depth
from agentcache.canon.policy import CanonicalPolicy
from agentcache.canon.text import normalize_prose

#: Keywords whose value is one schema.
SUBSCHEMA = frozenset(
    {
        "additionalItems",
        "additionalProperties",
        "contains",
        "contentSchema",
        "else",
        "if",
        "items",
        "not",
        "propertyNames",
        "then",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
#: Keywords whose value maps names to schemas.
SCHEMA_MAP = frozenset({"$defs", "definitions", "dependentSchemas", "patternProperties", "properties"})
#: Keywords whose value is an ordered array of schemas: order is meaning (first match, tuple position).
#: ``items`` as an array is draft-04..2019 tuple validation, positional too.
SCHEMA_ARRAY = frozenset({"allOf", "anyOf", "items", "oneOf", "prefixItems"})
#: Keywords holding prose for the model to read.
PROSE = frozenset({"$comment", "description", "title"})
#: Arrays with set semantics, whose order validation ignores (JSON Schema 2020-12 validation: 6.5.3
#: ``required``, 6.1.1 ``type``; 6.5.4 ``dependentRequired`` values; draft-07 ``dependencies`` in array form).
UNORDERED = frozenset({"required", "type"})
#: Fields of a tool, of its ``function``, or of ``response_format`` that hold a schema, or a nested definition.
SCHEMA_FIELDS = frozenset({"input_schema", "parameters", "schema"})
DEFINITION_FIELDS = frozenset({"function", "json_schema"})


class SchemaCanonicalizer:
    """Canonicalizes tool definitions and schemas under one policy."""

    def __init__(self, policy: CanonicalPolicy) -> None:
        self.policy = policy

    def parse(self, raw: bytes, room: int) -> Any:
        """Canonicalize the tool (or ``response_format``) whose compact JSON with sorted keys is ``raw``.

        The walk always runs: scanning the bytes to prove it had nothing to do took twice as long as the walk.
        Prose is skipped when the bytes show it cannot change: all ASCII and no escaped CR. The escape is looked
        for only after a backslash, which memchr finds at once, because a two-byte search is slow on 100+ kB.
        """
        policy = self.policy
        edits_blanks = policy.strip_trailing_whitespace or policy.normalize_whitespace
        prose = edits_blanks or not raw.isascii() or (b"\\" in raw and b"\\r" in raw)
        return _Walk(policy, prose).definition(orjson.loads(raw), room)


class _Walk:
    """One in-place pass over a private sorted copy. Instance data (``default``, ``enum``, ``examples``, unknown
    keywords) already has its keys sorted, so only its depth is checked."""

    def __init__(self, policy: CanonicalPolicy, prose: bool) -> None:
        self.policy = policy
        self.prose = prose
        self.sort = policy.sort_unordered_arrays

    def definition(self, node: Any, room: int) -> Any:
        if type(node) is not dict:
            check_depth(node, room)
            return node
        if room <= 0:
            raise Invalid
        for key, value in node.items():
            if key in SCHEMA_FIELDS:
                self.schema(value, room - 1)
            elif key in DEFINITION_FIELDS:
                self.definition(value, room - 1)
            elif key == "description" and type(value) is str:
                if self.prose:
                    node[key] = normalize_prose(value, self.policy)
            else:
                check_depth(value, room - 1)
        return node

    def schema(self, node: Any, room: int) -> None:
        """A schema position: an object of keywords, or a boolean schema. Branches go by value type first:
        most values are strings and numbers, which need nothing unless they are prose."""
        if type(node) is not dict:
            check_depth(node, room)
            return
        if room <= 0:
            raise Invalid
        for key, value in node.items():
            kind = type(value)
            if kind is str:
                if self.prose and key in PROSE:
                    node[key] = normalize_prose(value, self.policy)
            elif kind is dict:
                if key in SCHEMA_MAP:
                    self.schema_map(value, room - 1, False)
                elif key == "dependencies" or key == "dependentRequired":
                    self.schema_map(value, room - 1, True)
                elif key in SUBSCHEMA:
                    self.schema(value, room - 1)
                else:
                    check_depth(value, room - 1)
            elif kind is list:
                if key in SCHEMA_ARRAY:
                    if room <= 1:
                        raise Invalid
                    for item in value:
                        self.schema(item, room - 2)
                elif key in UNORDERED:
                    self.string_set(value, room - 1)
                else:
                    check_depth(value, room - 1)

    def schema_map(self, node: dict[str, Any], room: int, sets: bool) -> None:
        """Names mapped to schemas; with ``sets``, an array value is a set of property names."""
        if room <= 0:
            raise Invalid
        for value in node.values():
            if sets and type(value) is list:
                self.string_set(value, room - 1)
            else:
                self.schema(value, room - 1)

    def string_set(self, value: list[Any], room: int) -> None:
        """Sort, in place, an array of strings whose order carries no meaning; anything else is data."""
        check_depth(value, room)
        if self.sort and all(type(item) is str for item in value):
            value.sort()
