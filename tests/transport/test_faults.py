"""Whatever goes wrong, the caller of a CacheAwareTransport sees what it would have seen without it.

Every case runs the same request twice, sync and async: through the inner transport alone, then through the
cache-aware transport wrapping an identical inner transport, and compares what the caller observes (status,
content type, body chunks, the exception raised and the one ``response.json()`` raises). The ledger must hold
the turn and say what went wrong. Connection refused comes from a real closed port; the faults no healthy engine
produces on demand (timeouts, 5xx, malformed JSON, a cut stream) come from ``httpx.MockTransport``, whose
handler also keeps the bytes the inner transport was given.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcache import canonical_json, canonicalize
from agentcache.errors import DuplicateToolError, NestingTooDeepError
from agentcache.httpx import AsyncCacheAwareTransport, CacheAwareTransport, TraceRecorder, Turn, settle
from tests.faults import Parts

Handler = Callable[[httpx.Request], httpx.Response]
Transport = CacheAwareTransport | AsyncCacheAwareTransport
MODES = ["sync", "async"]
CHAT_URL = "http://engine/v1/chat/completions"
BODY = {"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
BODY_BYTES = json.dumps(BODY).encode()
COMPLETION = json.dumps(
    {
        "id": "c1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 0}},
    }
).encode()
EVENTS = [
    b'data: {"choices": [{"index": 0, "delta": {"content": "Hel"}}]}\n\n',
    b'data: {"choices": [{"index": 0, "delta": {"content": "lo"}}]}\n\n',
]


def answer(status: int, body: bytes, content_type: str = "application/json", **headers: str) -> httpx.Response:
    """A response whose body is still to be read, the way a network transport returns one."""
    return httpx.Response(status, headers={"content-type": content_type, **headers}, stream=Parts([body]))


@dataclass(frozen=True)
class Outcome:
    """What a caller can observe of one request."""

    status: int | None = None
    content_type: str | None = None
    chunks: tuple[bytes, ...] = ()
    raised: type[BaseException] | None = None
    json_raised: type[BaseException] | None = None
    """What ``response.json()`` raised (bodies read whole only)."""


@dataclass
class _Seen:
    status: int | None = None
    content_type: str | None = None
    chunks: list[bytes] = field(default_factory=list)
    raised: type[BaseException] | None = None
    json_raised: type[BaseException] | None = None

    def response(self, response: httpx.Response, read: bool) -> None:
        self.status, self.content_type = response.status_code, response.headers.get("content-type")
        if read:
            self.chunks.append(response.content)
            try:
                response.json()
            except Exception as exc:
                self.json_raised = type(exc)

    def outcome(self) -> Outcome:
        return Outcome(self.status, self.content_type, tuple(self.chunks), self.raised, self.json_raised)


def _sync_outcome(transport: httpx.BaseTransport, args: dict[str, Any], streamed: bool) -> Outcome:
    seen = _Seen()
    with httpx.Client(transport=transport, timeout=5) as client:
        try:
            if streamed:
                with client.stream(**args) as response:
                    seen.response(response, read=False)
                    seen.chunks.extend(response.iter_raw())
            else:
                seen.response(client.request(**args), read=True)
        except Exception as exc:
            seen.raised = type(exc)
    return seen.outcome()


async def _async_outcome(transport: httpx.AsyncBaseTransport, args: dict[str, Any], streamed: bool) -> Outcome:
    seen = _Seen()
    async with httpx.AsyncClient(transport=transport, timeout=5) as client:
        try:
            if streamed:
                async with client.stream(**args) as response:
                    seen.response(response, read=False)
                    async for chunk in response.aiter_raw():
                        seen.chunks.append(chunk)
            else:
                seen.response(await client.request(**args), read=True)
        except Exception as exc:
            seen.raised = type(exc)
    return seen.outcome()


@dataclass
class Run:
    """One request sent bare and wrapped: what the caller saw each time, and what each inner transport got."""

    bare: Outcome
    wrapped: Outcome
    received_bare: list[httpx.Request]
    received_wrapped: list[httpx.Request]
    transport: Transport

    @property
    def turns(self) -> list[Turn]:
        return self.transport.ledger.turns()

    @property
    def turn(self) -> Turn:
        (turn,) = self.turns
        return turn


def _inner(mode: str, handler: Handler | None, received: list[httpx.Request]) -> Any:
    """The real HTTP transport of ``mode`` when there is no handler, else a mock keeping what it receives."""
    if handler is None:
        return httpx.HTTPTransport() if mode == "sync" else httpx.AsyncHTTPTransport()

    def handle(request: httpx.Request) -> httpx.Response:
        received.append(request)
        return handler(request)

    return httpx.MockTransport(handle)


def observe(
    mode: str,
    handler: Handler | None,
    args: Callable[[], dict[str, Any]] | dict[str, Any],
    *,
    streamed: bool = False,
    **options: Any,
) -> Run:
    """Send ``args`` (``client.request`` keywords, or a factory of them) bare, then through the transport."""
    make_args = args if callable(args) else lambda: dict(args)
    received_bare: list[httpx.Request] = []
    received_wrapped: list[httpx.Request] = []
    bare_inner, wrapped_inner = _inner(mode, handler, received_bare), _inner(mode, handler, received_wrapped)
    options = {"server": "llama.cpp", **options}
    if mode == "sync":
        sync = CacheAwareTransport(wrapped_inner, **options)
        bare = _sync_outcome(bare_inner, make_args(), streamed)
        return Run(bare, _sync_outcome(sync, make_args(), streamed), received_bare, received_wrapped, sync)
    wrapper = AsyncCacheAwareTransport(wrapped_inner, **options)
    bare = asyncio.run(_async_outcome(bare_inner, make_args(), streamed))
    wrapped = asyncio.run(_async_outcome(wrapper, make_args(), streamed))
    return Run(bare, wrapped, received_bare, received_wrapped, wrapper)


def chat(body: bytes = BODY_BYTES, url: str = CHAT_URL, **headers: str) -> dict[str, Any]:
    return {"method": "POST", "url": url, "content": body, "headers": {"content-type": "application/json", **headers}}


def closed_port() -> int:
    """A local port nothing listens on: bound, then closed."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def assert_no_prediction(turn: Turn) -> None:
    assert (turn.predicted_prompt_tokens, turn.predicted_cached, turn.cause) == (None, None, None)


