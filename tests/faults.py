"""Fault injection shared by the tests: response bodies that arrive in parts and may break off."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx


class Parts(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A response body sent in ``parts``, then ``error`` raised (a connection lost mid-body), if given."""

    def __init__(self, parts: list[bytes], error: Exception | None = None) -> None:
        self.parts = parts
        self.error = error

    def __iter__(self) -> Iterator[bytes]:
        yield from self.parts
        if self.error is not None:
            raise self.error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for part in self.parts:
            yield part
        if self.error is not None:
            raise self.error
