"""ResponseTap reads usage and output from a response body however the bytes are split, without altering them."""

from __future__ import annotations

import gc
import gzip
import json
import weakref
import zlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentcache.transport import tap as tap_module
from agentcache.transport.tap import ResponseTap, TappedStream, TapResult
from agentcache.usage import CacheUsage

DELTAS = ["Héllo", " wörld, ", "日本語 ", "🙂"]
USAGE: dict[str, Any] = {"prompt_tokens": 40, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 32}}
OPENAI_STREAM = (
    b"".join(
        b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": d}}], "usage": None},
                               ensure_ascii=False).encode() + b"\n\n"
        for d in DELTAS
    )
    + b"data: " + json.dumps({"choices": [], "usage": USAGE}).encode() + b"\n\n"
    + b"data: [DONE]\n\n"
)
ANTHROPIC_USAGE = {"input_tokens": 5, "cache_read_input_tokens": 30, "cache_creation_input_tokens": 7,
                   "output_tokens": 1}


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


ANTHROPIC_STREAM = b"".join(
    [
        _event("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "content": [], "usage": ANTHROPIC_USAGE}}),
        _event("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}}),
        *(_event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": d}}) for d in DELTAS),
        _event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        _event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                                 "usage": {"output_tokens": len(DELTAS)}}),
        _event("message_stop", {"type": "message_stop"}),
    ]
)
COMPLETION = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "".join(DELTAS)}}], "usage": USAGE}
COMPLETION_BYTES = json.dumps(COMPLETION).encode()


def tapped(
    chunks: list[bytes], content_type: str, encoding: str | None = None, ended: bool = False
) -> tuple[TapResult, int]:
    """Feed ``chunks`` to a tap on a response with these headers (``ended``: the body ended there, not the caller
    closing it), close it: (result, times on_close was called)."""
    headers = {"content-type": content_type} | ({} if encoding is None else {"content-encoding": encoding})
    results: list[ResponseTap] = []
    tap = ResponseTap(httpx.Response(200, headers=headers), results.append)
    for chunk in chunks:
        tap.feed(chunk)
    if ended:
        tap.end()
    tap.close()
    tap.close()
    return results[0].read(), len(results)


def splits(data: bytes) -> Iterator[list[bytes]]:
    """Every byte alone, then every cut into two parts (mid-UTF-8 and mid-line cuts among them)."""
    yield [data[i : i + 1] for i in range(len(data))]
    for cut in range(1, len(data)):
        yield [data[:cut], data[cut:]]


def test_splits_include_cuts_inside_a_utf8_character() -> None:
    continuation = [i for i, byte in enumerate(OPENAI_STREAM) if byte & 0b1100_0000 == 0b1000_0000]
    assert continuation, "the stream must hold multi-byte characters for the split tests to mean anything"


