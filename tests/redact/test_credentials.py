"""No credential reaches anything agentcache writes: a trace (with and without content), a ledger export, an
OpenTelemetry span, an explanation or a report. One rule decides for all of them (``agentcache.redact.redact``);
these tests check the rule itself, then each place it must reach.

The transport here answers with ``httpx.MockTransport``: the tests are about what is written, not about a server.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentcache.drift import explain, read_trace
from agentcache.httpx import CacheAwareTransport, TraceRecorder
from agentcache.redact import CREDENTIAL, redact
from agentcache.report import build_report, render_html

CHAT_URL = "http://engine/v1/chat/completions"
USAGE = {"prompt_tokens": 21, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 16}}
COMPLETION = json.dumps(
    {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Ok"}}], "usage": USAGE}
).encode()

# One of each shape, each unique, so a leak names its culprit.
OPENAI_KEY = "sk-proj-Q9x8W7v6U5t4S3r2Q1p0Onmlkj"
BEARER = "tok_1a2b3c4d5e6f7g8h9i0jKLMN"
SLACK = "xoxb-123456789012-abcdefABCDEF"
AWS = "AKIAQWERTYUIOPASDFGH"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"
GITHUB = "ghp_0123456789abcdefghijABCDEFGHIJklmn"
FIELD_SECRETS = {
    "api_key": "plain-api-key-1",
    "apiKey": "plain-api-key-2",
    "x-api-key": "plain-api-key-3",
    "Authorization": "Basic cGxhaW4tYmFzaWM=",
    "password": "hunter2-plain",
    "client_secret": "plain-client-secret",
    "access_token": "plain-access-token",
    "OPENAI_API_KEY": "plain-api-key-4",
}
URL_KEY = "plain-url-key-5"
SECRETS = [OPENAI_KEY, BEARER, SLACK, AWS, JWT, GITHUB, URL_KEY, *FIELD_SECRETS.values()]


@pytest.mark.parametrize(
    "name",
    ["api_key", "apiKey", "APIKey", "x-api-key", "X-Api-Key", "OPENAI_API_KEY", "Authorization", "authorization",
     "Proxy-Authorization", "password", "db_password", "passwd", "client_secret", "secret", "secret_key",
     "aws_secret_access_key", "access_token", "accessToken", "refresh_token", "id_token", "token", "x-auth-token",
     "session_token", "private_key", "Cookie", "set-cookie", "credentials", "auth"],
)
def test_credential_shaped_field_names_lose_their_value(name: str) -> None:
    assert redact({name: "s3cr3t-value"}) == {name: CREDENTIAL}
    assert redact({"outer": [{name: "s3cr3t-value"}]}) == {"outer": [{name: CREDENTIAL}]}


@pytest.mark.parametrize(
    "name",
    ["max_tokens", "max_completion_tokens", "prompt_tokens", "completion_tokens", "cached_tokens", "total_tokens",
     "cache_read_input_tokens", "budget_tokens", "tokens", "prompt_cache_key", "key", "monkey", "author",
     "keyboard", "tokenizer", "session_id", "user", "model"],
)
def test_counting_and_ordinary_field_names_keep_their_value(name: str) -> None:
    assert redact({name: "kept"}) == {name: "kept"}
    assert redact({name: 8}) == {name: 8}


def test_a_token_index_is_a_number_not_a_credential() -> None:
    assert redact({"divergence_token": 17, "password": 1234}) == {"divergence_token": 17, "password": CREDENTIAL}


def test_a_schema_under_a_credential_name_is_walked_not_replaced() -> None:
    """A tool's parameter named ``password`` describes a credential; its schema is not one."""
    schema = {"type": "object", "properties": {"password": {"type": "string"}, "token": {"type": "string"}}}
    assert redact(schema) == schema


@pytest.mark.parametrize(
    ("value", "label"),
    [
        (f"key {OPENAI_KEY} here", "API key"),
        ("sk_live_0123456789abcdefABCDEF", "API key"),
        (f"Bearer {BEARER}", "bearer token"),
        (SLACK, "Slack token"),
        (AWS, "AWS access key id"),
        (JWT, "JWT"),
        (GITHUB, "GitHub token"),
        ("AIzaSyA0123456789abcdefghijklmnopqrstuv", "Google API key"),
        ("hf_0123456789abcdefghijABCDEFGHIJ", "Hugging Face token"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "private key"),
        ("postgres://agent:pa55word@db:5432/x", "URL credentials"),
    ],
)
def test_credential_shaped_values_are_replaced_by_what_they_were(value: str, label: str) -> None:
    redacted = redact({"note": value})["note"]
    assert f"[redacted {label}]" in redacted
    assert not any(part in redacted for part in ("0123456789abcdef", "pa55word", "MIIEow", BEARER, SLACK[5:]))


def test_a_key_in_a_url_query_keeps_its_name() -> None:
    assert redact("GET https://h/v1?api_key=abc123&x=1") == "GET https://h/v1?api_key=[redacted URL api_key]&x=1"


@pytest.mark.parametrize(
    "text",
    ["Uses Bearer authentication for every call", "a bearer of bad news", "sk-learn style estimators",
     "https://example.com/docs?page=2", "task-0123456789abcdef0123456789", "Asia/Tokyo", "max_tokens=8"],
)
def test_prose_that_only_resembles_a_credential_is_kept(text: str) -> None:
    assert redact(text) == text


