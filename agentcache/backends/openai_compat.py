"""``/v1/chat/completions`` on any OpenAI-compatible server (SGLang, vLLM, llama-server, OpenAI), plain and streamed.

Every such server reports cache hits as ``usage.prompt_tokens_details.cached_tokens``, read here as a
:class:`~agentcache.usage.CacheUsage`. A stream reports usage only in its last chunk, and only when asked, so
:meth:`OpenAIProtocol.stream_request` always asks (``stream_options.include_usage``) and a stream that ends before
that chunk or before ``data: [DONE]`` is an error, not a silent "no usage".
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import httpx

from agentcache.backends.call import (
    DEFAULT_TIMEOUT,
    AsyncClientBase,
    Call,
    Protocol,
    SyncClientBase,
    async_op,
    decode_json,
    describe,
    is_token_ids,
    json_object,
    raise_for_status,
    sync_op,
    unexpected,
)
from agentcache.errors import BackendError, InputError
from agentcache.usage import CacheUsage


def output_token_ids(body: Any) -> list[int] | None:
    """The generated token ids in a chat completion (or one stream chunk), wherever the server put them.

    Servers return them only when asked, each in its own place: SGLang ``choices[0].response_token_ids``
    (request ``return_token_ids: true``), vLLM ``choices[0].token_ids`` (``return_token_ids: true``),
    llama-server ``__verbose.tokens`` (``return_tokens: true`` and ``verbose: true``). None when absent; also for
    llama-server's ``verbose`` without ``return_tokens``, whose empty list would read as "generated nothing".
    """
    if not isinstance(body, Mapping):
        return None
    choices = body.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        for key in ("response_token_ids", "token_ids"):
            if is_token_ids(ids := choices[0].get(key)):
                return ids
    verbose = body.get("__verbose")
    if isinstance(verbose, Mapping) and is_token_ids(ids := verbose.get("tokens")):
        return ids if ids or not verbose.get("tokens_predicted") else None
    return None


@dataclass(frozen=True)
class ChatResult:
    """A non-streamed chat completion: the raw ``body`` and what is read from it."""

    body: dict[str, Any]
    text: str
    """The first choice's message content; "" when it has none (a tool call, for example)."""
    usage: CacheUsage | None
    """None when the server reported no usage."""
    output_ids: list[int] | None
    """Generated token ids, when the request asked for them (see :func:`output_token_ids`)."""


_LINE_END = re.compile(r"\r\n|\r|\n")


class SSEParser:
    """Incremental server-sent-events parser: feed it bytes as they arrive, get back each complete event's data.

    Follows the SSE rules that matter for chat streams: lines end in LF, CRLF or CR; an event ends at a blank
    line; its ``data:`` lines are joined with LF; comments and other fields are skipped; an event left unfinished
    when the bytes stop is dropped. UTF-8 and CRLF split across chunks are handled.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")()
        self._buffer = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += self._decoder.decode(chunk)
        events: list[str] = []
        start = 0
        for match in _LINE_END.finditer(self._buffer):
            if match.group() == "\r" and match.end() == len(self._buffer):
                break  # maybe the first half of a CRLF
            line, start = self._buffer[start : match.start()], match.end()
            if not line:
                if self._data:
                    events.append("\n".join(self._data))
                    self._data = []
            elif line.startswith("data:"):
                self._data.append(line[6:] if line.startswith("data: ") else line[5:])
        self._buffer = self._buffer[start:]
        return events


class _StreamState:
    """What both stream twins do with the bytes they read: parse chunks, add up text, keep the usage, check the end."""

    def __init__(self, request: httpx.Request) -> None:
        self.request = request
        self.parser = SSEParser()
        self.parts: list[str] = []
        self.usage: CacheUsage | None = None
        self.done = False
        self.started = False

    def start(self) -> None:
        if self.started:
            raise RuntimeError("a chat stream can be read once; call stream_chat() again for another one")
        self.started = True

    def feed(self, response: httpx.Response, raw: bytes) -> list[dict[str, Any]]:
        chunks: list[dict[str, Any]] = []
        for data in self.parser.feed(raw):
            if data == "[DONE]":
                self.done = True
                break
            chunk = decode_json(response, data.encode())
            if not isinstance(chunk, dict):
                raise unexpected(response, f"a stream chunk that is a JSON {type(chunk).__name__}, not an object")
            if "error" in chunk and "choices" not in chunk:
                raise BackendError(f"{describe(response.request)} reported an error mid-stream: {chunk['error']}")
            self.parts.extend(_delta_texts(chunk))
            self.usage = CacheUsage.from_response(chunk) or self.usage
            chunks.append(chunk)
        return chunks

    def finish(self) -> None:
        """Raise BackendError unless the stream reached ``[DONE]`` with a usage chunk on the way."""
        where = describe(self.request)
        if not self.done:
            raise BackendError(
                f"{where}: stream ended before data: [DONE]; the server or a proxy cut it, retry the request"
            )
        if self.usage is None:
            raise BackendError(
                f"{where}: stream ended before a usage chunk; the server ignores stream_options.include_usage, "
                "use chat() to get usage"
            )


def _delta_texts(chunk: Mapping[str, Any]) -> list[str]:
    choices = chunk.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    delta = first.get("delta") if isinstance(first, Mapping) else None
    content = delta.get("content") if isinstance(delta, Mapping) else None
    return [content] if isinstance(content, str) else []


class _StreamView:
    """What a stream shows once read: the text and the usage."""

    _state: _StreamState

    @property
    def text(self) -> str:
        """The first choice's content deltas, concatenated."""
        return "".join(self._state.parts)

    @property
    def usage(self) -> CacheUsage | None:
        """Usage from the final chunk; None until it has arrived. A stream read to its end always has it."""
        return self._state.usage


