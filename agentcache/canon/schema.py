"""Canonical tool definitions and JSON Schemas: keys sorted everywhere, set-like arrays sorted, prose normalized.

Schemas are the bulk of a request (often 20k+ tokens), so the work is split by speed: orjson serializes with
sorted keys and parses back in C, which yields a sorted private copy; Python then walks only the schema skeleton
to sort set-like arrays, and touches prose only when the bytes show it can change (non-ASCII, or a CR).

The walk knows which positions hold schemas and which hold instance data, because the same word means different
things in each: inside ``properties`` a key named ``required`` is a property name, and inside ``default`` an array
named ``required`` is data. Only keywords at schema positions are interpreted.
"""

from __future__ import annotations

from typing import Any

import orjson

from agentcache.canon.jsonvalue import Invalid
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

        The bytes often show that the walk has nothing to do: no prose that can change (all ASCII, no CR), every
        set-like array already sorted, and fewer containers than the depth limit. Then the parsed copy is the
        answer, and a tool costs two C calls.
        """
        prose = not raw.isascii() or b"\\r" in raw or self.policy.strip_trailing_whitespace
        value = orjson.loads(raw)
        if prose or not _sets_sorted(raw) or raw.count(b"{") + raw.count(b"[") >= room:
            value = _Walk(self.policy, prose).definition(value, room)
        return value


def _sets_sorted(raw: bytes) -> bool:
    """Whether every ``"required":[...]`` and ``"type":[...]`` array in compact JSON is already sorted, and no
    ``dependentRequired``/``dependencies`` is present. False is only a missed shortcut: the walk then decides,
    knowing which of them sit at schema positions."""
    if b'"dependentRequired":' in raw or b'"dependencies":' in raw:
        return False
    for key in (b'"required":[', b'"type":['):
        position = raw.find(key)
        while position >= 0:
            start = position + len(key)
            end = raw.find(b"]", start)
            items = raw[start:end]
            if b"\\" in items or b"[" in items or b"{" in items:
                return False
            quoted = items.split(b",") if items else []
            if not all(len(item) > 1 and item[:1] == item[-1:] == b'"' for item in quoted):
                return False  # not an array of plain strings (or a string held a comma)
            strings = [item[1:-1] for item in quoted]  # UTF-8 bytes sort as their code points
            if strings != sorted(strings):
                return False
            position = raw.find(key, end)
    return True


class _Walk:
    """One in-place pass over a private sorted copy."""

    def __init__(self, policy: CanonicalPolicy, prose: bool) -> None:
        self.policy = policy
        self.prose = prose
        self.sort = policy.sort_unordered_arrays

    def definition(self, node: Any, room: int) -> Any:
        if type(node) is not dict:
            return self.data(node, room)
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
                self.data(value, room - 1)
        return node

    def schema(self, node: Any, room: int) -> None:
        """A schema position: an object of keywords, or a boolean schema. Branches go by value type first:
        most values are strings and numbers, which need nothing unless they are prose."""
        if type(node) is not dict:
            self.data(node, room)
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
                    self.data(value, room - 1)
            elif kind is list:
                if key in SCHEMA_ARRAY:
                    if room <= 1:
                        raise Invalid
                    for item in value:
                        self.schema(item, room - 2)
                elif key in UNORDERED:
                    self.string_set(value, room - 1)
                else:
                    self.data(value, room - 1)

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
        self.data(value, room)
        if self.sort and all(type(item) is str for item in value):
            value.sort()

    def data(self, value: Any, room: int) -> Any:
        """Instance data (``default``, ``enum``, ``examples``, unknown keywords): keys are already sorted; only
        the nesting depth is checked."""
        kind = type(value)
        if kind is dict or kind is list:
            if room <= 0:
                raise Invalid
            for item in value.values() if kind is dict else value:
                if type(item) is dict or type(item) is list:
                    self.data(item, room - 1)
        return value