def test_content_keeps_its_text_but_never_a_credential_field() -> None:
    """``record_content=True`` keeps the conversation as sent, but a field named like a credential is dropped,
    also inside a tool call's arguments."""
    arguments = json.dumps({"user": "bob", "password": "hunter2-plain", "note": OPENAI_KEY})
    call = {"function": {"name": "login", "arguments": arguments}}
    body = {"messages": [{"role": "user", "content": f"my key is {OPENAI_KEY}"},
                         {"role": "assistant", "tool_calls": [call]}]}
    redacted = redact(body, frozenset({"content", "arguments"}))
    assert redacted["messages"][0] == body["messages"][0]
    call = json.loads(redacted["messages"][1]["tool_calls"][0]["function"]["arguments"])
    assert call == {"user": "bob", "password": CREDENTIAL, "note": OPENAI_KEY}


def test_arguments_without_a_credential_field_are_kept_byte_for_byte() -> None:
    arguments = '{ "path" : "notes.txt" }'
    body = {"function": {"arguments": arguments}}
    assert redact(body, frozenset({"arguments"})) == body


# -- every place that writes ---------------------------------------------------------------------------------


def leaky_body(system: str = "You are terse.") -> dict[str, Any]:
    """A chat request whose credentials sit where SDKs and proxies put them, and one where an agent should not."""
    return {
        "model": "tiny",
        "max_tokens": 8,
        **{name: value for name, value in FIELD_SECRETS.items() if name in ("api_key", "apiKey")},
        "metadata": {"session_id": "s1", "note": f"deploy with {OPENAI_KEY} or Bearer {BEARER}",
                     "password": FIELD_SECRETS["password"], "OPENAI_API_KEY": FIELD_SECRETS["OPENAI_API_KEY"]},
        "extra_headers": {name: FIELD_SECRETS[name] for name in ("x-api-key", "Authorization")},
        "extra_body": {"client_secret": FIELD_SECRETS["client_secret"], "tags": [SLACK, AWS, JWT, GITHUB],
                       "auth": {"access_token": FIELD_SECRETS["access_token"]}},
        "tools": [{"type": "function", "function": {
            "name": "login", "description": "Log in.",
            "parameters": {"type": "object", "properties": {"password": {"type": "string"}}}}}],
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi"}],
    }


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.mark.parametrize("record_content", [True, False], ids=["content", "no-content"])
def test_no_credential_reaches_a_trace_a_ledger_export_a_span_or_a_report(
    tmp_path: Path, record_content: bool
) -> None:
    answers = iter(["answer", "answer", "fail"])

    def handler(request: httpx.Request) -> httpx.Response:
        if next(answers) == "fail":  # an error whose message quotes a URL with its key
            raise httpx.ConnectError(f"cannot reach https://engine/v1?api_key={URL_KEY}", request=request)
        return httpx.Response(200, headers={"content-type": "application/json"}, content=COMPLETION)

    path = tmp_path / "trace.jsonl"
    provider, exporter = _provider()
    transport = CacheAwareTransport(
        httpx.MockTransport(handler), server="llama.cpp", tracer_provider=provider,
        recorder=TraceRecorder(path, record_content=record_content),
    )
    with httpx.Client(transport=transport) as client:
        client.post(CHAT_URL, json=leaky_body())
        client.post(CHAT_URL, json=leaky_body())
        with pytest.raises(httpx.ConnectError):
            client.post(CHAT_URL, json=leaky_body())

    trace = read_trace(path)
    assert len(trace.records) == 3 and trace.problems == []
    spans = [{"name": s.name, "attributes": dict(s.attributes or {}), "status": s.status.description}
             for s in exporter.get_finished_spans()]
    written = {
        "trace": path.read_text(encoding="utf-8"),
        "ledger": json.dumps([turn.to_json() for turn in transport.ledger.turns()]),
        "spans": json.dumps(spans),
        "report": render_html(build_report(trace)),
    }
    leaks = {where: [s for s in SECRETS if s in text] for where, text in written.items()}
    assert leaks == {where: [] for where in written}
    assert "[redacted URL api_key]" in written["ledger"] and "[redacted URL api_key]" in written["spans"]

    request = trace.records[0].request
    assert request["api_key"] == request["metadata"]["password"] == CREDENTIAL
    assert request["metadata"]["note"] == "deploy with [redacted API key] or [redacted bearer token]"
    assert request["max_tokens"] == 8 and trace.records[0].usage == USAGE
    assert request["tools"] == leaky_body()["tools"], "a parameter named password is not a credential"


def test_a_detail_never_quotes_part_of_a_rotating_key(tmp_path: Path) -> None:
    """A key in the system prompt that changes looks like a volatile hex id; the cause may say so, but neither
    the ledger's detail nor explain's may quote a piece of it."""
    path = tmp_path / "trace.jsonl"
    transport = CacheAwareTransport(
        httpx.MockTransport(lambda request: httpx.Response(200, json=json.loads(COMPLETION))),
        server="llama.cpp", canonicalize=False, recorder=TraceRecorder(path),
    )
    keys = ["sk-proj-0123456789abcdef0123456789abcdef", "sk-proj-0123456789abcdef0123456789abcdee"]
    with httpx.Client(transport=transport) as client:
        for key in keys:
            client.post(CHAT_URL, json=leaky_body(f"You are terse. Use {key} for the API."))
    live = transport.ledger.turns()[1]
    offline = explain(read_trace(path))[1]
    assert (live.cause, offline.cause) == ("volatile_value", "volatile_value")
    for detail in (live.detail or "", offline.detail):
        assert "0123456789abcdef" not in detail and CREDENTIAL in detail, detail
