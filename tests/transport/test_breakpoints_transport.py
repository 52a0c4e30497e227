"""The transport's breakpoint placement (``breakpoints=True``): never over the API's 4 with the caller's own markers
counted, every placed marker on the wire and on the turn, and a body the placement cannot handle sent exactly as
the canonicalizer made it, with the reason on the turn.

Anthropic bodies are built by the official ``anthropic`` SDK. No hosted endpoint is reachable from the test
machines, so the hosted answers are Messages responses written from the documented schema; the same request path
also runs against llama-server's Anthropic Messages and chat completions endpoints.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentcache.breakpoints import Shape, markers
from agentcache.cache.rules import MAX_BREAKPOINTS
from agentcache.httpx import CacheAwareTransport, Turn
from agentcache.predict.prompt import render
from agentcache.transport import CacheMiddleware
from agentcache.transport.call import Call, TurnListener
from tests.conftest import EngineInfo

anthropic = pytest.importorskip("anthropic", reason="the official Anthropic SDK is in the test extras")
openai = pytest.importorskip("openai", reason="the official OpenAI SDK is in the test extras")

MODEL = "claude-opus-4-8"
SYSTEM = "You are a careful coding agent. " + " ".join(
    f"Rule {i}: read the file before editing it." for i in range(200)
)
TOOLS = [
    {"name": f"tool_{i}", "description": f"Tool {i} of the repository.", "input_schema": {"type": "object"}}
    for i in range(3)
]


# Anthropic Messages API, https://platform.claude.com/docs/en/api/messages (response object: id, type, role,
# model, content, stop_reason, usage with cache_creation_input_tokens and cache_read_input_tokens).
def anthropic_message(request: httpx.Request) -> httpx.Response:
    body = {
        "id": f"msg_{len(request.content)}",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 20,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 2,
        },
    }
    return httpx.Response(200, json=body)


class Sent(TurnListener):
    """Each call as it went out: the agent's body and the body sent."""

    def __init__(self) -> None:
        self.calls: list[Call] = []

    def on_begin(self, call: Call) -> None:
        self.calls.append(call)


def marked(request: dict[str, Any]) -> set[str]:
    """JSON paths of the prompt's segments that end a marked block."""
    return {segment.path for segment in render(request) if segment.breakpoint}


def check_turns(sent: Sent, turns: list[Turn]) -> None:
    """Each turn's account matches its wire body: the caller's markers kept and counted, the placed ones on the
    marked segments, the total within the API's budget, every decision explained."""
    assert len(sent.calls) == len(turns)
    for call, turn in zip(sent.calls, turns, strict=True):
        original, body = call.original, call.sent
        assert original is not None and body is not None and turn.breakpoints is not None
        account = turn.breakpoints
        assert account.refused is None
        assert account.existing == markers(original)
        assert markers(body) == markers(original) + len(account.placed) <= MAX_BREAKPOINTS
        assert {p.path for p in account.placed} <= marked(body)
        assert marked(original) <= marked(body)
        assert all(p.reason for p in account.placed) and all(why for _, why in account.skipped)


def hosted_client(transport: httpx.BaseTransport) -> Any:
    return anthropic.Anthropic(
        api_key="sk-test", base_url="http://hosted.invalid", http_client=httpx.Client(transport=transport)
    )


