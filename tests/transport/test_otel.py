"""OpenTelemetry spans of LLM calls, collected with the SDK's in-memory exporter: the numbers against a real engine,
how a call ended (failed, abandoned) against a mock one."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentcache.httpx import CacheAwareTransport
from tests.conftest import EngineInfo


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def test_each_call_is_a_client_span_with_genai_usage_and_agentcache_attributes(llama_server: EngineInfo) -> None:
    llama_server.empty_cache()
    provider, exporter = _provider()
    transport = CacheAwareTransport(server="llama.cpp", model_dir=llama_server.model_dir, tracer_provider=provider)
    body = {"model": llama_server.model, "messages": [{"role": "user", "content": "Say hi. " * 20}], "max_tokens": 2}
    parent_tracer = provider.get_tracer("agent")
    with (
        httpx.Client(transport=transport, base_url=llama_server.url, timeout=120) as http,
        parent_tracer.start_as_current_span("agent step") as parent,
    ):
        answers = [http.post("/v1/chat/completions", json=body) for _ in range(2)]
    assert [answer.status_code for answer in answers] == [200, 200]
    generated = [answer.json()["usage"]["completion_tokens"] for answer in answers]  # up to 2: EOS may come first
    spans = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    turns = transport.ledger.turns()
    assert len(spans) == len(turns) == 2
    for span, turn, output_tokens in zip(spans, turns, generated, strict=True):
        attributes = dict(span.attributes or {})
        assert span.name == f"chat {llama_server.model}" and span.kind == trace.SpanKind.CLIENT
        assert span.parent is not None and span.parent.span_id == parent.get_span_context().span_id
        assert attributes["gen_ai.operation.name"] == "chat"
        assert attributes["gen_ai.provider.name"] == "llama.cpp"
        assert attributes["gen_ai.request.model"] == llama_server.model
        assert attributes["gen_ai.usage.input_tokens"] == turn.reported_prompt_tokens
        assert attributes["gen_ai.usage.output_tokens"] == output_tokens
        assert attributes["gen_ai.usage.cache_read.input_tokens"] == turn.reported_cached
        assert attributes["agentcache.predicted_cached_tokens"] == turn.predicted_cached == turn.reported_cached
        assert attributes["agentcache.session"] == turn.session and attributes["agentcache.turn"] == turn.turn
        assert attributes["agentcache.cause"] == turn.cause
        assert attributes["http.response.status_code"] == 200
    assert spans[1].attributes is not None and spans[1].attributes["gen_ai.usage.cache_read.input_tokens"] > 0


def test_a_failed_call_ends_its_span_with_an_error_status() -> None:
    provider, exporter = _provider()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    transport = CacheAwareTransport(server="sglang", tracer_provider=provider)
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(transport=transport) as http, pytest.raises(httpx.ConnectError):
        http.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body)
    (span,) = exporter.get_finished_spans()
    assert span.status.status_code == trace.StatusCode.ERROR and "ConnectError" in (span.status.description or "")


def _streamed(chunks: int, status: int = 200) -> httpx.MockTransport:
    """An engine answering with an SSE stream of ``chunks`` deltas, then its end."""

    def events() -> Iterator[bytes]:
        for _ in range(chunks):
            yield b'data: {"choices": [{"index": 0, "delta": {"content": "a"}}]}\n\n'
        yield b"data: [DONE]\n\n"

    return httpx.MockTransport(
        lambda request: httpx.Response(status, headers={"content-type": "text/event-stream"}, content=events())
    )


@pytest.mark.parametrize("status", [200, 503])
def test_a_stream_the_caller_abandoned_is_marked_so_and_is_an_error_only_if_the_call_failed(status: int) -> None:
    """Closing a stream early is the caller's choice: the span says so and keeps an unset status; an HTTP error
    stays ERROR."""
    provider, exporter = _provider()
    transport = CacheAwareTransport(_streamed(3, status), server="sglang", tracer_provider=provider)
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(transport=transport) as http, http.stream("POST", "http://e/v1/chat/completions", json=body) as r:
        next(r.iter_raw())
    (span,) = exporter.get_finished_spans()
    assert (span.attributes or {})["agentcache.abandoned"] is True
    expected = trace.StatusCode.UNSET if status == 200 else trace.StatusCode.ERROR
    assert span.status.status_code == expected


def test_a_stream_read_to_its_end_is_not_abandoned() -> None:
    provider, exporter = _provider()
    transport = CacheAwareTransport(_streamed(3), server="sglang", tracer_provider=provider)
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(transport=transport) as http:
        http.post("http://e/v1/chat/completions", json=body)
    (span,) = exporter.get_finished_spans()
    assert "agentcache.abandoned" not in (span.attributes or {})
    assert span.status.status_code == trace.StatusCode.UNSET


def test_the_global_tracer_provider_is_used_when_configured(llama_server: EngineInfo) -> None:
    """In a process of its own, since the global provider can be set only once."""
    script = textwrap.dedent(
        f"""
        import httpx
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from agentcache.httpx import CacheAwareTransport

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        body = {{"model": "{llama_server.model}", "messages": [{{"role": "user", "content": "hi"}}], "max_tokens": 1}}
        with httpx.Client(transport=CacheAwareTransport(server="llama.cpp"), base_url="{llama_server.url}") as http:
            http.post("/v1/chat/completions", json=body)
        (span,) = exporter.get_finished_spans()
        print(span.name, span.attributes["gen_ai.usage.input_tokens"], span.attributes["agentcache.turn"])
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    name, model, prompt_tokens, turn = done.stdout.split()
    assert f"{name} {model}" == f"chat {llama_server.model}" and int(prompt_tokens) > 0 and turn == "1"
