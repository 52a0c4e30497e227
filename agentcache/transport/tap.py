"""Watch a response body go by, without holding it up, and read what the ledger needs from it.

The caller gets every byte as the server sent it, when it arrives: the tap sees each chunk on its way, and keeps
it to read once the body is done, off the caller's thread (:meth:`ResponseTap.read`). Reading, it keeps a JSON
body (up to a limit) to parse at the end; a server-sent-events stream it parses event by event, keeping only the
usage, the output text and token ids. Content-Encoding gzip and deflate are decoded for reading (the caller still
gets the encoded bytes); other encodings leave the usage unread.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson

from agentcache.backends.openai_compat import SSEParser, output_token_ids
from agentcache.predict.provider import ProviderDiagnosis, read_diagnosis
from agentcache.usage import CacheUsage

#: A non-streamed body larger than this is passed on but not parsed (no chat completion is this large).
MAX_BODY_BYTES = 64 * 1024 * 1024
#: The bytes of a body a tap keeps to read after the call (:class:`ResponseTap`); past them it reads as they pass.
KEEP_BYTES = 1024 * 1024
#: The error of a response the caller closed before reading any of its body (openai does, to retry a 5xx).
UNREAD = "closed unread: the caller closed the response before reading its body (0 bytes)"
#: The error of a response the caller closed part-way (a stream it stopped reading), with the bytes it read.
ABANDONED = "abandoned: the caller closed the response after {:,} bytes, before its end"
#: The error of an event stream whose body ended without its end event: the server or a proxy closed it. Not a
#: reply without usage.
CUT = "cut: the event stream ended before its end event (data: [DONE] or message_stop)"
#: The error of an event stream that answered 200 and then sent an error event: a gateway whose worker died
#: mid-answer does (SMG: "Stream error: error decoding response body"), and so does a server failing mid-stream.
ERROR_EVENT = "the event stream sent an error: {}"


def closed_by_caller(error: str | None) -> bool:
    """Whether a turn's error is the caller closing its response early (:data:`UNREAD` or :data:`ABANDONED`): the
    caller's choice, which readers of a turn must not count as a failed call."""
    return error is not None and (error == UNREAD or error.startswith(ABANDONED.partition("{")[0]))


@dataclass
class TapResult:
    """What was read from one response body."""

    complete: bool = False
    """The body arrived whole (a stream reached its end event, or the JSON body its last byte). A whole body
    without usage is complete with ``usage`` None and no error."""
    usage: CacheUsage | None = None
    raw_usage: dict[str, Any] | None = None
    text: str = ""
    output_ids: list[int] | None = None
    error: str | None = None
    """Why the body could not be read: the exception that cut it, the caller closing it before its end
    (:data:`UNREAD`, or :data:`ABANDONED` with the bytes read), or an event stream's error event
    (:data:`ERROR_EVENT`) or missing end event (:data:`CUT`)."""
    notes: list[str] = field(default_factory=list)
    server_error: str | None = None
    """The message of an error answer's JSON body (``{"error": {"message": ...}}``), as the server wrote it."""
    response_id: str | None = None
    """The response's ``id`` (``msg_...``, ``resp_...``, ``chatcmpl-...``): what the next turn's diagnostics
    request names."""
    diagnosis: ProviderDiagnosis | None = None
    """The provider's own cache-miss diagnosis, when the response carried one."""
    raw_diagnosis: dict[str, Any] | None = None
    """That diagnosis as the response carried it (``{"diagnostics": ...}`` or ``{"prompt_cache_diagnostics": ...}``),
    for the trace."""


def _unreadable(error: Exception) -> str:
    """The error of a body the tap could not read (corrupt gzip, invalid UTF-8 in a stream, a failure reading it)."""
    return f"body could not be read ({type(error).__name__}: {error}); usage not read"