# -- the engine does not answer ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_engine_down_raises_the_same_connect_error(mode: str) -> None:
    run = observe(mode, None, chat(url=f"http://127.0.0.1:{closed_port()}/v1/chat/completions"))
    assert run.bare.raised is httpx.ConnectError
    assert run.wrapped == run.bare
    turn = run.turn
    assert turn.status is None
    assert turn.error is not None and turn.error.startswith("ConnectError")
    assert_no_prediction(turn)


@pytest.mark.parametrize("mode", MODES)
def test_timeout_raises_the_same_timeout(mode: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out reading the response", request=request)

    run = observe(mode, handler, chat())
    assert run.bare.raised is httpx.ReadTimeout
    assert run.wrapped == run.bare
    turn = run.turn
    assert turn.status is None
    assert turn.error is not None and turn.error.startswith("ReadTimeout")
    assert_no_prediction(turn)


def test_cancelled_request_is_recorded() -> None:
    """An asyncio timeout cancels the request mid-flight (CancelledError is a BaseException): the ledger says so.

    Async only: a blocking call cannot be cancelled.
    """

    async def never(request: httpx.Request) -> httpx.Response:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    async def main() -> AsyncCacheAwareTransport:
        transport = AsyncCacheAwareTransport(httpx.MockTransport(never), server="llama.cpp")
        async with httpx.AsyncClient(transport=transport) as client:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(client.post(CHAT_URL, content=BODY_BYTES), 0.2)
        return transport

    turns = asyncio.run(main()).ledger.turns()
    assert len(turns) == 1, "a cancelled request leaves no turn in the ledger"
    assert turns[0].status is None and turns[0].error is not None


# -- the engine answers badly --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_5xx_passes_through_unchanged(mode: str) -> None:
    error = json.dumps({"error": {"message": "server overloaded", "type": "server_error", "code": 503}}).encode()
    run = observe(mode, lambda request: answer(503, error), chat())
    assert run.bare == Outcome(503, "application/json", (error,))
    assert run.wrapped == run.bare
    turn = run.turn
    assert (turn.status, turn.error, turn.reported_prompt_tokens, turn.reported_cached) == (503, None, None, None)
    assert_no_prediction(turn)


@pytest.mark.parametrize("mode", MODES)
def test_a_response_read_before_it_is_returned_is_recorded(mode: str) -> None:
    """A transport may hand back a response whose body it already read (``httpx.Response(content=...)``)."""
    error = b'{"error": "server overloaded"}'
    run = observe(mode, lambda request: httpx.Response(503, content=error), chat())
    assert run.wrapped == run.bare
    assert [(t.status, t.error) for t in run.turns] == [(503, None)], "not recorded, or recorded as cut short"


@pytest.mark.parametrize("mode", MODES)
def test_malformed_json_passes_through_unchanged(mode: str) -> None:
    body = b'{"choices": ['
    run = observe(mode, lambda request: answer(200, body), chat())
    assert run.bare.chunks == (body,)
    assert run.bare.json_raised is json.JSONDecodeError
    assert run.wrapped == run.bare
    turn = run.turn
    assert turn.status == 200
    assert turn.error is not None and "not JSON" in turn.error
    assert turn.reported_prompt_tokens is None


@pytest.mark.parametrize("mode", MODES)
def test_stream_cut_midway_gives_the_same_chunks_then_the_same_error(mode: str) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        cut = httpx.RemoteProtocolError("peer closed connection without sending complete message body")
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Parts(EVENTS, cut))

    body = json.dumps({**BODY, "stream": True}).encode()
    run = observe(mode, handler, chat(body), streamed=True)
    assert run.bare == Outcome(200, "text/event-stream", tuple(EVENTS), httpx.RemoteProtocolError)
    assert run.wrapped == run.bare
    turn = run.turn
    assert turn.stream and turn.status == 200
    assert turn.error is not None and turn.error.startswith("RemoteProtocolError")


