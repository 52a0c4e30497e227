"""The one interface every client-side cache model implements, so the replay never asks which server it models.

Each model answers the same question, request by request: how many prompt tokens would this server report as
cached, and what does it keep afterwards. The servers differ in what they need to know: the engines (SGLang,
vLLM, llama.cpp) cache the generated tokens after the prompt; the hosted APIs expire entries by the clock, and
Anthropic writes only at ``cache_control`` breakpoints. ``serve`` takes all of it and each model uses its part.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Protocol, runtime_checkable


class PrefixCacheModel(Protocol):
    """A server's prefix cache, modelled on the client."""

    def serve(
        self,
        prompt_tokens: Sequence[int],
        output_tokens: Sequence[int] = (),
        extra_key: Hashable = None,
        *,
        now: float | None = None,
        breakpoints: Sequence[int] | None = None,
        blocks: Sequence[int] | None = None,
    ) -> int:
        """Serve one request: return the cached prompt tokens the server reports, then keep what it keeps.

        ``output_tokens`` are the generated ids (cached after the prompt by the engines); ``extra_key`` separates
        caches (model, ``cache_salt``); ``now`` is the request's time in seconds (the hosted APIs' TTLs);
        ``breakpoints`` and ``blocks`` are the token positions where ``cache_control`` blocks and all content
        blocks end (Anthropic). A model ignores what its server does not use."""
        ...

    def minimum_tokens(self) -> int:
        """The shortest prompt the server can report cached at all (0 for the engines)."""
        ...

    def stats(self) -> dict[str, int]:
        """Counters over ``serve`` calls (``requests``, ``prompt_tokens``, ``cached_tokens``) and the model's own."""
        ...


@runtime_checkable
class ServerEvictions(Protocol):
    """A model an engine's KV events keep in step (:mod:`agentcache.servers.kv_events`): it drops what the server
    said it evicted, and holds what the server held when it matched a request. The engines that publish them
    (SGLang, vLLM) have one; llama.cpp and the hosted APIs do not."""

    def peek(self, tokens: Sequence[int], extra_key: Hashable = None) -> int:
        """The leading tokens of ``tokens`` held now, as the server would match them; the recency order untouched."""
        ...

    def insert(self, tokens: Sequence[int], extra_key: Hashable = None) -> int:
        """Hold ``tokens`` as a request that computed them leaves them. Returns the tokens held before."""
        ...

    def namespaces(self) -> list[Hashable]:
        """The ``extra_key`` of every namespace served so far."""
        ...

    def drop(self, tokens: Sequence[int], start: int, extra_key: Hashable = None) -> int:
        """Drop what the server evicted of ``tokens`` from token ``start`` on (the event's path and the start of the
        blocks it removed), as that server drops it. Returns the tokens dropped."""
        ...

    def stats(self) -> dict[str, int]:
        """As :meth:`PrefixCacheModel.stats`, with ``stored_tokens``: what a clear of the whole cache drops."""
        ...
