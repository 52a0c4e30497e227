"""A re-sent tool list is parsed once, and a body parses to what orjson.loads gives whatever it holds."""

from __future__ import annotations

import json
import random
from typing import Any

import orjson
import pytest

from agentcache.transport.bodies import ToolListParses

TOOLS = [
    {"type": "function", "function": {"name": f"tool_{i}", "parameters": {"type": "object", "properties": {}}}}
    for i in range(3)
]


def body(messages: list[Any], **fields: Any) -> bytes:
    """A body as httpx writes ``json=``: compact, fields in the order given."""
    value = {"model": "m", **fields, "messages": messages}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_a_re_sent_tool_list_is_the_kept_parse_and_the_body_parses_as_orjson_parses_it() -> None:
    parses = ToolListParses()
    first, checked, tools_json = parses.loads(body([user("a")], tools=TOOLS))
    assert not checked and first == orjson.loads(body([user("a")], tools=TOOLS))
    assert tools_json == orjson.dumps(TOOLS)
    raw = body([user("a"), {"role": "assistant", "content": "b"}, user("c")], tools=TOOLS)
    second, checked, kept_json = parses.loads(raw)
    assert checked
    assert second == orjson.loads(raw)
    assert second["tools"] is first["tools"]
    assert kept_json == orjson.dumps(TOOLS)


def test_the_tool_list_s_bytes_elsewhere_than_the_top_level_tools_are_not_taken_for_it() -> None:
    parses = ToolListParses()
    parses.loads(body([user("a")], tools=TOOLS))
    other = [{**TOOLS[0], "function": {**TOOLS[0]["function"], "name": "other"}}]
    nested = body([{"role": "user", "content": "x", "tools": TOOLS}], tools=other)
    value, checked, tools_json = parses.loads(nested)
    assert value == orjson.loads(nested) and value["tools"] == other and not checked
    assert tools_json == orjson.dumps(other)


def test_a_body_that_holds_the_marker_or_repeats_tools_is_parsed_whole() -> None:
    parses = ToolListParses()
    parses.loads(body([user("a")], tools=TOOLS))
    marked = body([user("\x00agentcache-tool-list")], tools=TOOLS)
    assert parses.loads(marked) == (orjson.loads(marked), False, orjson.dumps(TOOLS))
    tools_json = json.dumps(TOOLS, separators=(",", ":")).encode()
    repeated = b'{"tools":' + tools_json + b',"messages":[],"tools":' + tools_json + b"}"
    value, checked, _ = parses.loads(repeated)
    assert not checked  # the caller's check finds the repeated key and names it
    assert value == orjson.loads(repeated)


def test_a_body_that_spells_the_marker_otherwise_is_parsed_whole() -> None:
    """The marker written with another escape, as the top-level tools, and the kept list's bytes nested: the nested
    copy is not taken for the top-level tools."""
    parses = ToolListParses()
    parses.loads(body([user("a")], tools=TOOLS))
    tools_json = json.dumps(TOOLS, separators=(",", ":")).encode()
    raw = rb'{"tools":"\u0000agentcache\u002dtool-list","messages":[{"role":"user","tools":' + tools_json + b"}]}"
    value, checked, _ = parses.loads(raw)
    assert value == orjson.loads(raw) and value["tools"] == "\x00agentcache-tool-list" and not checked


@pytest.mark.parametrize("seed", range(40))
def test_any_body_parses_to_what_orjson_loads_gives(seed: int) -> None:
    """Bodies that re-send, reorder, re-space and edit a few tool lists, with nested copies and lookalike
    strings: the value is always orjson's, and a checked one is exactly the body."""
    rng = random.Random(seed)
    parses = ToolListParses(keep=2)
    lists = [TOOLS, TOOLS[::-1], TOOLS[:1], [{"type": "function", "function": {"name": "n", "x": [1, 2.5, None]}}]]
    reused = 0
    for _ in range(30):
        tools = rng.choice(lists)
        messages = [user(rng.choice(["hi", json.dumps(tools), '"tools":' + json.dumps(tools)]))]
        if rng.random() < 0.2:
            messages.append({"role": "user", "content": "", "tools": rng.choice(lists)})
        fields: dict[str, Any] = {"tools": tools} if rng.random() < 0.9 else {}
        raw = body(messages, **fields)
        if rng.random() < 0.2:
            raw = json.dumps(orjson.loads(raw)).encode()  # spaced, as json.dumps writes by default
        value, checked, tools_json = parses.loads(raw)
        assert value == orjson.loads(raw)
        assert tools_json is None or tools_json == orjson.dumps(value["tools"])
        if checked:
            assert orjson.dumps(value) == raw
            reused += 1
    assert reused  # the kept lists were used, not only bypassed
