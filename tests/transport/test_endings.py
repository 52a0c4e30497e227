"""How a response ended, as its turn records it: through the real openai SDK, against a local HTTP server.

Four endings leave a turn without usage, and each is recorded as what it is:
- the body arrived whole, without usage (a stream sent without ``include_usage``): no error;
- the caller closed the response before its end (a stream it stopped reading): abandoned, with the bytes read;
- the caller closed it before reading any of it, as openai does with a 5xx it retries: closed unread;
- an exception cut the body: that exception.

The server is ``http.server`` on 127.0.0.1, one scripted answer per request, so the bytes cross a real socket and
openai's own retry and stream code decide when the response is read and closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import openai
import pytest

from agentcache.httpx import AsyncCacheAwareTransport, CacheAwareTransport, Turn
from agentcache.transport.tap import ABANDONED, UNREAD

Answer = Callable[[BaseHTTPRequestHandler], None]
Ending = tuple[int | None, str | None, int | None]
"""A turn's status, error and prompt tokens."""
MESSAGES: list[Any] = [{"role": "user", "content": "Hi"}]
USAGE = {"prompt_tokens": 12, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 0}}


def _event(data: Any) -> bytes:
    return b"data: " + (data if isinstance(data, bytes) else json.dumps(data).encode()) + b"\n\n"


def _delta(text: str) -> bytes:
    return _event({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]})


HEAD = _delta("Hel") + _delta("lo")
WITH_USAGE = HEAD + _event({"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                            "choices": [], "usage": USAGE}) + _event(b"[DONE]")
WITHOUT_USAGE = HEAD + _event(b"[DONE]")


def _head(handler: BaseHTTPRequestHandler, status: int, content_type: str, **headers: str) -> None:
    handler.send_response(status)
    handler.send_header("content-type", content_type)
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()


def stream(body: bytes) -> Answer:
    """A whole event stream; the connection's end ends the body (HTTP/1.0)."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        _head(handler, 200, "text/event-stream")
        handler.wfile.write(body)

    return answer


def overloaded(handler: BaseHTTPRequestHandler) -> None:
    """A 500 that openai retries at once (``retry-after-ms``)."""
    body = json.dumps({"error": {"message": "overloaded", "type": "server_error"}}).encode()
    _head(handler, 500, "application/json", **{"content-length": str(len(body)), "retry-after-ms": "1"})
    handler.wfile.write(body)


def cut(handler: BaseHTTPRequestHandler) -> None:
    """Fewer bytes than the content-length promises, then the connection closes."""
    _head(handler, 200, "text/event-stream", **{"content-length": str(len(WITH_USAGE))})
    handler.wfile.write(HEAD)


def stalled(release: threading.Event) -> Answer:
    """The first events, then nothing until the test has closed the response."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        stream(HEAD)(handler)
        handler.wfile.flush()
        release.wait(10)
        with contextlib.suppress(OSError):  # the client hung up, as it should have
            handler.wfile.write(WITH_USAGE[len(HEAD) :])

    return answer


@contextmanager
def serving(answers: list[Answer]) -> Iterator[str]:
    """A local server giving ``answers`` in order, one per request; its base URL."""

    class Script(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            answers.pop(0)(self)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Script)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()
    assert answers == [], "a scripted answer was never asked for"


def run_sync(url: str, how: str, release: threading.Event) -> list[Turn]:
    transport = CacheAwareTransport(server="llama.cpp")
    http = httpx.Client(transport=transport)
    with openai.OpenAI(base_url=url, api_key="-", max_retries=1, http_client=http) as client:
        chunks = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
        if how == "first":
            next(iter(chunks))
            chunks.close()
            release.set()
        elif how == "cut":
            with pytest.raises(httpx.RemoteProtocolError):
                list(chunks)
        else:
            list(chunks)
    return transport.ledger.turns()


def run_async(url: str, how: str, release: threading.Event) -> list[Turn]:
    transport = AsyncCacheAwareTransport(server="llama.cpp")

    async def main() -> None:
        http = httpx.AsyncClient(transport=transport)
        async with openai.AsyncOpenAI(base_url=url, api_key="-", max_retries=1, http_client=http) as client:
            chunks = await client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
            if how == "first":
                await anext(aiter(chunks))
                await chunks.close()
                release.set()
            elif how == "cut":
                with pytest.raises(httpx.RemoteProtocolError):
                    [chunk async for chunk in chunks]
            else:
                [chunk async for chunk in chunks]

    asyncio.run(main())
    return transport.ledger.turns()


def _up_to(error: str | None, expected: str | None) -> str | None:
    """``error`` cut to ``expected`` when it begins with it: httpcore words the rest of a cut its own way."""
    return expected if error and expected and error.startswith(expected) else error


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_each_ending_is_recorded_as_what_it_is(mode: str) -> None:
    release = threading.Event()
    endings: dict[str, tuple[list[Answer], str, list[Ending]]] = {
        "whole, with usage": ([stream(WITH_USAGE)], "all", [(200, None, 12)]),
        "whole, without usage": ([stream(WITHOUT_USAGE)], "all", [(200, None, None)]),
        "abandoned": ([stalled(release)], "first", [(200, ABANDONED.format(len(HEAD)), None)]),
        "retried by openai": ([overloaded, stream(WITH_USAGE)], "all", [(500, UNREAD, None), (200, None, 12)]),
        "cut": ([cut], "cut", [(200, "RemoteProtocolError: peer closed connection", None)]),
    }
    run = run_sync if mode == "sync" else run_async
    seen = {}
    for name, (answers, how, expected) in endings.items():
        with serving(answers) as url:
            turns = run(url, how, release)
        assert len(turns) == len(expected), (name, turns)
        seen[name] = [
            (t.status, _up_to(t.error, want), t.reported_prompt_tokens)
            for t, (_, want, _) in zip(turns, expected, strict=True)
        ]
    assert seen == {name: expected for name, (_, _, expected) in endings.items()}
