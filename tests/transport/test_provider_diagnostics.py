"""The providers' own cache diagnoses: read from their responses, set beside agentcache's cause in the ledger, the
trace and ``explain``, and asked for (opt-in) with the previous response id chained per session.

No hosted endpoint is reachable from the test machines, so the hosted responses are bodies written from the
documented schemas (the source is cited at each), handed to the real middleware as the responses of real requests;
the request path runs against llama-server's Anthropic Messages endpoint.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcache.drift import explain, read_trace
from agentcache.httpx import CacheAwareTransport, TraceRecorder
from agentcache.predict.provider import ANTHROPIC_BETA, read_diagnosis
from agentcache.transport import CacheMiddleware
from agentcache.transport.call import Call, TurnListener
from tests.conftest import EngineInfo

# Anthropic, https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics (response `diagnostics`
# object; reason types and `cache_missed_input_tokens` as in the Ruby SDK's Anthropic::Models::Diagnostics and
# langchain4j's AnthropicDiagnostics reference).
ANTHROPIC_USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 3,
}


def anthropic_message(ident: str, reason: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": ident,
        "type": "message",
        "role": "assistant",
        "model": "claude-opus-4-8",
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "usage": ANTHROPIC_USAGE,
        "diagnostics": {"cache_miss_reason": reason},
    }


# OpenAI Responses API, https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics
# (`prompt_cache_diagnostics`, a union on `type`; cache_miss carries `reason`, `cache_missed_tokens`,
# `comparison_reusable_tokens`).
def openai_response(diagnostics: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "resp_02",
        "object": "response",
        "model": "gpt-5.6",
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]}],
        "usage": {
            "input_tokens": 4200,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 4200},
            "output_tokens": 3,
        },
        "prompt_cache_diagnostics": diagnostics,
    }


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            anthropic_message("msg_2", {"type": "system_changed", "cache_missed_input_tokens": 3100}),
            ("anthropic", "system_changed", 3100),
        ),
        (anthropic_message("msg_2", {"type": "previous_message_not_found"}), ("anthropic", "previous_not_found", None)),
        (anthropic_message("msg_2", {"type": "unavailable"}), ("anthropic", "unavailable", None)),
        (anthropic_message("msg_2", None), ("anthropic", "no_divergence_or_pending", None)),
        (
            openai_response(
                {
                    "type": "cache_miss",
                    "reason": "tools_changed",
                    "cache_missed_tokens": 4200,
                    "comparison_reusable_tokens": 0,
                }
            ),
            ("openai", "tools_changed", 4200),
        ),
        (openai_response({"type": "cache_hit"}), ("openai", "cache_hit", None)),
        (openai_response({"type": "comparison_response_not_found"}), ("openai", "previous_not_found", None)),
        (openai_response({"type": "unavailable"}), ("openai", "unavailable", None)),
    ],
)
def test_each_documented_shape_is_read(body: dict[str, Any], expected: tuple[str, str, int | None]) -> None:
    diagnosis = read_diagnosis(body)
    assert diagnosis is not None
    assert (diagnosis.provider, diagnosis.verdict, diagnosis.missed_tokens) == expected


def test_a_response_without_diagnosis_has_none() -> None:
    assert read_diagnosis({"id": "msg_1", "usage": ANTHROPIC_USAGE}) is None


class Sent(TurnListener):
    """Keeps each request as it went out (body and headers)."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []

    def on_begin(self, call: Call) -> None:
        self.requests.append(call.request)


SYSTEM = "You are a careful coding agent. " + " ".join(f"Rule {i}: read the file before editing it." for i in range(40))


def messages_request(system: str, turns: int) -> dict[str, Any]:
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"step {i}"} for i in range(2 * turns - 1)]
    return {"model": "claude-opus-4-8", "max_tokens": 8, "system": system, "messages": messages}


def converse(middleware: CacheMiddleware, replies: list[dict[str, Any]], systems: list[str]) -> None:
    """Send one session's turns through the middleware, each answered by the given hosted response body."""
    for turn, (reply, system) in enumerate(zip(replies, systems, strict=True), start=1):
        request = httpx.Request(
            "POST",
            "http://hosted.invalid/v1/messages",
            json=messages_request(system, turn),
            headers={"anthropic-beta": "other-beta-2026-01-01"},
        )
        call = middleware.begin(request)
        middleware.wrap(call, httpx.Response(200, json=reply, request=call.request))