class ResponseTap:
    """The reading half, shared by the sync and async streams: ``feed`` each chunk, then ``close`` once, then
    :meth:`read` what the body said, on any thread.

    Reading a body (parsing it, finding the usage, the output and the diagnosis) costs the thread that feeds the tap
    more than the rest of agentcache's work on a response, and for an async client that thread is the event loop,
    which every concurrent request waits for. So the tap only keeps the chunks (the very bytes the caller gets, not a
    copy), and :meth:`read` reads them, where the middleware records the turn (its background thread). A body past
    :data:`KEEP_BYTES` is read as it passes from there on, so no more than that is held for a response.
    """

    def __init__(self, response: httpx.Response, on_close: Callable[[ResponseTap], object]) -> None:
        self.result = TapResult()
        self._on_close = on_close
        self._headers = response.headers
        self._closed = False
        self._cut: str | None = None
        """The error that cut the body short, as the turn records it."""
        self._ended = False
        self._received = 0
        self._kept: list[bytes] | None = []
        """The chunks not read yet; None once reading started."""
        self._kept_bytes = 0
        self._done = False
        self._broken = False
        self._sse = False
        self._parser: SSEParser | None = None
        self._body = bytearray()
        self._inflate: Any = None

    def feed(self, chunk: bytes) -> None:
        """Take one chunk. Never raises: a body the tap cannot read is the tap's problem, not the caller's."""
        if self._closed:  # a chunk after the close (an iterator resumed): the body was read, or is being read
            return
        self._received += len(chunk)
        if self._kept is None:
            self._read_chunk(chunk)
            return
        self._kept.append(chunk)
        self._kept_bytes += len(chunk)
        if self._kept_bytes > KEEP_BYTES:
            self._catch_up()

    def _catch_up(self) -> None:
        """Read the chunks kept, and from now on each chunk as it comes."""
        kept, self._kept = self._kept, None
        if kept is None:
            return
        self._sse = self._headers.get("content-type", "").startswith("text/event-stream")
        self._parser = SSEParser() if self._sse else None
        encoding = self._headers.get("content-encoding", "identity").strip().lower()
        self._inflate = _inflater(encoding)
        if self._inflate is None and encoding not in ("", "identity"):
            self.result.error = f"body encoded as {encoding!r}: usage not read"
        for chunk in kept:
            self._read_chunk(chunk)

    def _read_chunk(self, chunk: bytes) -> None:
        if self._broken:
            return
        try:
            self._feed(chunk)
        except Exception as exc:  # corrupt gzip, invalid UTF-8 in a stream, ...
            self._broken = True
            self.result.error = _unreadable(exc)

    def _feed(self, chunk: bytes) -> None:
        if self.result.error is not None and not self._sse:
            return
        data = chunk if self._inflate is None else self._inflate.decompress(chunk)
        if not self._sse:
            if len(self._body) + len(data) > MAX_BODY_BYTES:
                self.result.error = f"body larger than {MAX_BODY_BYTES} bytes: usage not read"
                self._body.clear()
            else:
                self._body += data
            return
        assert self._parser is not None
        for event in self._parser.feed(data):
            if event.strip() == "[DONE]":
                self.result.complete = True
                continue
            try:
                self._read(orjson.loads(event), streamed=True)
            except orjson.JSONDecodeError:
                self.result.notes.append("an event that is not JSON was skipped")

    def end(self) -> None:
        """The body arrived to its last byte: a close after this is not the caller giving up early."""
        self._ended = True

    def close(self, error: BaseException | None = None) -> None:
        """The body is done (idempotent); ``error`` is what cut it short, if anything did. Tells ``on_close``."""
        if self._closed:
            return
        self._closed = True
        if error is not None:
            self._cut = f"{type(error).__name__}: {error}".rstrip(": ")
        try:
            self._on_close(self)
        except Exception as exc:  # recording must never fail the caller's request
            warnings.warn(f"agentcache: a turn could not be recorded ({type(exc).__name__}: {exc})", stacklevel=2)

    def read(self) -> TapResult:
        """What the body said, once the tap is closed: read at the first call, the same result after.

        Without an error, a close before :meth:`end` is the caller's: it closed the response unread, or gave up
        on it part-way. That is recorded as such, not as a body that is not JSON or a reply without usage."""
        if self._done:
            return self.result
        self._done = True
        try:
            self._conclude()
        except Exception as exc:  # a body the tap cannot read is recorded as such, the turn is not lost
            self.result.error = _unreadable(exc)
        self._body = bytearray()  # parsed: what it said is in the result
        return self.result

    def _conclude(self) -> None:
        self._catch_up()
        if self._cut is not None:
            self.result.error = self._cut
        elif self.result.error is None and not self._broken:
            unparsed = None if self._sse else self._parse()
            if not (self._ended or self.result.complete):
                self.result.error = ABANDONED.format(self._received) if self._received else UNREAD
            elif not self._sse:
                self.result.error = unparsed
            elif self.result.server_error is not None:
                self.result.error = ERROR_EVENT.format(self.result.server_error)
            elif not self.result.complete:
                self.result.error = CUT

    def _parse(self) -> str | None:
        """Parse the JSON body kept; why it could not be, or None."""
        try:
            body = orjson.loads(bytes(self._body))
        except orjson.JSONDecodeError as exc:
            return f"response body is not JSON ({exc})"
        self.result.complete = True
        self._read(body, streamed=False)
        return None

    def _read(self, body: Any, streamed: bool) -> None:
        if not isinstance(body, Mapping):
            return
        message = body.get("message")  # Anthropic's message_start carries the usage inside the message
        for source in (body, message):
            usage = CacheUsage.from_response(source)
            if usage is not None and usage.prompt_tokens is not None:
                self.result.usage = usage
                raw = source.get("usage") if isinstance(source, Mapping) else None
                self.result.raw_usage = dict(raw) if isinstance(raw, Mapping) else None
        self._read_diagnosis(body)
        error = body.get("error")
        message = error.get("message") if isinstance(error, Mapping) else error
        if isinstance(message, str):
            self.result.server_error = message
        if body.get("type") == "message_stop":
            self.result.complete = True
        self.result.text += _text(body, streamed)
        ids = output_token_ids(body)
        if ids is not None:
            self.result.output_ids = ids if self.result.output_ids is None else self.result.output_ids + ids

    def _read_diagnosis(self, body: Mapping[str, Any]) -> None:
        """The response id and the provider's diagnosis: at the top of a body, or in the message of Anthropic's
        ``message_start`` event."""
        message = body.get("message")
        source = message if isinstance(message, Mapping) and body.get("type") == "message_start" else body
        if isinstance(source.get("id"), str) and self.result.response_id is None:
            self.result.response_id = source["id"]
        diagnosis = read_diagnosis(source)
        if diagnosis is not None:
            self.result.diagnosis = diagnosis
            key = "diagnostics" if diagnosis.provider == "anthropic" else "prompt_cache_diagnostics"
            self.result.raw_diagnosis = {key: source[key]}


