"""The report reaches LangSmith: a real ``LangChainTracer`` whose langsmith ``Client`` posts to a local HTTP
endpoint that records each payload. The LLM run's metadata, as the tracer sends it when the run ends, holds
agentcache's report and the usage with ``cache_read``; nothing leaves the machine."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tracers.langchain import LangChainTracer
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langsmith import Client

from agentcache_langgraph import AgentCacheMiddleware
from tests.conftest import EngineInfo
from tests.integrations.test_langgraph import SYSTEM, TOOLS, _ask


class _Recorder(BaseHTTPRequestHandler):
    """Answers every LangSmith call with ``{}`` and keeps (method, path, JSON body)."""

    calls: list[tuple[str, str, Any]]

    def _record(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.calls.append((self.command, self.path, json.loads(body) if body else None))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    do_GET = do_POST = do_PATCH = _record

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def langsmith_endpoint(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[tuple[str, str, Any]]]]:
    calls: list[tuple[str, str, Any]] = []
    handler = type("Recorder", (_Recorder,), {"calls": calls})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_port}"
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_TRACING_V2"):
        monkeypatch.setenv(name, "false")  # only the tracer the test passes; no environment-started one
    monkeypatch.setenv("LANGSMITH_ENDPOINT", url)
    try:
        yield url, calls
    finally:
        server.shutdown()
        server.server_close()


def test_langsmith_receives_the_report_in_the_llm_runs_metadata(
    llama_server: EngineInfo, langsmith_endpoint: tuple[str, list[tuple[str, str, Any]]]
) -> None:
    url, calls = langsmith_endpoint
    llama_server.empty_cache()
    client = Client(api_url=url, api_key="dummy-key", auto_batch_tracing=False)
    tracer = LangChainTracer(client=client, project_name="agentcache-test")
    middleware = AgentCacheMiddleware(
        server=llama_server.profile, model_dir=llama_server.model_dir, ask_output_ids=True
    )
    chat = ChatOpenAI(
        base_url=f"{llama_server.url}/v1", api_key="sk-test", model=llama_server.model, temperature=0, max_tokens=4
    )
    agent = create_agent(chat, TOOLS, system_prompt=SYSTEM, middleware=[middleware], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "traced"}, "callbacks": [tracer]}
    messages: list[AIMessage] = [_ask(agent, turn, config) for turn in range(2)]
    tracer.wait_for_futures()
    client.flush()

    assert calls and client.api_url == url
    llm_ends = [body for method, path, body in calls if method == "PATCH" and body["run_type"] == "llm"]
    assert len(llm_ends) == len(messages)
    for body, message in zip(llm_ends, messages, strict=True):
        metadata = body["extra"]["metadata"]
        report = message.response_metadata["agentcache"]
        assert metadata["agentcache"] == report
        assert report["session"] == metadata["thread_id"] == "traced"
        cached = message.response_metadata["token_usage"]["prompt_tokens_details"]["cached_tokens"]
        assert metadata["usage_metadata"]["input_token_details"]["cache_read"] == report["cached_tokens"] == cached
        assert report["predicted_cached"] == cached
        assert body["outputs"]["generations"][0][0]["message"]["kwargs"]["response_metadata"]["agentcache"] == report
    assert [m.response_metadata["agentcache"]["turn"] for m in messages] == [1, 2]
    assert (messages[1].response_metadata["agentcache"]["cached_tokens"] or 0) >= (
        messages[0].response_metadata["agentcache"]["prompt_tokens"] or 0
    )
