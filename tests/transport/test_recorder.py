"""The trace a transport records: readable by ``parse_trace``, free of credentials, and, with
``record_content=False``, free of conversation text while equal texts stay equal and changed ones differ.

The transport tests here answer with ``httpx.MockTransport``: they are about what is written to the file, not
about an engine.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcache.drift.explain import explain
from agentcache.drift.trace import Trace, parse_trace
from agentcache.httpx import SESSION_HEADER, CacheAwareTransport, TraceRecorder

CHAT_URL = "http://engine/v1/chat/completions"
USAGE = {"prompt_tokens": 21, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 16}}
COMPLETION = json.dumps(
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Ok"}}], "usage": USAGE}
).encode()
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        },
    }
]
SYSTEM = "You are a careful coding agent. Secret project codename: BLUEHERON."
QUESTION = "Please open notes-alpha.txt and summarise it."
ARGUMENTS = '{"path": "notes-alpha.txt"}'
TOOL_OUTPUT = "alpha beta gamma: the file's private contents"


def openai_turn(question: str = QUESTION, arguments: str = ARGUMENTS) -> dict[str, Any]:
    return {
        "model": "tiny",
        "tools": TOOLS,
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": [{"type": "text", "text": question}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": arguments}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": TOOL_OUTPUT},
        ],
    }


def anthropic_turn(question: str = QUESTION) -> dict[str, Any]:
    return {
        "model": "claude",
        "max_tokens": 8,
        "system": [{"type": "text", "text": SYSTEM}],
        "tools": [{"name": "read_file", "input_schema": TOOLS[0]["function"]["parameters"]}],
        "messages": [
            {"role": "user", "content": question},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "The user wants the notes.", "signature": "sig"},
                    {"type": "tool_use", "id": "tu_1", "name": "read_file", "input": {"path": "notes-alpha.txt"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": TOOL_OUTPUT}]},
        ],
    }


def read(path: Path) -> Trace:
    with path.open(encoding="utf-8") as handle:
        trace = parse_trace(handle)
    assert trace.problems == []
    return trace


def completion(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "application/json"}, stream=httpx.ByteStream(COMPLETION))


def test_transport_trace_parses_with_session_request_usage_and_time(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    transport = CacheAwareTransport(httpx.MockTransport(completion), server="llama.cpp", recorder=TraceRecorder(path))
    sent = [("s1", openai_turn()), ("s2", openai_turn("Another question")), ("s1", openai_turn())]
    with httpx.Client(transport=transport) as client:
        for session, body in sent:
            client.post(CHAT_URL, content=json.dumps(body), headers={SESSION_HEADER: session})
    records = read(path).records
    assert [(r.session, r.request, r.usage) for r in records] == [(s, body, USAGE) for s, body in sent]
    started = sorted(t.started for t in transport.ledger.turns())
    assert [r.ts for r in records] == started


def _digests(request: dict[str, Any], anthropic: bool) -> dict[str, Any]:
    """The values that must be redacted, by what they are."""
    messages = request["messages"]
    if anthropic:
        return {
            "system": request["system"][0]["text"],
            "question": messages[0]["content"],
            "thinking": messages[1]["content"][0]["thinking"],
            "arguments": messages[1]["content"][1]["input"],
            "tool_output": messages[2]["content"][0]["content"],
        }
    return {
        "system": messages[0]["content"],
        "question": messages[1]["content"][0]["text"],
        "arguments": messages[2]["tool_calls"][0]["function"]["arguments"],
        "tool_output": messages[3]["content"],
    }


@pytest.mark.parametrize("dialect", ["openai", "anthropic"])
def test_without_content_texts_become_digests_that_keep_equality(tmp_path: Path, dialect: str) -> None:
    anthropic = dialect == "anthropic"
    make = anthropic_turn if anthropic else openai_turn
    first, changed = make(), make("Please open notes-beta.txt and summarise it.")
    path = tmp_path / "trace.jsonl"
    recorder = TraceRecorder(path, record_content=False)
    for body in (first, first, changed):
        recorder.write("s", copy.deepcopy(body), USAGE, 1.0)

    text = path.read_text(encoding="utf-8")
    for secret in (SYSTEM, QUESTION, "notes-alpha.txt", TOOL_OUTPUT, "The user wants the notes."):
        assert secret not in text
    one, again, other = (_digests(r.request, anthropic) for r in read(path).records)
    original = _digests(first, anthropic)
    assert all(isinstance(one[k], str) and one[k] != original[k] for k in one), one
    assert one == again
    assert {k for k in one if one[k] != other[k]} == {"question"}
    for record in read(path).records:
        assert record.request["tools"] == first["tools"]
        assert record.request["model"] == first["model"]


def test_changed_tool_arguments_give_a_different_digest(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    recorder = TraceRecorder(path, record_content=False)
    for arguments in (ARGUMENTS, '{"path": "notes-beta.txt"}'):
        recorder.write("s", openai_turn(arguments=arguments), None, 1.0)
    one, other = (_digests(r.request, anthropic=False) for r in read(path).records)
    assert {k for k in one if one[k] != other[k]} == {"arguments"}


def test_without_content_model_written_text_is_redacted_too(tmp_path: Path) -> None:
    """Reasoning that servers return (``reasoning_content``) and refusals come back in later requests."""
    body = openai_turn()
    body["messages"][2]["reasoning_content"] = "I will read notes-alpha.txt first."
    body["messages"].append({"role": "assistant", "content": None, "refusal": "I cannot share BLUEHERON."})
    path = tmp_path / "trace.jsonl"
    TraceRecorder(path, record_content=False).write("s", body, None, 1.0)
    text = path.read_text(encoding="utf-8")
    leaked = [secret for secret in ("I will read notes-alpha.txt", "I cannot share BLUEHERON") if secret in text]
    assert leaked == []


@pytest.mark.parametrize("record_content", [True, False], ids=["content", "no-content"])
def test_credentials_never_reach_the_trace(tmp_path: Path, record_content: bool) -> None:
    """Sent with Authorization and x-api-key, answered, failed and passed through: neither value is written."""
    bearer, api_key = "sk-test-0123456789abcdef", "ak-test-fedcba9876543210"
    answers = iter([completion, completion])

    def handler(request: httpx.Request) -> httpx.Response:
        respond = next(answers, None)
        if respond is None:
            raise httpx.ReadTimeout("timed out", request=request)
        return respond(request)

    path = tmp_path / "trace.jsonl"
    recorder = TraceRecorder(path, record_content=record_content)
    transport = CacheAwareTransport(httpx.MockTransport(handler), server="llama.cpp", recorder=recorder)
    headers = {"Authorization": f"Bearer {bearer}", "x-api-key": api_key}
    duplicate_tools = {**openai_turn(), "tools": TOOLS * 2}  # refused by canonicalization: passed through
    with httpx.Client(transport=transport, headers=headers) as client:
        client.post(CHAT_URL, content=json.dumps(openai_turn()))
        client.post(CHAT_URL, content=json.dumps(duplicate_tools))
        with pytest.raises(httpx.ReadTimeout):
            client.post(CHAT_URL, content=json.dumps(openai_turn()))
    data = path.read_bytes()
    assert len(read(path).records) == 3
    for secret in (bearer, api_key):
        assert secret.encode() not in data


def test_a_record_after_a_partial_line_starts_on_a_line_of_its_own(tmp_path: Path) -> None:
    """A crash (or a full disk) mid-write leaves the file ending in part of a line: the next record is still read
    whole, and only the broken line is a problem."""
    path = tmp_path / "trace.jsonl"
    recorder = TraceRecorder(path)
    recorder.write("s", openai_turn(), USAGE, 1.0)
    with path.open("ab") as handle:
        handle.write(b'{"session": "s", "request": {"mod')
    recorder.write("s", openai_turn("Another question"), USAGE, 2.0)
    with path.open(encoding="utf-8") as handle:
        trace = parse_trace(handle)
    assert [(r.line, r.ts) for r in trace.records] == [(1, 1.0), (3, 2.0)]
    assert [p.line for p in trace.problems] == [2]


def _passed_through(tmp_path: Path, body: bytes, record_content: bool = True) -> bytes:
    """The trace line of one request whose body the transport passes through byte-identical."""
    path = tmp_path / "trace.jsonl"
    engine = httpx.MockTransport(lambda request: httpx.Response(200, content=COMPLETION))
    recorder = TraceRecorder(path, record_content=record_content)
    transport = CacheAwareTransport(engine, server="llama.cpp", recorder=recorder)
    with httpx.Client(transport=transport) as client:
        client.post(CHAT_URL, content=body)
    assert not transport.ledger.turns()[0].canonicalized
    return path.read_bytes()


@pytest.mark.parametrize("record_content", [True, False])
def test_a_passed_through_body_is_recorded_with_its_numbers_as_sent(tmp_path: Path, record_content: bool) -> None:
    """The transport sent these numbers as written because a parse changes them: so does the trace, and a number
    under a credential-shaped name is still redacted."""
    numbers = b'"seed": 123456789012345678901234567890, "temperature": 0.1000000000000000001, "top_p": 1E2'
    secret = b'"metadata": {"pin_password": 98765432109876543210987654321}'
    body = json.dumps(openai_turn()).encode()[:-1] + b", " + numbers + b", " + secret + b"}"
    data = _passed_through(tmp_path, body, record_content)
    for number in (b"123456789012345678901234567890", b"0.1000000000000000001"):
        assert b":" + number in data
    assert b"98765432109876543210987654321" not in data
    (record,) = parse_trace(data.split(b"\n")).records
    assert record.request["seed"] == 123456789012345678901234567890
    assert record.request["metadata"]["pin_password"] == "[redacted credential]"


def test_a_body_with_a_repeated_key_is_recorded_as_unrecorded_with_why(tmp_path: Path) -> None:
    """A trace line cannot hold both copies of a repeated key: it says why the request is missing, and a reader
    names the line, instead of a record that drops a copy the server may have read."""
    body = json.dumps(openai_turn()).encode()[:-1] + b', "temperature": 0, "temperature": 2}'
    data = _passed_through(tmp_path, body)
    assert b'"temperature"' not in data
    trace = parse_trace(data.split(b"\n"))
    assert trace.records == []
    [problem] = trace.problems
    assert "request not recorded" in problem.message and "$.temperature" in problem.message


def test_a_request_the_server_did_not_evaluate_is_recorded_as_such_and_explain_leaves_it_out(tmp_path: Path) -> None:
    """A 503 (fault injection: the server refused before evaluating) is in the trace, marked ``evaluated: false``;
    ``explain`` keeps its turn number and replays only what the server cached, as the live ledger predicts."""
    path = tmp_path / "trace.jsonl"
    answers = iter([completion, lambda request: httpx.Response(503, json={"error": "overloaded"}), completion])
    engine = httpx.MockTransport(lambda request: next(answers)(request))
    transport = CacheAwareTransport(engine, server="llama.cpp", recorder=TraceRecorder(path))
    with httpx.Client(transport=transport) as client:
        for question in (QUESTION, "Second question", "Third question"):
            client.post(CHAT_URL, content=json.dumps(openai_turn(question)), headers={SESSION_HEADER: "s"})
    trace = read(path)
    assert [r.evaluated for r in trace.records] == [True, False, True]
    assert [t.predicted_cached is None for t in transport.ledger.turns()] == [False, True, False]
    assert [r.turn for r in explain(trace)] == [1, 3]