def _text(body: Mapping[str, Any], streamed: bool) -> str:
    """Output text of a body or one stream event, OpenAI chat or Anthropic Messages."""
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        part = choices[0].get("delta" if streamed else "message")
        content = part.get("content") if isinstance(part, Mapping) else None
        return content if isinstance(content, str) else ""
    delta = body.get("delta")
    if isinstance(delta, Mapping) and isinstance(delta.get("text"), str):
        return str(delta["text"])
    blocks = body.get("content")
    if isinstance(blocks, list):
        return "".join(b["text"] for b in blocks if isinstance(b, Mapping) and isinstance(b.get("text"), str))
    return ""


def _inflater(encoding: str) -> Any:
    if encoding == "gzip":
        return zlib.decompressobj(16 + zlib.MAX_WBITS)
    if encoding == "deflate":
        return zlib.decompressobj()
    return None


class TappedStream(httpx.SyncByteStream):
    """A sync response stream passing every chunk through unchanged while the tap reads it."""

    def __init__(self, inner: httpx.SyncByteStream, tap: ResponseTap) -> None:
        self._inner = inner
        self._tap: ResponseTap | None = tap

    def __iter__(self) -> Iterator[bytes]:
        tap = self._tap
        if tap is None:
            raise httpx.StreamClosed()
        try:
            for chunk in self._inner:
                tap.feed(chunk)
                yield chunk
            tap.end()
        except GeneratorExit:  # the caller stopped reading: close() records the turn as abandoned
            raise
        except BaseException as exc:  # a cut stream, or cancellation: recorded, then raised unchanged
            tap.close(exc)
            raise

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            # httpx keeps a response in a reference cycle (its stream points back to it): what hangs from it waits for
            # the garbage collector. Dropping the tap lets the turn's objects go when the turn is recorded.
            tap, self._tap = self._tap, None
            if tap is not None:
                tap.close()


class AsyncTappedStream(httpx.AsyncByteStream):
    """The async twin of :class:`TappedStream`."""

    def __init__(self, inner: httpx.AsyncByteStream, tap: ResponseTap) -> None:
        self._inner = inner
        self._tap: ResponseTap | None = tap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        tap = self._tap
        if tap is None:
            raise httpx.StreamClosed()
        try:
            async for chunk in self._inner:
                tap.feed(chunk)
                yield chunk
            tap.end()
        except GeneratorExit:
            raise
        except BaseException as exc:
            tap.close(exc)
            raise

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            tap, self._tap = self._tap, None
            if tap is not None:
                tap.close()
