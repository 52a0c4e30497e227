"""What the clients do when the network or the server misbehaves, for the blocking and the async twin alike.

Connection refused and timeouts come from real sockets; the faults no healthy engine produces on demand (5xx,
malformed JSON, a stream cut short) come from ``httpx.MockTransport``. Transport failures must surface as httpx's
own exceptions; an unusable answer as BackendError.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from agentcache.backends import AsyncOpenAICompatClient, AsyncSGLangClient, OpenAICompatClient, SGLangClient
from agentcache.errors import BackendError
from tests.faults import Parts

Handler = Callable[[httpx.Request], httpx.Response]
MODES = ["sync", "async"]
BODY = {"messages": [{"role": "user", "content": "hi"}]}
CHUNK = b'data: {"choices": [{"index": 0, "delta": {"content": "hel"}}]}\n\n'
USAGE = b'data: {"choices": [], "usage": {"prompt_tokens": 9, "prompt_tokens_details": {"cached_tokens": 8}}}\n\n'
DONE = b"data: [DONE]\n\n"


def generate(mode: str, url: str, transport: Handler | None = None, timeout: float = 5.0) -> Any:
    """Run SGLangClient.generate (or its async twin) once against ``url`` or a mock transport."""
    sampling = {"max_new_tokens": 1}
    if mode == "sync":
        mock = None if transport is None else httpx.MockTransport(transport)
        with SGLangClient(url, transport=mock, timeout=timeout) as client:
            return client.generate("hi", sampling_params=sampling)

    async def main() -> Any:
        mock = None if transport is None else httpx.MockTransport(transport)
        async with AsyncSGLangClient(url, transport=mock, timeout=timeout) as client:
            return await client.generate("hi", sampling_params=sampling)

    return asyncio.run(main())


def stream(mode: str, handler: Handler, received: list[dict[str, Any]], api_key: str | None = None) -> Any:
    """Read a whole stream_chat into ``received`` (kept when it raises); return the stream."""
    transport = httpx.MockTransport(handler)
    if mode == "sync":
        with OpenAICompatClient("http://engine", transport=transport, api_key=api_key) as client:
            chat_stream = client.stream_chat(BODY)
            received.extend(chat_stream)
            return chat_stream

    async def main() -> Any:
        async with AsyncOpenAICompatClient("http://engine", transport=transport, api_key=api_key) as client:
            async with client.stream_chat(BODY) as chat_stream:
                async for chunk in chat_stream:
                    received.append(chunk)
            return chat_stream

    return asyncio.run(main())


def sse(*parts: bytes, error: Exception | None = None) -> Handler:
    headers = {"content-type": "text/event-stream"}
    return lambda request: httpx.Response(200, headers=headers, stream=Parts(list(parts), error))


@pytest.mark.parametrize("mode", MODES)
def test_connection_refused_is_httpx_connect_error(mode: str) -> None:
    with socket.socket() as sock:  # a port nobody listens on once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(httpx.ConnectError):
        generate(mode, f"http://127.0.0.1:{port}")


@pytest.mark.parametrize("mode", MODES)
def test_silent_server_is_httpx_timeout(mode: str) -> None:
    with socket.socket() as sock:  # accepts connections (backlog) but never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        with pytest.raises(httpx.ReadTimeout):
            generate(mode, f"http://127.0.0.1:{sock.getsockname()[1]}", timeout=0.3)


@pytest.mark.parametrize("mode", MODES)
def test_server_error_is_backend_error_with_status(mode: str) -> None:
    with pytest.raises(BackendError, match=r"POST http://engine/generate answered HTTP 500: scheduler died") as e:
        generate(mode, "http://engine", lambda request: httpx.Response(500, text="scheduler died"))
    assert e.value.status == 500


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"<html>gateway</html>", "not JSON"),
        (b'{"text": "x", "meta_info"', "not JSON"),
        (b"[1, 2]", "JSON list instead of an object"),
        (b'{"text": "x"}', "without text and meta_info.prompt_tokens"),
        (b'{"text": "x", "output_ids": "12", "meta_info": {"prompt_tokens": 3}}', "output_ids that are not"),
        (
            b'{"text": "x", "meta_info": {"prompt_tokens": 3, "output_token_ids_logprobs": [[[-1.5, "7", null]]]}}',
            "output_token_ids_logprobs that are not",
        ),
        (
            b'{"text": "x", "meta_info": {"prompt_tokens": 3, "output_token_ids_logprobs": [[-1.5, 7, null]]}}',
            "output_token_ids_logprobs that are not",
        ),
    ],
)
def test_unusable_body_is_backend_error(mode: str, content: bytes, problem: str) -> None:
    with pytest.raises(BackendError, match=problem) as e:
        generate(mode, "http://engine", lambda request: httpx.Response(200, content=content))
    assert e.value.status == 200


@pytest.mark.parametrize("mode", MODES)
def test_whole_stream_reads(mode: str) -> None:
    received: list[dict[str, Any]] = []
    read = stream(mode, sse(CHUNK, CHUNK[:20], CHUNK[20:], USAGE, DONE), received)
    assert len(received) == 3 and read.text == "helhel"
    assert (read.usage.prompt_tokens, read.usage.cached_tokens) == (9, 8)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("parts", "problem"),
    [
        ((CHUNK, CHUNK[:30]), r"stream ended before data: \[DONE\]"),
        ((CHUNK, USAGE), r"stream ended before data: \[DONE\]"),
        ((CHUNK, DONE), "stream ended before a usage chunk"),
        ((CHUNK, b"data: {not json\n\n", DONE), "not JSON"),
        ((CHUNK, b'data: {"error": {"message": "out of memory"}}\n\n'), r"error mid-stream.*out of memory"),
    ],
)
def test_broken_stream_is_backend_error(mode: str, parts: tuple[bytes, ...], problem: str) -> None:
    received: list[dict[str, Any]] = []
    with pytest.raises(BackendError, match=problem):
        stream(mode, sse(*parts), received)
    assert received[0]["choices"][0]["delta"]["content"] == "hel"  # chunks before the fault were delivered


@pytest.mark.parametrize("mode", MODES)
def test_connection_lost_mid_stream_is_httpx_error(mode: str) -> None:
    with pytest.raises(httpx.ReadTimeout):
        stream(mode, sse(CHUNK, error=httpx.ReadTimeout("no data for 300 s")), [])


@pytest.mark.parametrize("mode", MODES)
def test_stream_rejected_sends_key_and_is_backend_error(mode: str) -> None:
    seen: list[str | None] = []

    def reject(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization"))
        return httpx.Response(401, json={"error": {"message": "invalid api key"}})

    with pytest.raises(BackendError, match=r"HTTP 401.*invalid api key") as e:
        stream(mode, reject, [], api_key="sk-test")
    assert e.value.status == 401 and seen == ["Bearer sk-test"]
