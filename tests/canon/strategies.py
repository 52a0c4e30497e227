"""Hypothesis strategies for chat requests with the drift real agents show: shuffled tools and keys, CRLF, NFD, code
fences."""

from __future__ import annotations

import random
from typing import Any

import orjson
from hypothesis import strategies as st

FENCES = ["\n```", "\n~~~", "\u1fef"]  # the Greek varia is a backtick in NFC
# Prose with the characters canonicalization touches: CR, LF, decomposed accents, trailing blanks, and code fences
# (``` and ~~~ opening at a line's start), inside which nothing is touched.
prose = st.lists(
    st.sampled_from([*"abcXYZ {}:,\"'`~\t\n\r", "\r\n", "e\u0301", "\u00e9", "\u212b", "\u00c5", "\u4e2d", *FENCES]),
    max_size=12,
).map("".join)
names = st.text(alphabet="abcdefghij_", min_size=1, max_size=8)
scalars = (
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False) | prose
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=5,
)


@st.composite
def schemas(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    """A JSON Schema using the keywords whose handling differs: sets, ordered arrays, prose, instance data."""
    schema: dict[str, Any] = {}
    kind = draw(
        st.sampled_from(["object", "string", "array", "integer", "union"] if depth < 2 else ["string", "integer"])
    )
    if kind == "object":
        props = draw(st.dictionaries(names, schemas(depth + 1), max_size=3))
        schema["type"] = "object"
        schema["properties"] = props
        if props:
            schema["required"] = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
    elif kind == "array":
        schema["type"] = "array"
        schema["items"] = draw(schemas(depth + 1))
        if draw(st.booleans()):
            schema["prefixItems"] = draw(st.lists(schemas(depth + 1), max_size=3))
    elif kind == "union":
        schema["anyOf"] = draw(st.lists(schemas(depth + 1), min_size=1, max_size=3))
    else:
        schema["type"] = draw(st.sampled_from([kind, [kind, "null"], ["null", kind]]))
        if draw(st.booleans()):
            schema["enum"] = draw(st.lists(prose | st.integers(-(2**53), 2**53), max_size=4))
    if draw(st.booleans()):
        schema["description"] = draw(prose)
    extra = draw(st.sampled_from(["", "default", "examples"]))
    if extra == "default":
        schema["default"] = draw(json_values)
    elif extra == "examples":
        schema["examples"] = draw(st.lists(json_values, max_size=2))
    return schema


@st.composite
def openai_tools(draw: st.DrawFn) -> list[dict[str, Any]]:
    tool_names = draw(st.lists(names, unique=True, max_size=4))
    return [
        {"type": "function", "function": {"name": name, "description": draw(prose), "parameters": draw(schemas())}}
        for name in tool_names
    ]


@st.composite
def tool_calls(draw: st.DrawFn) -> list[dict[str, Any]]:
    out = []
    for index in range(draw(st.integers(1, 2))):
        args = draw(st.dictionaries(names, json_values, max_size=3))
        text = orjson.dumps(args).decode() if draw(st.booleans()) else draw(st.sampled_from(['{"a": 1, "b"', "x"]))
        out.append({"id": f"call_{index}", "type": "function", "function": {"name": draw(names), "arguments": text}})
    return out


@st.composite
def messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": draw(prose)}]
    for _ in range(draw(st.integers(0, 3))):
        turn = draw(st.sampled_from(["user", "parts", "call", "tool"]))
        if turn == "user":
            out.append({"role": "user", "content": draw(prose)})
        elif turn == "parts":
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": draw(prose)},
                        {"type": "image_url", "image_url": {"url": draw(prose)}},
                    ],
                }
            )
        elif turn == "call":
            out.append({"role": "assistant", "content": None, "tool_calls": draw(tool_calls())})
        else:
            out.append({"role": "tool", "tool_call_id": "call_0", "content": draw(prose)})
    return out


@st.composite
def anthropic_requests(draw: st.DrawFn) -> dict[str, Any]:
    tools = [
        {"name": name, "description": draw(prose), "input_schema": draw(schemas())}
        for name in draw(st.lists(names, unique=True, max_size=4))
    ]
    if tools and draw(st.booleans()):
        tools[draw(st.integers(0, len(tools) - 1))]["cache_control"] = {"type": "ephemeral"}
    blocks: list[dict[str, Any]] = [{"type": "text", "text": draw(prose)}]
    if draw(st.booleans()):
        blocks.append({"type": "thinking", "thinking": draw(prose), "signature": "sig"})
    if draw(st.booleans()):
        blocks.append({"type": "tool_use", "id": "t1", "name": "x", "input": draw(st.dictionaries(names, json_values))})
    return {
        "model": "claude",
        "max_tokens": 100,
        "system": [{"type": "text", "text": draw(prose), "cache_control": {"type": "ephemeral"}}],
        "tools": tools,
        "messages": [
            {"role": "user", "content": draw(prose)},
            {"role": "assistant", "content": blocks},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": draw(prose)}]},
        ],
    }


@st.composite
def openai_requests(draw: st.DrawFn) -> dict[str, Any]:
    request: dict[str, Any] = {"model": draw(names), "messages": draw(messages())}
    tools = draw(openai_tools())
    if tools:
        request["tools"] = tools
        request["tool_choice"] = draw(st.sampled_from(["auto", {"type": "function", "function": {"name": "x"}}]))
    if draw(st.booleans()):
        request["response_format"] = {"type": "json_schema", "json_schema": {"name": "out", "schema": draw(schemas())}}
    if draw(st.booleans()):
        request["x_unknown"] = draw(json_values)
    return request


requests = openai_requests() | anthropic_requests()


def shuffled(value: Any, rng: random.Random) -> Any:
    """The same JSON value with every object's keys in a random order."""
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {key: shuffled(item, rng) for key, item in items}
    if isinstance(value, list):
        return [shuffled(item, rng) for item in value]
    return value