@pytest.mark.parametrize("newline", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_openai_stream_read_whole_however_split(newline: bytes) -> None:
    stream = OPENAI_STREAM.replace(b"\n", newline)
    expected_usage = CacheUsage.from_usage(USAGE)
    for chunks in splits(stream):
        result, closes = tapped(chunks, "text/event-stream; charset=utf-8")
        assert closes == 1
        assert (result.text, result.usage, result.raw_usage) == ("".join(DELTAS), expected_usage, USAGE), chunks
        assert result.complete and result.error is None and result.notes == []


def test_usage_is_taken_from_the_final_chunk() -> None:
    result, _ = tapped([OPENAI_STREAM], "text/event-stream")
    assert result.usage is not None
    assert (result.usage.prompt_tokens, result.usage.cached_tokens) == (
        USAGE["prompt_tokens"], USAGE["prompt_tokens_details"]["cached_tokens"])


def test_anthropic_usage_comes_from_message_start() -> None:
    for chunks in splits(ANTHROPIC_STREAM):
        result, _ = tapped(chunks, "text/event-stream")
        assert result.usage is not None, chunks
        prompt = sum(ANTHROPIC_USAGE[k] for k in ("input_tokens", "cache_read_input_tokens",
                                                   "cache_creation_input_tokens"))
        assert (result.usage.prompt_tokens, result.usage.cached_tokens) == (
            prompt, ANTHROPIC_USAGE["cache_read_input_tokens"])
        assert result.usage.cache_write_tokens == ANTHROPIC_USAGE["cache_creation_input_tokens"]
        assert result.text == "".join(DELTAS)
        assert result.complete and result.error is None


def test_stream_without_end_event_is_incomplete() -> None:
    cut = OPENAI_STREAM[: OPENAI_STREAM.index(b"data: [DONE]")]
    result, _ = tapped([cut], "text/event-stream")
    assert not result.complete
    assert result.usage == CacheUsage.from_usage(USAGE)


def test_a_stream_the_server_ended_without_its_end_event_is_cut_not_a_reply() -> None:
    cut = OPENAI_STREAM[: OPENAI_STREAM.index(b"data: [DONE]")]
    result, _ = tapped([cut], "text/event-stream", ended=True)
    assert result.error == tap_module.CUT
    assert result.usage == CacheUsage.from_usage(USAGE)  # what the stream did say is kept
    whole, _ = tapped([OPENAI_STREAM], "text/event-stream", ended=True)
    assert whole.complete and whole.error is None


def test_a_stream_that_sends_an_error_event_is_recorded_with_it() -> None:
    """A gateway whose worker died mid-answer sends an error event, then its end event, on a 200 stream."""
    first = OPENAI_STREAM[: OPENAI_STREAM.index(b"\n\n") + 2]
    failed = first + b'data: {"error": {"message": "Stream error: unexpected EOF"}}\n\ndata: [DONE]\n\n'
    result, _ = tapped([failed], "text/event-stream", ended=True)
    assert result.complete and result.server_error == "Stream error: unexpected EOF"
    assert result.error == tap_module.ERROR_EVENT.format("Stream error: unexpected EOF")


def test_event_that_is_not_json_is_noted_and_skipped() -> None:
    result, _ = tapped([b"data: {not json\n\n" + OPENAI_STREAM], "text/event-stream")
    assert result.text == "".join(DELTAS) and result.complete
    assert len(result.notes) == 1


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
def test_compressed_json_body_is_decoded_for_reading(encoding: str) -> None:
    encoded = gzip.compress(COMPLETION_BYTES) if encoding == "gzip" else zlib.compress(COMPLETION_BYTES)
    chunks = [encoded[i : i + 7] for i in range(0, len(encoded), 7)]
    result, _ = tapped(chunks, "application/json", encoding)
    assert result.error is None and result.complete
    assert result.usage == CacheUsage.from_usage(USAGE)
    assert result.text == "".join(DELTAS)


def test_brotli_body_leaves_usage_unread_with_a_note() -> None:
    result, closes = tapped([b"\x8b\x02\x80not really brotli"], "application/json", "br")
    assert closes == 1
    assert result.usage is None and not result.complete
    assert result.error is not None and "'br'" in result.error


def test_body_over_the_limit_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tap_module, "MAX_BODY_BYTES", len(COMPLETION_BYTES) - 1)
    chunks = [COMPLETION_BYTES[:10], COMPLETION_BYTES[10:]]
    result, _ = tapped(chunks, "application/json")
    assert result.usage is None and not result.complete
    assert result.error is not None and str(len(COMPLETION_BYTES) - 1) in result.error


def test_body_at_the_limit_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tap_module, "MAX_BODY_BYTES", len(COMPLETION_BYTES))
    result, _ = tapped([COMPLETION_BYTES[:10], COMPLETION_BYTES[10:]], "application/json")
    assert result.error is None and result.usage == CacheUsage.from_usage(USAGE)


@pytest.mark.parametrize(
    ("data", "content_type", "encoding"),
    [
        (OPENAI_STREAM, "text/event-stream", None),
        (ANTHROPIC_STREAM, "text/event-stream", None),
        (gzip.compress(COMPLETION_BYTES), "application/json", "gzip"),
    ],
    ids=["openai-stream", "anthropic-stream", "gzip-json"],
)
def test_a_body_past_what_the_tap_keeps_is_read_as_it_passes_to_the_same_result(
    monkeypatch: pytest.MonkeyPatch, data: bytes, content_type: str, encoding: str | None
) -> None:
    chunks = [data[i : i + 16] for i in range(0, len(data), 16)]
    kept, _ = tapped(chunks, content_type, encoding, ended=True)
    monkeypatch.setattr(tap_module, "KEEP_BYTES", 40)
    passing, _ = tapped(chunks, content_type, encoding, ended=True)
    assert kept.complete and kept.error is None and kept.usage is not None
    assert passing == kept