def test_stream_cancelled_midway_is_recorded_as_cut() -> None:
    """A stream stalls and the caller's asyncio timeout cancels it: the turn must not read as a clean one."""

    class Stalls(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            yield EVENTS[0]
            await asyncio.Event().wait()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=Stalls())

    async def main() -> AsyncCacheAwareTransport:
        transport = AsyncCacheAwareTransport(httpx.MockTransport(handler), server="llama.cpp")
        async with httpx.AsyncClient(transport=transport) as client:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(client.post(CHAT_URL, content=json.dumps({**BODY, "stream": True})), 0.2)
        return transport

    (turn,) = asyncio.run(main()).ledger.turns()
    assert turn.error is not None, "a stream cancelled after one event is recorded with no error"


@pytest.mark.parametrize("streamed", [False, True], ids=["read", "raw"])
@pytest.mark.parametrize("mode", MODES)
def test_corrupt_gzip_body_fails_as_it_would_without_agentcache(mode: str, streamed: bool) -> None:
    """Read whole, httpx raises DecodingError; read raw, the caller gets the bytes. The tap must change neither."""
    run = observe(mode, lambda request: answer(200, b"this is not gzip", **{"content-encoding": "gzip"}), chat(),
                  streamed=streamed)
    assert run.bare.raised is (None if streamed else httpx.DecodingError)
    assert run.wrapped == run.bare
    assert run.turn.error is not None


@pytest.mark.parametrize("mode", MODES)
def test_stream_with_invalid_utf8_passes_through(mode: str) -> None:
    body = b'data: {"choices": [{"index": 0, "delta": {"content": "\xff"}}]}\n\ndata: [DONE]\n\n'
    run = observe(mode, lambda request: answer(200, body, "text/event-stream"),
                  chat(json.dumps({**BODY, "stream": True}).encode()), streamed=True)
    assert run.bare == Outcome(200, "text/event-stream", (body,))
    assert run.wrapped == run.bare
    assert len(run.turns) == 1


