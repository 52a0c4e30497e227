"""One line makes a ChatOpenAI-style model cache-aware: ``cache_aware(ChatOpenAI(...), server="sglang")``.

The model is rebuilt with its httpx clients on agentcache's transport, so every request it sends, bound tools
included, is canonicalized and recorded. Its class gets :class:`CacheAware` mixed in front: each call runs in a
:func:`~agentcache.httpx.session_scope` named after the LangGraph thread, which hands the call its own turn, and
the turn's report is attached to the AIMessage and to the LLM run before the run ends (so tracers send it).
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, cast

import httpx
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from langchain_core.runnables import ensure_config
from pydantic import PrivateAttr

from agentcache.errors import InputError
from agentcache.httpx import AsyncCacheAwareTransport, CacheAwareTransport, Ledger, session_scope
from agentcache.transport import CacheSettings, Scope
from agentcache_langgraph.report import KEY, CacheReport, annotate_run, report_of, reported

if TYPE_CHECKING:
    from typing_extensions import Unpack

M = TypeVar("M", bound=BaseChatModel)
RunManager = CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun

_CLIENT_FIELDS = frozenset(
    ("client", "async_client", "root_client", "root_async_client", "http_client", "http_async_client")
)


@dataclass(frozen=True)
class Wiring:
    """The clients a cache-aware model sends through. Its sync and async transports share one middleware, so one
    client-side model of the server's cache, as the server has one cache whichever client calls it."""

    ledger: Ledger
    http_client: httpx.Client
    http_async_client: httpx.AsyncClient

    @classmethod
    def build(
        cls,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
        **options: Unpack[CacheSettings],
    ) -> Wiring:
        sync = CacheAwareTransport(transport, **options)
        async_ = AsyncCacheAwareTransport(async_transport, middleware=sync.middleware)
        return cls(sync.ledger, httpx.Client(transport=sync), httpx.AsyncClient(transport=async_))


_CALL: ContextVar[_Call | None] = ContextVar("agentcache_langgraph_call", default=None)


class _Call:
    """One model call: the session scopes its request was sent in, then the report of its turn."""

    def __init__(self, run_manager: RunManager | None) -> None:
        self.run_manager = run_manager
        self.session = _thread_id(run_manager)
        self._scopes: list[Scope] = []
        self._last: ChatGenerationChunk | None = None
        self._usage: ChatGenerationChunk | None = None
        """The streamed chunk that carried the usage (its ``cache_read`` is set to the server's number)."""

    @contextmanager
    def active(self) -> Iterator[None]:
        """Requests sent inside belong to the thread and are collected; a stream enters once per step, so the
        context variable never stays set while the caller's code runs between chunks."""
        token = _CALL.set(self)
        try:
            with session_scope(self.session) as scope:
                self._scopes.append(scope)
                yield
        finally:
            _CALL.reset(token)

    def finish(self) -> CacheReport | None:
        """The report of the call's last request (earlier ones are the SDK's retries), added to the LLM run."""
        turns = [turn for scope in self._scopes for turn in scope.turns]
        if not turns:  # answered from LangChain's own cache, or not a chat completions request
            return None
        report = report_of(max(turns, key=lambda turn: turn.turn))
        annotate_run(self.run_manager, report)
        return report

    def result(self, result: ChatResult) -> ChatResult:
        report = self.finish()
        if report is not None:  # copies: LangChain's cache may hold the generated messages
            for generation in result.generations:
                generation.message = generation.message.model_copy(update=reported(generation.message, report))
        return result

    def saw(self, chunk: ChatGenerationChunk) -> ChatGenerationChunk:
        self._last = chunk
        if isinstance(chunk.message, AIMessageChunk) and chunk.message.usage_metadata is not None:
            self._usage = chunk
        return chunk

    def tail(self) -> ChatGenerationChunk | None:
        """The chunk that ends a stream with the report; the usage chunk, already yielded, is corrected in place
        (the stream's chunks are merged after the last one, so the merged message has the server's number)."""
        report = self.finish()
        if report is None:
            return None
        if self._usage is not None and isinstance(self._usage.message, AIMessageChunk):
            self._usage.message.usage_metadata = reported(self._usage.message, report).get(
                "usage_metadata", self._usage.message.usage_metadata
            )
        text = self._last is None or isinstance(self._last.message.content, str)
        return ChatGenerationChunk(message=AIMessageChunk(content="" if text else [], response_metadata={KEY: report}))


def _thread_id(run_manager: RunManager | None) -> str | None:
    """The LangGraph thread of the call: ``configurable.thread_id`` of the running graph, else the run's
    ``thread_id`` metadata (how to name a session when calling the model outside a graph)."""
    value = (ensure_config().get("configurable") or {}).get("thread_id")
    if value is None and run_manager is not None:
        value = run_manager.metadata.get("thread_id")
    return None if value is None else str(value)


