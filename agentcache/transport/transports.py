"""httpx transports that put :class:`CacheMiddleware` in front of any other transport, sync and async.

Everything but the I/O lives in the middleware (``begin``, ``wrap``, ``fail``), so the two classes differ only
in ``await``. Closing a transport (leaving the client's ``with`` block) waits until the turns of its calls are
recorded, so the ledger, the trace file and the spans are complete after it. Errors raised by the wrapped
transport reach the caller as they are (same exception, same traceback); the ledger records them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio.to_thread
import httpx

from agentcache.errors import InputError
from agentcache.transport.ledger import Ledger
from agentcache.transport.middleware import CacheMiddleware, CacheSettings

if TYPE_CHECKING:
    from typing_extensions import Unpack


class CacheAwareTransport(httpx.BaseTransport):
    """Wrap ``transport`` (default: a plain ``httpx.HTTPTransport``); options go to :class:`CacheMiddleware`.

    ``httpx.Client(transport=CacheAwareTransport(server="sglang", model_dir=...))``, or the same client handed
    to an SDK (``OpenAI(http_client=...)``). Pass ``middleware=`` instead of options to share one middleware (one
    ledger, one model of the server's cache) between transports, e.g. a sync and an async client of one server.
    """

    def __init__(
        self,
        transport: httpx.BaseTransport | None = None,
        *,
        middleware: CacheMiddleware | None = None,
        **options: Unpack[CacheSettings],
    ) -> None:
        self.inner = transport or httpx.HTTPTransport()
        self.middleware = middleware_of(middleware, options)

    @property
    def ledger(self) -> Ledger:
        return self.middleware.ledger

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        middleware = self.middleware
        if not middleware.handles(request):
            return self.inner.handle_request(request)
        request.read()
        call = middleware.begin(request)
        try:
            response = self.inner.handle_request(call.request)
        except BaseException as exc:  # cancellation too: recorded, then raised unchanged
            middleware.fail(call, exc)
            raise
        return middleware.wrap(call, response)

    def close(self) -> None:
        """Close the inner transport, once the turns of the calls made through it are recorded."""
        self.inner.close()
        self.middleware.ledger.pending.wait()


class AsyncCacheAwareTransport(httpx.AsyncBaseTransport):
    """The async twin of :class:`CacheAwareTransport` (default inner: ``httpx.AsyncHTTPTransport``)."""

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport | None = None,
        *,
        middleware: CacheMiddleware | None = None,
        **options: Unpack[CacheSettings],
    ) -> None:
        self.inner = transport or httpx.AsyncHTTPTransport()
        self.middleware = middleware_of(middleware, options)

    @property
    def ledger(self) -> Ledger:
        return self.middleware.ledger

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        middleware = self.middleware
        if not middleware.handles(request):
            return await self.inner.handle_async_request(request)
        await request.aread()
        call = middleware.begin(request)
        try:
            response = await self.inner.handle_async_request(call.request)
        except BaseException as exc:
            middleware.fail(call, exc)
            raise
        return middleware.wrap_async(call, response)

    async def aclose(self) -> None:
        """Close the inner transport, once the turns of the calls made through it are recorded (waiting off the
        event loop)."""
        await self.inner.aclose()
        await anyio.to_thread.run_sync(self.middleware.ledger.pending.wait)


def middleware_of(middleware: CacheMiddleware | None, options: CacheSettings) -> CacheMiddleware:
    """The middleware given, or one built from ``options`` (never both)."""
    if middleware is None:
        return CacheMiddleware(**options)
    if options:
        raise InputError(f"pass either middleware= or its options, not both (got {', '.join(sorted(options))})")
    return middleware