@pytest.mark.parametrize(("reason", "agrees"), [("system_changed", True), ("tools_changed", False)])
def test_the_ledger_trace_and_explain_set_the_verdict_beside_the_cause(
    tmp_path: Path, reason: str, agrees: bool
) -> None:
    sent, trace = Sent(), tmp_path / "trace.jsonl"
    middleware = CacheMiddleware(server="anthropic", diagnostics=True, recorder=TraceRecorder(trace), listeners=[sent])
    replies = [
        anthropic_message("msg_1", None),
        anthropic_message("msg_2", {"type": reason, "cache_missed_input_tokens": 900}),
    ]
    converse(middleware, replies, [SYSTEM, SYSTEM.replace("careful", "thorough")])
    first, second = middleware.ledger.turns()
    assert second.cause == "system_edited"
    assert (second.provider_verdict, second.provider_missed_tokens, second.provider_agrees) == (reason, 900, agrees)
    assert first.provider_verdict == "no_divergence_or_pending" and first.provider_agrees is None
    assert middleware.ledger.disagreements() == ([] if agrees else [second])
    # the trace keeps the provider's object; explain reads it and judges it the same way
    report = explain(read_trace(trace))[1]
    assert (report.cause, report.provider_verdict, report.provider_agrees) == (second.cause, reason, agrees)
    # what was asked: the beta header (the caller's kept), and the session's previous response id
    bodies = [json.loads(request.content) for request in sent.requests]
    assert [body["diagnostics"] for body in bodies] == [{"previous_message_id": None}, {"previous_message_id": "msg_1"}]
    for request in sent.requests:
        assert request.headers["anthropic-beta"] == f"other-beta-2026-01-01,{ANTHROPIC_BETA}"


def test_without_the_option_nothing_is_asked_but_a_diagnosis_is_still_read() -> None:
    sent = Sent()
    middleware = CacheMiddleware(server="anthropic", listeners=[sent])
    converse(
        middleware, [anthropic_message("msg_1", {"type": "model_changed", "cache_missed_input_tokens": 5})], [SYSTEM]
    )
    assert "diagnostics" not in json.loads(sent.requests[0].content)
    assert sent.requests[0].headers["anthropic-beta"] == "other-beta-2026-01-01"
    turn = middleware.ledger.turns()[0]
    assert (turn.provider_verdict, turn.provider_agrees) == ("model_changed", None)  # a first turn judges nothing


def test_a_streamed_message_start_carries_the_diagnosis() -> None:
    middleware = CacheMiddleware(server="anthropic", diagnostics=True)
    start: dict[str, Any] = {
        "type": "message_start",
        "message": {**anthropic_message("msg_9", {"type": "messages_changed"}), "content": []},
    }
    events: list[dict[str, Any]] = [start, {"type": "message_stop"}]
    stream = b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)
    call = middleware.begin(
        httpx.Request("POST", "http://hosted.invalid/v1/messages", json=messages_request(SYSTEM, 1))
    )
    middleware.wrap(call, httpx.Response(200, content=stream, headers={"content-type": "text/event-stream"}))
    assert middleware.ledger.turns()[0].provider_verdict == "messages_changed"
    follow = middleware.begin(
        httpx.Request("POST", "http://hosted.invalid/v1/messages", json=messages_request(SYSTEM, 2))
    )
    assert json.loads(follow.request.content)["diagnostics"] == {"previous_message_id": "msg_9"}


def test_the_diagnostics_request_reaches_a_real_engine_chained_per_session(llama_server: EngineInfo) -> None:
    """llama-server's Anthropic Messages endpoint takes the opt-in body and header, and answers with its own ids:
    each session's request names the id of that session's previous response."""
    sent = Sent()
    transport = CacheAwareTransport(server="llama.cpp", diagnostics=True, listeners=[sent])
    ids: dict[str, list[str]] = {"a": [], "b": []}
    with httpx.Client(transport=transport, base_url=llama_server.url, timeout=600) as client:
        for turn in (1, 2):
            for session in ("a", "b"):
                body = {**messages_request("Be terse.", turn), "model": llama_server.model, "max_tokens": 2}
                response = client.post("/v1/messages", json=body, headers={"x-agentcache-session": session})
                assert response.status_code == 200, response.text
                ids[session].append(response.json()["id"])
    asked = [(r.headers.get("x-agentcache-session"), json.loads(r.content)["diagnostics"]) for r in sent.requests]
    assert asked == [
        ("a", {"previous_message_id": None}),
        ("b", {"previous_message_id": None}),
        ("a", {"previous_message_id": ids["a"][0]}),
        ("b", {"previous_message_id": ids["b"][0]}),
    ]
    assert all(ANTHROPIC_BETA in r.headers["anthropic-beta"] for r in sent.requests)
    turns = transport.ledger.turns()
    assert [t.cause for t in turns if t.turn == 2] == ["none", "none"]  # the added field is not prompt text
    assert all(t.provider_verdict is None for t in turns)  # llama-server diagnoses nothing
