"""The protocol layer the backend clients share: each operation is a :class:`Call`, built once, run by either twin.

A protocol class (``SGLangProtocol``, ``OpenAIProtocol``) turns an operation's arguments into an
``httpx.Request`` plus the function that reads its response; it never sends anything. :class:`SyncClientBase`
and :class:`AsyncClientBase` own the ``httpx.Client`` / ``httpx.AsyncClient`` and run Calls, and :func:`sync_op` /
:func:`async_op` turn each protocol method into a client method with the same signature (checked by mypy), so no
operation is written twice. Transport failures (``httpx.ConnectError``, ``httpx.TimeoutException``) propagate
unchanged; a response the operation cannot use becomes a :class:`~agentcache.errors.BackendError`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Concatenate, Generic, ParamSpec, TypeGuard, TypeVar

import httpx
import orjson

from agentcache.errors import BackendError

T = TypeVar("T")
P = ParamSpec("P")
ProtocolT = TypeVar("ProtocolT", bound="Protocol")
SelfT = TypeVar("SelfT")

DEFAULT_TIMEOUT = httpx.Timeout(300.0, connect=10.0)
"""A prefill of a long prompt on a busy server takes minutes, so reads may be slow; a refused connect should not."""

BODY_EXCERPT = 300
"""Characters of an error body quoted in a BackendError: enough for the server's message, not a whole page."""


@dataclass(frozen=True)
class Call(Generic[T]):
    """One HTTP exchange: the request to send and how to read its response."""

    request: httpx.Request
    parse: Callable[[httpx.Response], T]


class Protocol:
    """Builds the requests of one API. It holds the HTTP client only for ``build_request`` (which applies the
    base URL, default headers and timeout), never to send, so one protocol serves both twins."""

    def __init__(self, http: httpx.Client | httpx.AsyncClient) -> None:
        self._http = http

    def request(self, method: str, path: str, body: Any = None) -> httpx.Request:
        content = None if body is None else orjson.dumps(body)
        headers = None if body is None else {"Content-Type": "application/json"}
        return self._http.build_request(method, path, content=content, headers=headers)


def describe(request: httpx.Request) -> str:
    """``POST http://host/generate``, for error messages."""
    return f"{request.method} {request.url}"


def is_token_ids(value: Any) -> TypeGuard[list[int]]:
    """A JSON list of token ids: non-negative integers (``true`` is an int to Python, not an id)."""
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value)


def raise_for_status(response: httpx.Response) -> None:
    """Raise BackendError for a non-2xx response whose body has been read."""
    if response.is_success:
        return
    excerpt = response.text[:BODY_EXCERPT].strip() or "(empty body)"
    raise BackendError(
        f"{describe(response.request)} answered HTTP {response.status_code}: {excerpt}; check the request and the "
        "server's log",
        status=response.status_code,
    )


def decode_json(response: httpx.Response, content: bytes) -> Any:
    """Decode ``content`` (the body, or one stream event) that must be JSON, or raise BackendError."""
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        excerpt = content[:BODY_EXCERPT].decode("utf-8", "replace")
        raise BackendError(
            f"{describe(response.request)} answered with something that is not JSON ({exc}): {excerpt!r}; is the URL "
            "that of the right server?",
            status=response.status_code,
        ) from exc


def json_object(response: httpx.Response) -> dict[str, Any]:
    """The response's JSON object; BackendError for an error status, a non-JSON body or another JSON type."""
    raise_for_status(response)
    body = decode_json(response, response.content)
    if not isinstance(body, dict):
        raise unexpected(response, f"a JSON {type(body).__name__} instead of an object")
    return body


def unexpected(response: httpx.Response, what: str) -> BackendError:
    """A BackendError for a body of the wrong shape: ``what`` says what was found."""
    return BackendError(
        f"{describe(response.request)} answered {what}; is the server the kind this client is for, and of a supported "
        "version?",
        status=response.status_code,
    )


def no_content(response: httpx.Response) -> None:
    """Parse for operations whose answer is only their status."""
    raise_for_status(response)


class SyncClientBase(Generic[ProtocolT]):
    """Owns an ``httpx.Client`` and runs Calls. Subclasses set ``_protocol`` in their ``__init__``."""

    _protocol: ProtocolT

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._http = httpx.Client(base_url=base_url, timeout=timeout, transport=transport, headers=headers)

    def _run(self, call: Call[T]) -> T:
        return call.parse(self._http.send(call.request))

    def close(self) -> None:
        self._http.close()

    def __enter__(self: SelfT) -> SelfT:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class AsyncClientBase(Generic[ProtocolT]):
    """Owns an ``httpx.AsyncClient`` and runs Calls. Subclasses set ``_protocol`` in their ``__init__``."""

    _protocol: ProtocolT

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(base_url=base_url, timeout=timeout, transport=transport, headers=headers)

    async def _run(self, call: Call[T]) -> T:
        return call.parse(await self._http.send(call.request))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self: SelfT) -> SelfT:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def sync_op(
    build: Callable[Concatenate[ProtocolT, P], Call[T]],
) -> Callable[Concatenate[SyncClientBase[ProtocolT], P], T]:
    """A blocking client method from a protocol method: same parameters and docstring, returns the parsed result."""

    @functools.wraps(build)
    def op(self: SyncClientBase[ProtocolT], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._run(build(self._protocol, *args, **kwargs))

    return op


def async_op(
    build: Callable[Concatenate[ProtocolT, P], Call[T]],
) -> Callable[Concatenate[AsyncClientBase[ProtocolT], P], Coroutine[Any, Any, T]]:
    """The ``async`` twin of :func:`sync_op`."""

    @functools.wraps(build)
    async def op(self: AsyncClientBase[ProtocolT], /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await self._run(build(self._protocol, *args, **kwargs))

    return op