def conversation(turn: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for step in range(turn):
        messages.append({"role": "user", "content": f"Step {step}: look at module {step}."})
        if step < turn - 1:
            messages.append({"role": "assistant", "content": f"Module {step} looks fine."})
    return messages


def test_the_sdk_request_gets_breakpoints_within_the_budget_counting_the_callers() -> None:
    """Turn by turn the caller marks 0 to 4 blocks itself (the 4th the top-level automatic marker): agentcache
    adds only what the budget leaves, and nothing once the caller used all 4."""
    sent = Sent()
    transport = CacheAwareTransport(
        httpx.MockTransport(anthropic_message), server="anthropic", breakpoints=True, listeners=[sent], telemetry=False
    )
    client = hosted_client(transport)
    for turn, own in enumerate(range(MAX_BREAKPOINTS + 1), start=1):
        tools = [dict(tool) for tool in TOOLS]
        for tool in tools[:own]:
            tool["cache_control"] = {"type": "ephemeral"}
        extra = {"cache_control": {"type": "ephemeral"}} if own > len(tools) else {}
        client.messages.create(
            model=MODEL, max_tokens=8, system=SYSTEM, tools=tools, messages=conversation(turn), extra_body=extra
        )
    turns = transport.ledger.turns()
    check_turns(sent, turns)
    assert [t.breakpoints.existing for t in turns if t.breakpoints] == list(range(MAX_BREAKPOINTS + 1))
    assert turns[0].breakpoints is not None and {p.path for p in turns[0].breakpoints.placed} == {
        "$.system[0]",
        "$.messages[0]",
    }
    full = turns[-1].breakpoints
    assert full is not None and full.placed == [] and full.skipped
    reasons = [why for _, why in full.skipped]
    assert any("no breakpoint left" in why for why in reasons)
    assert all("no breakpoint left" in why or "already marked by the caller" in why for why in reasons)


def test_a_turn_over_the_lookback_marks_the_previous_end_from_the_session_kept() -> None:
    """A turn adding more lookback positions than Anthropic looks back over (12 calls, each after a remark that
    breaks the run of calls) gets the previous turn's end marked, which the transport knows from the session's
    previous request (kept as a small shape, not as the body)."""
    sent = Sent()
    transport = CacheAwareTransport(
        httpx.MockTransport(anthropic_message), server="anthropic", breakpoints=True, listeners=[sent], telemetry=False
    )
    client = hosted_client(transport)
    first = [{"role": "user", "content": "Read every module."}]
    calls = [
        block
        for i in range(12)
        for block in (
            {"type": "text", "text": f"Module {i} next."},
            {"type": "tool_use", "id": f"t{i}", "name": "tool_0", "input": {"n": i}},
        )
    ]
    results = [{"type": "tool_result", "tool_use_id": f"t{i}", "content": f"module {i}: ok"} for i in range(12)]
    second = [*first, {"role": "assistant", "content": calls}, {"role": "user", "content": results}]
    for messages in (first, second):
        client.messages.create(model=MODEL, max_tokens=8, system=SYSTEM, tools=TOOLS, messages=messages)
    turns = transport.ledger.turns()
    check_turns(sent, turns)
    assert turns[1].breakpoints is not None
    assert "$.messages[0]" in {p.path for p in turns[1].breakpoints.placed}
    assert isinstance(transport.middleware._shapes["default"], Shape)  # digests and counts, not the body


def test_a_body_placement_cannot_handle_goes_out_as_the_canonicalizer_made_it() -> None:
    """A system prompt given as a list of bare strings is canonicalized, but there is no block to mark: the body
    sent is byte for byte the one sent without placement, and the turn says why."""
    body = {"model": MODEL, "max_tokens": 8, "system": [SYSTEM], "messages": conversation(1)}
    sent: dict[bool, bytes] = {}
    for asked in (False, True):
        middleware = CacheMiddleware(server="anthropic", breakpoints=asked, telemetry=False)
        call = middleware.begin(httpx.Request("POST", "http://hosted.invalid/v1/messages", json=body))
        middleware.wrap(call, anthropic_message(call.request))
        sent[asked] = call.request.content
        turn = middleware.ledger.turns()[0]
        assert turn.canonicalized and turn.passthrough is None
        if asked:
            assert turn.breakpoints is not None and turn.breakpoints.placed == []
            assert turn.breakpoints.refused is not None and turn.breakpoints.refused.startswith("placement failed")
        else:
            assert turn.breakpoints is None
    assert sent[True] == sent[False]


def test_the_request_path_runs_against_a_real_engine(llama_server: EngineInfo) -> None:
    """The Anthropic SDK's Messages requests with agentcache's markers go to llama-server's Messages endpoint, and
    the OpenAI SDK's chat requests to its chat completions endpoint: the engine answers each, the markers and their
    account are what the turn says. A chat model with no OpenAI caching rule (the engine's own) gets no markers,
    and its body is the one sent without placement."""
    sent = Sent()
    transport = CacheAwareTransport(server="anthropic", breakpoints=True, listeners=[sent], telemetry=False)
    with httpx.Client(transport=transport, timeout=600) as http:
        client = anthropic.Anthropic(api_key="sk-test", base_url=llama_server.url, http_client=http)
        for turn in (1, 2, 3):
            reply = client.messages.create(
                model=MODEL, max_tokens=2, system=SYSTEM, tools=TOOLS, messages=conversation(turn)
            )
            assert reply.type == "message"
    turns = transport.ledger.turns()
    check_turns(sent, turns)
    assert all(t.status == 200 and t.breakpoints and t.breakpoints.placed for t in turns)

    bodies: dict[bool, list[bytes]] = {}
    for asked in (False, True):
        chat_sent = Sent()
        chat = CacheAwareTransport(server="openai", breakpoints=asked, listeners=[chat_sent], telemetry=False)
        with httpx.Client(transport=chat, timeout=600) as http:
            client = openai.OpenAI(api_key="sk-test", base_url=f"{llama_server.url}/v1", http_client=http)
            for model in ("gpt-5.6", llama_server.model):
                messages = [{"role": "system", "content": SYSTEM}, *conversation(2)]
                client.chat.completions.create(model=model, max_tokens=2, messages=messages)  # type: ignore[arg-type]
        bodies[asked] = [call.request.content for call in chat_sent.calls]
        placed, engine_model = chat.ledger.turns()
        assert placed.status == engine_model.status == 200
        if asked:
            assert placed.breakpoints is not None and [p.path for p in placed.breakpoints.placed] == ["$.messages[0]"]
            assert placed.breakpoints.existing == 1  # GPT-5.6's implicit breakpoint, counted
            assert engine_model.breakpoints is not None and engine_model.breakpoints.refused is not None
    assert bodies[True][1] == bodies[False][1]
    assert json.loads(bodies[True][0])["messages"][0]["content"][-1]["prompt_cache_breakpoint"] == {"mode": "explicit"}