@pytest.mark.parametrize("mode", MODES)
def test_an_unwritable_trace_does_not_fail_the_request(mode: str, tmp_path: Path) -> None:
    recorder = TraceRecorder(tmp_path / "missing-folder" / "trace.jsonl")
    with pytest.warns(UserWarning, match="not written"):  # said, not raised
        run = observe(mode, lambda request: answer(200, COMPLETION), chat(), recorder=recorder)
        settle()  # the turn is recorded, and its trace line written, in the background
    assert run.bare == Outcome(200, "application/json", (COMPLETION,))
    assert run.wrapped == run.bare


# -- requests the transport cannot handle go out byte-identical -----------------------------------------------

DUPLICATE_TOOLS = {
    **BODY,
    "tools": [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}] * 2,
}
DEEP: Any = "bottom"
for _ in range(140):
    DEEP = [DEEP]
TOO_DEEP = {**BODY, "extra": DEEP}


def _refusal(body: dict[str, Any], error: type[Exception]) -> str:
    """The passthrough reason the ledger should give: the error canonicalize raises on ``body``."""
    with pytest.raises(error) as refused:
        canonicalize(body)
    return f"not canonicalized: {refused.value}"


PASSTHROUGH: dict[str, tuple[bytes, Callable[[str], bool]]] = {
    "not-json": (b"not json", lambda reason: reason.startswith("body is not JSON")),
    "not-chat": (b'{"prompt": "x"}', lambda reason: reason.startswith("not a chat request")),
    "messages-not-array": (b'{"messages": "Hi"}', lambda reason: reason.startswith("not a chat request")),
    "duplicate-tools": (
        json.dumps(DUPLICATE_TOOLS).encode(),
        lambda reason: reason == _refusal(DUPLICATE_TOOLS, DuplicateToolError),
    ),
    "too-deep": (json.dumps(TOO_DEEP).encode(), lambda reason: reason == _refusal(TOO_DEEP, NestingTooDeepError)),
    "number-a-parse-changes": (
        b'{"messages": [], "seed": 123456789012345678901234567890}',
        lambda reason: reason.startswith("not canonicalized: $.seed: the number 123456789012345678901234567890 "),
    ),
}


@pytest.mark.parametrize("case", PASSTHROUGH)
@pytest.mark.parametrize("mode", MODES)
def test_request_that_cannot_be_canonicalized_is_sent_byte_identical(mode: str, case: str) -> None:
    body, reason_ok = PASSTHROUGH[case]
    run = observe(mode, lambda request: answer(400, b'{"error": "bad request"}'), chat(body))
    (bare,), (wrapped,) = run.received_bare, run.received_wrapped
    assert wrapped.content == bare.content == body
    assert wrapped.headers.multi_items() == bare.headers.multi_items()
    assert run.wrapped == run.bare
    turn = run.turn
    assert turn.status == 400 and not turn.canonicalized
    assert turn.passthrough is not None and reason_ok(turn.passthrough), turn.passthrough


NON_CHAT: dict[str, dict[str, Any]] = {
    "models": {"method": "GET", "url": "http://engine/v1/models"},
    "embeddings": {"method": "POST", "url": "http://engine/v1/embeddings",
                   "content": b'{ "input" : "Hi",  "model": "tiny" }'},
}


@pytest.mark.parametrize("case", NON_CHAT)
@pytest.mark.parametrize("mode", MODES)
def test_non_chat_requests_pass_untouched_and_unrecorded(mode: str, case: str) -> None:
    reply = b'{"object": "list", "data": []}'
    run = observe(mode, lambda request: answer(200, reply), NON_CHAT[case])
    (bare,), (wrapped,) = run.received_bare, run.received_wrapped
    assert (wrapped.method, wrapped.url, wrapped.content) == (bare.method, bare.url, bare.content)
    assert wrapped.headers.multi_items() == bare.headers.multi_items()
    assert run.wrapped == run.bare == Outcome(200, "application/json", (reply,))
    assert run.turns == []