class ChatStream(_StreamView):
    """A streamed chat completion: iterate it for each chunk (a dict) as it arrives, then read ``text`` and
    ``usage``. The request is sent when iteration starts; use ``with`` to close it if you stop early."""

    def __init__(self, http: httpx.Client, request: httpx.Request) -> None:
        self._http = http
        self._state = _StreamState(request)
        self._response: httpx.Response | None = None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        self._state.start()
        self._response = response = self._http.send(self._state.request, stream=True)
        try:
            if not response.is_success:
                response.read()
                raise_for_status(response)
            for raw in response.iter_bytes():
                yield from self._state.feed(response, raw)
                if self._state.done:
                    break
            self._state.finish()
        finally:
            response.close()

    def close(self) -> None:
        if self._response is not None:
            self._response.close()

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncChatStream(_StreamView):
    """The ``async`` twin of :class:`ChatStream`: ``async for`` and ``async with``."""

    def __init__(self, http: httpx.AsyncClient, request: httpx.Request) -> None:
        self._http = http
        self._state = _StreamState(request)
        self._response: httpx.Response | None = None

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        self._state.start()
        self._response = response = await self._http.send(self._state.request, stream=True)
        try:
            if not response.is_success:
                await response.aread()
                raise_for_status(response)
            async for raw in response.aiter_bytes():
                for chunk in self._state.feed(response, raw):
                    yield chunk
                if self._state.done:
                    break
            self._state.finish()
        finally:
            await response.aclose()

    async def aclose(self) -> None:
        if self._response is not None:
            await self._response.aclose()

    async def __aenter__(self) -> AsyncChatStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


class OpenAIProtocol(Protocol):
    """The requests of ``/v1/chat/completions`` and how their answers are read."""

    def __init__(self, http: httpx.Client | httpx.AsyncClient, model: str | None) -> None:
        super().__init__(http)
        self.model = model

    def chat(self, body: Mapping[str, Any]) -> Call[ChatResult]:
        """Send a chat completion request and wait for the whole answer. ``model`` is filled in when the body has
        none and the client was given one; anything else in ``body`` is sent as it is."""
        if body.get("stream"):
            raise InputError("chat() waits for a whole answer but the body sets stream; use stream_chat() instead")
        return Call(self.request("POST", "/chat/completions", self._with_model(body)), _chat_result)

    def stream_request(self, body: Mapping[str, Any]) -> httpx.Request:
        """The request of a streamed chat completion: ``body`` with ``stream`` and ``stream_options.include_usage``
        set, so the last chunk carries the usage."""
        full = self._with_model(body)
        full["stream"] = True
        full["stream_options"] = {**(body.get("stream_options") or {}), "include_usage": True}
        return self.request("POST", "/chat/completions", full)

    def _with_model(self, body: Mapping[str, Any]) -> dict[str, Any]:
        full = dict(body)
        if "model" not in full and self.model is not None:
            full["model"] = self.model
        return full


def _chat_result(response: httpx.Response) -> ChatResult:
    body = json_object(response)
    choices = body.get("choices")
    if not isinstance(choices, list):
        raise unexpected(response, "a body without a choices list")
    message = choices[0].get("message") if choices and isinstance(choices[0], Mapping) else None
    content = message.get("content") if isinstance(message, Mapping) else None
    text = content if isinstance(content, str) else ""
    return ChatResult(body, text, CacheUsage.from_response(body), output_token_ids(body))


def _api_base(base_url: str) -> str:
    """The ``/v1`` address, whether ``base_url`` is the server's root or (as the OpenAI SDK takes it) ends in /v1."""
    root = base_url.rstrip("/")
    return root if root.endswith("/v1") else root + "/v1"


def _auth(api_key: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(headers or {})
    if api_key is not None:
        merged["Authorization"] = f"Bearer {api_key}"
    return merged


class OpenAICompatClient(SyncClientBase[OpenAIProtocol]):
    """Blocking client of an OpenAI-compatible server. ``base_url`` may be the server's root or its ``/v1`` address;
    ``api_key`` is sent as ``Authorization: Bearer``; ``model`` fills bodies that name none."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(_api_base(base_url), timeout=timeout, transport=transport, headers=_auth(api_key, headers))
        self._protocol = OpenAIProtocol(self._http, model)

    chat = sync_op(OpenAIProtocol.chat)

    def stream_chat(self, body: Mapping[str, Any]) -> ChatStream:
        """Stream a chat completion; see :class:`ChatStream`."""
        return ChatStream(self._http, self._protocol.stream_request(body))


class AsyncOpenAICompatClient(AsyncClientBase[OpenAIProtocol]):
    """The ``async`` twin of :class:`OpenAICompatClient`: ``await client.chat(...)``, ``async for`` a stream."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(_api_base(base_url), timeout=timeout, transport=transport, headers=_auth(api_key, headers))
        self._protocol = OpenAIProtocol(self._http, model)

    chat = async_op(OpenAIProtocol.chat)

    def stream_chat(self, body: Mapping[str, Any]) -> AsyncChatStream:
        """Stream a chat completion; see :class:`AsyncChatStream`."""
        return AsyncChatStream(self._http, self._protocol.stream_request(body))
