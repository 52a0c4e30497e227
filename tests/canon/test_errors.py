"""Bad input raises a typed error naming the JSON path and what to do; never a bare TypeError or a hang."""

from __future__ import annotations

import datetime
import math
import uuid
from typing import Any

import pytest

from agentcache import CanonicalPolicy, canonical_json, canonicalize
from agentcache.errors import (
    BodyTooLargeError,
    CycleError,
    InvalidValueError,
    NestingTooDeepError,
    NotAMappingError,
    PolicyError,
    RequestError,
    RequestShapeError,
)


def with_message_field(value: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "hi", "extra": value}]}


def with_schema_default(value: Any) -> dict[str, Any]:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "default": value}}}
    return {"model": "m", "messages": [], "tools": [tool]}


@pytest.mark.parametrize("body", [[], "text", None, 3])
def test_not_a_mapping(body: Any) -> None:
    with pytest.raises(NotAMappingError, match=r"^\$: the request is .*, not a JSON object; pass the parsed body"):
        canonicalize(body)


BAD_VALUES = [
    ({1, 2}, "a set is not JSON; send a sorted list"),
    (b"x", "a bytes is not JSON; decode it"),
    (datetime.datetime(2026, 11, 30), "a datetime is not JSON; format it"),
    (math.nan, "nan is not a JSON number"),
    (math.inf, "inf is not a JSON number"),
    (-math.inf, "-inf is not a JSON number"),
    ("ok \ud800", "lone surrogate"),
    (2**70, "integer outside the 64-bit range"),
    ({1: "x"}, "object key 1 is a int"),
    (object(), "a object is not JSON"),
]


@pytest.mark.parametrize(("value", "message"), BAD_VALUES)
def test_invalid_values_in_messages(value: Any, message: str) -> None:
    with pytest.raises(InvalidValueError, match=r"^\$\.messages\[0\]\.extra") as info:
        canonicalize(with_message_field(value))
    assert message in str(info.value)


@pytest.mark.parametrize(("value", "message"), BAD_VALUES)
def test_invalid_values_in_tool_schemas(value: Any, message: str) -> None:
    with pytest.raises(InvalidValueError, match=r"^\$\.tools\[0\]\.function\.parameters\.default") as info:
        canonicalize(with_schema_default(value))
    assert message in str(info.value)


def test_nan_is_found_even_where_an_equal_bytes_null_was_memoized() -> None:
    canonicalize(with_schema_default(None))
    canonicalize(with_message_field(None))
    with pytest.raises(InvalidValueError, match="nan is not a JSON number"):
        canonicalize(with_schema_default(math.nan))
    with pytest.raises(InvalidValueError, match="nan is not a JSON number"):
        canonicalize(with_message_field(math.nan))


def test_uuid_and_enum_serialize_as_their_json_form() -> None:
    import enum

    class Color(enum.Enum):
        RED = "red"

    ident = uuid.UUID(int=7)
    out = canonicalize(with_message_field({"id": ident, "color": Color.RED}))
    assert out["messages"][0]["extra"] == {"color": "red", "id": str(ident)}


def test_cycles() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(CycleError, match=r"^\$\.messages\[0\]\.extra\.self: this container contains itself"):
        canonicalize(with_message_field(loop))
    items: list[Any] = []
    items.append(items)
    with pytest.raises(CycleError, match=r"^\$\.tools\[0\]\.function\.parameters\.default\[0\]"):
        canonicalize(with_schema_default(items))


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("make", [with_message_field, with_schema_default])
def test_nesting_deeper_than_the_limit(make: Any) -> None:
    with pytest.raises(NestingTooDeepError, match="nesting deeper than 128 levels; flatten"):
        canonicalize(make(nested(200)))
    with pytest.raises(NestingTooDeepError):
        canonicalize(make(nested(100_000)))
    canonicalize(make(nested(100)))