@pytest.mark.parametrize("mode", MODES)
def test_assistants_thread_messages_are_not_chat_turns(mode: str) -> None:
    """``POST /v1/threads/{id}/messages`` (OpenAI Assistants) ends in ``/messages`` but is no chat request."""
    content = b'{"role": "user", "content": "Hi"}'
    args = {"method": "POST", "url": "http://engine/v1/threads/thread_1/messages", "content": content}
    run = observe(mode, lambda request: answer(200, b'{"id": "msg_1"}'), args)
    assert run.received_wrapped[0].content == content
    assert run.wrapped == run.bare
    assert run.turns == [], [t.passthrough for t in run.turns]


# -- what is sent ---------------------------------------------------------------------------------------------

#: Non-canonical on purpose: CRLF in prose, tools out of name order, keys out of order, spaces in the JSON.
DRIFTY = json.dumps(
    {
        "tools": [
            {"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}},
            {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}},
        ],
        "model": "tiny",
        "messages": [{"role": "system", "content": "Be brief.\r\nBe kind."}, {"role": "user", "content": "Hi"}],
    },
    indent=1,
).encode()


@pytest.mark.parametrize("mode", MODES)
def test_canonicalize_off_sends_byte_identical(mode: str) -> None:
    run = observe(mode, lambda request: answer(200, COMPLETION), chat(DRIFTY), canonicalize=False)
    assert run.received_wrapped[0].content == DRIFTY
    assert run.wrapped == run.bare
    turn = run.turn
    assert (turn.canonicalized, turn.passthrough) == (False, "canonicalization switched off")
    assert turn.predicted_cached is not None  # still accounted for


@pytest.mark.parametrize("mode", MODES)
def test_canonical_mode_sends_canonical_bytes(mode: str) -> None:
    run = observe(mode, lambda request: answer(200, COMPLETION), chat(DRIFTY))
    expected = canonical_json(canonicalize(json.loads(DRIFTY)))
    assert expected != DRIFTY
    (sent,) = run.received_wrapped
    assert sent.content == expected
    assert sent.headers["content-length"] == str(len(expected))
    assert run.wrapped == run.bare
    turn = run.turn
    assert (turn.canonicalized, turn.passthrough, turn.error) == (True, None, None)
    assert turn.reported_prompt_tokens == json.loads(COMPLETION)["usage"]["prompt_tokens"]


def _chunked(mode: str) -> dict[str, Any]:
    """A chat request whose body is a generator, so httpx frames it with ``Transfer-Encoding: chunked``."""
    half = len(DRIFTY) // 2

    def parts() -> Iterator[bytes]:
        yield from (DRIFTY[:half], DRIFTY[half:])

    async def aparts() -> AsyncIterator[bytes]:
        for part in parts():
            yield part

    return {"method": "POST", "url": CHAT_URL, "content": parts() if mode == "sync" else aparts()}


@pytest.mark.parametrize("mode", MODES)
def test_canonicalized_chunked_request_keeps_one_framing(mode: str) -> None:
    """RFC 9112 6.3: a request must not carry both Transfer-Encoding and Content-Length."""
    run = observe(mode, lambda request: answer(200, COMPLETION), lambda: _chunked(mode))
    (bare,), (sent,) = run.received_bare, run.received_wrapped
    assert bare.headers.get("transfer-encoding") == "chunked"
    assert sent.content == canonical_json(canonicalize(json.loads(DRIFTY)))
    framing = [name for name in ("transfer-encoding", "content-length") if name in sent.headers]
    assert len(framing) == 1, f"sent with both framings: {dict(sent.headers)}"


@pytest.mark.parametrize("mode", MODES)
def test_gzip_response_is_passed_encoded_and_read_decoded(mode: str) -> None:
    encoded = gzip.compress(COMPLETION)
    run = observe(mode, lambda request: answer(200, encoded, **{"content-encoding": "gzip"}), chat(), streamed=True)
    assert run.bare.chunks == (encoded,)
    assert run.wrapped == run.bare
    assert run.turn.reported_prompt_tokens == json.loads(COMPLETION)["usage"]["prompt_tokens"]