class CacheAware(BaseChatModel):
    """Mixed in front of the model's class by :func:`cache_aware`; the model keeps its class name, fields and
    behaviour. ``ledger`` holds every turn (``ledger.summary(thread_id)`` for a thread's totals)."""

    _agentcache: Wiring = PrivateAttr()

    @property
    def ledger(self) -> Ledger:
        return self._agentcache.ledger

    def _generate_with_cache(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        # Wraps every way a call is made (a request, a stream merged for a streaming graph, LangChain's cache),
        # and runs before the run ends, which _generate cannot promise: BaseChatModel calls _stream without it.
        call = _Call(run_manager)
        with call.active():
            result = super()._generate_with_cache(messages, stop, run_manager, **kwargs)
        return call.result(result)

    async def _agenerate_with_cache(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        call = _Call(run_manager)
        with call.active():
            result = await super()._agenerate_with_cache(messages, stop, run_manager, **kwargs)
        return call.result(result)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        chunks = super()._stream(messages, stop, run_manager, **kwargs)
        if _CALL.get() is not None:  # streamed inside a call that reports itself
            yield from chunks
            return
        call = _Call(run_manager)
        try:
            while True:
                with call.active():
                    try:
                        chunk = next(chunks)
                    except StopIteration:
                        break
                yield call.saw(chunk)
        finally:  # the consumer stopped early: close the response now, not when the generator is collected
            if isinstance(chunks, Generator):
                chunks.close()
        tail = call.tail()
        if tail is not None:
            yield tail

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        chunks = super()._astream(messages, stop, run_manager, **kwargs)
        if _CALL.get() is not None:
            async for chunk in chunks:
                yield chunk
            return
        call = _Call(run_manager)
        try:
            while True:
                with call.active():
                    try:
                        chunk = await anext(chunks)
                    except StopAsyncIteration:
                        break
                yield call.saw(chunk)
        finally:
            if isinstance(chunks, AsyncGenerator):
                await chunks.aclose()
        tail = call.tail()
        if tail is not None:
            yield tail


def cache_aware(
    model: M,
    *,
    transport: httpx.BaseTransport | None = None,
    async_transport: httpx.AsyncBaseTransport | None = None,
    **options: Unpack[CacheSettings],
) -> M:
    """``model`` rebuilt on agentcache's transport, a new object of the same class (the original is untouched).

    ``server`` is the engine behind the model's ``base_url`` (``sglang``, ``vllm``, ``llama.cpp``, ``openai``), and
    ``model_dir`` the model folder it loads, for exact predictions. ``transport`` / ``async_transport`` are the
    httpx transports to send through (proxies, retries, TLS); other options go to
    :class:`~agentcache.httpx.CacheAwareTransport` (``policy``, ``ask_output_ids``, ``recorder``, ``ledger``, ...).
    """
    return wire(model, Wiring.build(transport, async_transport, **options))


def wire(model: M, wiring: Wiring) -> M:
    """``model`` rebuilt with ``wiring``'s clients (its own, when it is cache-aware already, are replaced)."""
    fields = type(model).model_fields
    if "http_client" not in fields or "http_async_client" not in fields:
        raise TypeError(
            f"{type(model).__name__} takes no http_client/http_async_client, so agentcache cannot send its requests: "
            "use a langchain-openai model (ChatOpenAI with base_url set to the server's /v1), or put "
            "agentcache.httpx.CacheAwareTransport under the httpx client of the SDK the model uses"
        )
    own_clients = getattr(model, "http_client", None) or getattr(model, "http_async_client", None)
    if own_clients and not isinstance(model, CacheAware):
        raise InputError(
            f"{type(model).__name__} already has its own http_client/http_async_client: build it without them and "
            "pass their transports instead, cache_aware(model, transport=httpx.HTTPTransport(...), "
            "async_transport=httpx.AsyncHTTPTransport(...))"
        )
    values = {fields[name].alias or name: getattr(model, name) for name in model.model_fields_set - _CLIENT_FIELDS}
    if "stream_usage" in fields and getattr(model, "stream_usage", None) is None:
        values["stream_usage"] = True  # a stream's turn needs its usage; self-hosted engines send it when asked
    values.update(http_client=wiring.http_client, http_async_client=wiring.http_async_client)
    wired = _cache_aware_class(type(model))(**values)
    wired._agentcache = wiring
    return cast(M, wired)


@functools.cache
def _cache_aware_class(cls: type[BaseChatModel]) -> type[CacheAware]:
    """``cls`` with :class:`CacheAware` in front, under the same name (so traces and dashboards keep it)."""
    if issubclass(cls, CacheAware):
        return cls
    namespace = {"__module__": __name__, "__qualname__": cls.__qualname__, "__doc__": cls.__doc__}
    return cast(type[CacheAware], type(cls.__name__, (CacheAware, cls), namespace))