def test_nesting_limit_follows_the_policy() -> None:
    with pytest.raises(NestingTooDeepError, match="deeper than 8 levels"):
        canonicalize(with_message_field(nested(8)), CanonicalPolicy(max_depth=8))
    with pytest.raises(PolicyError, match="max_depth must be between 1 and 250"):
        CanonicalPolicy(max_depth=1000)


def test_fifty_megabyte_body_is_refused() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * (50 * 1024 * 1024)}]}
    with pytest.raises(BodyTooLargeError, match=r"^\$: the body is 52,428,8\d\d bytes of JSON, over the limit"):
        canonicalize(body)


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"messages": "hi"}, r"\$\.messages: expected an array of messages, got a string"),
        ({"messages": ["hi"]}, r"\$\.messages\[0\]: a message must be an object"),
        ({"messages": [], "tools": {"a": 1}}, r"\$\.tools: expected an array of tools, got an object"),
        ({"messages": [], "tools": [3]}, r"\$\.tools\[0\]: a tool must be an object, got a number"),
    ],
)
def test_wrong_shapes(body: dict[str, Any], path: str) -> None:
    with pytest.raises(RequestShapeError, match=f"^{path}"):
        canonicalize(body)


def test_every_error_is_a_value_error_and_a_request_error() -> None:
    with pytest.raises(ValueError):
        canonicalize(with_message_field({1, 2}))
    with pytest.raises(RequestError):
        canonicalize(with_message_field({1, 2}))


def test_canonical_json_errors_name_the_path() -> None:
    with pytest.raises(InvalidValueError, match=r"^\$\.a\[1\]: nan is not a JSON number"):
        canonical_json({"a": [1, math.nan]})
    with pytest.raises(InvalidValueError, match=r'^\$\["key with space"\]: a set is not JSON'):
        canonical_json({"key with space": {1}})
    assert canonical_json({"b": [1, None], "a": "\u00e9"}) == '{"a":"\u00e9","b":[1,null]}'.encode()


def test_types_orjson_refuses_are_refused_with_their_path() -> None:
    import collections

    class Precise(float):
        pass

    class Key(str):
        pass

    point = collections.namedtuple("point", "x y")
    for value, message in [
        (point(1, 2), "a point is not JSON"),
        (Precise(1.5), "a Precise is not JSON"),
        ({Key("k"): 1}, "object key 'k' is a Key"),
    ]:
        with pytest.raises(InvalidValueError, match=r"^\$\.messages\[0\]\.extra") as info:
            canonicalize(with_message_field(value))
        assert message in str(info.value)


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"messages": [{"role": "user", "content": [math.inf]}]}, r"\$\.messages\[0\]\.content\[0\]"),
        ({"messages": [], "system": ["ok", math.nan]}, r"\$\.system\[1\]"),
    ],
)
def test_content_array_items_that_are_not_blocks_are_validated(body: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidValueError, match=f"^{path}: .* is not a JSON number"):
        canonicalize(body)


def test_content_array_items_that_are_not_blocks_count_for_depth() -> None:
    with pytest.raises(NestingTooDeepError, match=r"^\$\.system\[0\]"):
        canonicalize({"messages": [], "system": [nested(10)]}, CanonicalPolicy(max_depth=8))


def test_a_refused_nan_leaves_no_entry_for_an_equal_bytes_null() -> None:
    with pytest.raises(InvalidValueError):
        canonicalize({"messages": [{"role": "user", "content": [math.inf]}]})
    out = canonicalize({"messages": [{"role": "user", "content": [None]}]})
    assert out["messages"][0]["content"] == [None]


def test_nan_in_place_of_a_null_the_last_request_had_is_found() -> None:
    """The messages the last request began with are reused by their bytes; a NaN there has the bytes of null."""
    messages: list[Any] = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None, "tool_calls": []},
        {"role": "user", "content": "more"},
    ]
    canonicalize({"model": "m", "messages": messages})
    messages[1]["content"] = math.nan
    with pytest.raises(InvalidValueError, match=r"^\$\.messages\[1\]\.content: nan is not a JSON number"):
        canonicalize({"model": "m", "messages": [*messages, {"role": "user", "content": "again"}]})