def test_closing_reads_nothing_reading_is_left_to_whoever_records_the_turn() -> None:
    """The caller's thread (an async client's event loop) only hands the chunks on; :meth:`ResponseTap.read` reads
    them, once, wherever the turn is recorded."""
    taps: list[ResponseTap] = []
    tap = ResponseTap(httpx.Response(200, headers={"content-type": "application/json"}), taps.append)
    tap.feed(b"{not json")
    tap.end()
    tap.close()
    assert taps == [tap] and tap.result.error is None
    result = tap.read()
    assert result.error is not None and result.error.startswith("response body is not JSON")
    assert tap.read() is result


def test_close_with_an_error_records_it_once() -> None:
    results: list[ResponseTap] = []
    tap = ResponseTap(httpx.Response(200, headers={"content-type": "text/event-stream"}), results.append)
    tap.feed(OPENAI_STREAM[:40])
    tap.close(httpx.RemoteProtocolError("peer closed connection"))
    tap.close()
    assert len(results) == 1
    assert results[0].read().error == "RemoteProtocolError: peer closed connection"


class _Chunks(httpx.SyncByteStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        yield from self.chunks


def test_tapped_stream_passes_every_chunk_unchanged() -> None:
    chunks = [OPENAI_STREAM[i : i + 5] for i in range(0, len(OPENAI_STREAM), 5)]
    results: list[ResponseTap] = []
    response = httpx.Response(200, headers={"content-type": "text/event-stream"})
    stream = TappedStream(_Chunks(chunks), ResponseTap(response, results.append))
    assert list(stream) == chunks
    stream.close()
    assert results[0].read().text == "".join(DELTAS)


def test_a_closed_stream_lets_go_of_the_turn_though_a_reference_cycle_still_holds_the_stream() -> None:
    """httpx keeps a response in a reference cycle: whatever the stream holds would wait for the garbage
    collector (allocations that trigger collections, and full collections that pause the event loop)."""

    class Recorder:
        def __call__(self, tap: ResponseTap) -> None:
            self.result = tap.read()

    recorder = Recorder()
    alive = weakref.ref(recorder)
    response = httpx.Response(200, headers={"content-type": "application/json"})
    stream = TappedStream(_Chunks([b'{"usage": null}']), ResponseTap(response, recorder))
    cycle: list[Any] = [stream]
    cycle.append(cycle)
    del recorder
    gc.disable()
    try:
        assert list(stream) == [b'{"usage": null}']
        assert alive() is not None
        stream.close()
        assert alive() is None  # freed by its reference count, no collection needed
    finally:
        gc.enable()
    with pytest.raises(httpx.StreamClosed):
        list(stream)


def test_a_body_the_tap_fails_to_read_is_recorded_as_such(monkeypatch: pytest.MonkeyPatch) -> None:
    """An error while reading the kept body (on the background thread) becomes the turn's error: the turn is
    recorded, never lost, and the kept bytes are let go."""
    body = b'{"usage": {"prompt_tokens": 3}}'
    tap = ResponseTap(httpx.Response(200, headers={"content-type": "application/json"}), lambda tap: None)

    def fail(data: Any, streamed: bool) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(tap, "_read", fail)
    tap.feed(body)
    tap.end()
    tap.close()
    result = tap.read()
    assert result.error is not None and "RuntimeError: boom" in result.error
    assert tap.read() is result


def test_a_chunk_after_the_close_is_not_read() -> None:
    """A body iterator resumed after the caller closed the response: the tap read (or is reading) what it had."""
    tap = ResponseTap(httpx.Response(200, headers={"content-type": "application/json"}), lambda tap: None)
    tap.feed(b'{"usage": {"prompt_tokens": 3, "completion_tokens": 1}}')
    tap.end()
    tap.close()
    tap.feed(b"trailing bytes")
    result = tap.read()
    assert result.error is None and result.usage is not None and result.usage.prompt_tokens == 3
