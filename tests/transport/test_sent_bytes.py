"""What ``begin`` sends is the canonical body's bytes, however they are come by: a re-sent tool list's kept bytes and
parse, its memo entry's kept JSON, interleaved sessions; and the request it sends is the agent's, with only the
body and its length changed."""

from __future__ import annotations

import random
from typing import Any

import httpx
import orjson
import pytest

from agentcache.canon import CanonicalPolicy, canonicalize
from agentcache.transport import CacheMiddleware

URL = "http://server/v1/chat/completions"


def tools(names: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": name,
                "description": f"Does {name}.",
                "parameters": {"type": "object", "required": ["b", "a"], "properties": {"b": {}, "a": {}}},
            },
        }
        for name in names
    ]


TOOL_LISTS = [tools(["read", "write"]), tools(["write", "read", "list"]), tools(["search"])]


def turn(rng: random.Random, index: int) -> list[dict[str, Any]]:
    """One step of a session's history: a user message, a tool call with ``"content": null``, its result."""
    call = {"id": f"c{index}", "type": "function", "function": {"name": "read", "arguments": '{"b": 1, "a": 2}'}}
    return [
        {"role": "user", "content": f"step {index}: {rng.random()}"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{index}", "content": "done\r\n"},
    ]


def request(body: dict[str, Any], session: str) -> httpx.Request:
    return httpx.Client().build_request("POST", URL, json=body, headers={"x-agentcache-session": session})


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("policy", [CanonicalPolicy(), CanonicalPolicy(sort_tools=False, normalize_whitespace=True)])
@pytest.mark.parametrize("ask_output_ids", [False, True])
def test_interleaved_sessions_get_the_canonical_body_s_bytes(
    seed: int, policy: CanonicalPolicy, ask_output_ids: bool
) -> None:
    rng = random.Random(seed)
    middleware = CacheMiddleware(server="sglang", telemetry=False, policy=policy, ask_output_ids=ask_output_ids)
    histories: dict[str, list[dict[str, Any]]] = {
        f"s{i}": [{"role": "system", "content": "Be kind."}] for i in range(3)
    }
    for step in range(24):
        session = rng.choice(sorted(histories))
        histories[session] += turn(rng, step)
        body = {"model": "m", "tools": rng.choice(TOOL_LISTS), "messages": histories[session]}
        if rng.random() < 0.2:
            del body["tools"]
        sent = middleware.begin(request(body, session)).request.content
        expected = canonicalize(orjson.loads(orjson.dumps(body)), policy)
        if ask_output_ids:
            expected = {**expected, **middleware.profile.output_ids_request}
        assert sent == orjson.dumps(expected, option=orjson.OPT_SORT_KEYS)


def test_the_request_sent_is_the_agent_s_with_the_new_body_and_its_length() -> None:
    received = httpx.Client().build_request(
        "POST",
        URL,
        json={"model": "m", "tools": TOOL_LISTS[1], "messages": [{"role": "user", "content": "hi"}]},
        headers={"x-agentcache-session": "s", "x-extra": "1"},
        extensions={"timeout": {"connect": 1.0}},
    )
    sent = CacheMiddleware(server="sglang", telemetry=False).begin(received).request
    assert sent is not received and sent.content != received.content
    length = str(len(sent.content)).encode()
    expected = [(key, length if key.lower() == b"content-length" else value) for key, value in received.headers.raw]
    assert sent.headers.raw == [(b"content-length" if k.lower() == b"content-length" else k, v) for k, v in expected]
    assert (sent.method, sent.url, sent.extensions) == (received.method, received.url, received.extensions)
    assert sent.extensions is received.extensions
    assert b"".join(sent.stream) == sent.content  # type: ignore[arg-type]
