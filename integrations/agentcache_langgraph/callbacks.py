"""A callback handler for any graph or runnable: one :class:`RunReport` per LLM run, and the per-turn table.

It reads what the run produced, so it works with any chat model: the server-reported ``cache_read`` LangChain put
in ``usage_metadata``, plus agentcache's full report when the model is cache-aware.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, cast
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, LLMResult

from agentcache.redact import redact
from agentcache.totals import hit_ratio, table
from agentcache_langgraph.report import KEY, CacheReport


@dataclass(frozen=True)
class RunReport:
    """One LLM run. ``prompt_tokens`` and ``cache_read`` are as LangChain reports them (``usage_metadata``)."""

    run_id: UUID
    thread_id: str | None
    prompt_tokens: int | None
    cache_read: int | None
    agentcache: CacheReport | None
    """agentcache's report, when the model is cache-aware."""

    @property
    def hit_ratio(self) -> float | None:
        return hit_ratio(self.cache_read, self.prompt_tokens)


class AgentCacheCallbackHandler(BaseCallbackHandler):
    """Pass it in ``config={"callbacks": [handler]}``; thread-safe, so one handler can watch parallel runs."""

    run_inline = True  # cheap; keeps reports in the order runs end

    def __init__(self) -> None:
        self._threads: dict[UUID, str | None] = {}
        self._reports: list[RunReport] = []
        self._lock = threading.Lock()

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        thread = (metadata or {}).get("thread_id")  # LangGraph copies configurable.thread_id into run metadata
        with self._lock:  # a thread id may quote a credential (a URL with its key): the table never shows one
            self._threads[run_id] = None if thread is None else redact(str(thread))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            thread = self._threads.pop(run_id, None)
            for generations in response.generations:
                for generation in generations:
                    if isinstance(generation, ChatGeneration):
                        self._reports.append(_report(run_id, thread, generation.message))

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        with self._lock:
            self._threads.pop(run_id, None)

    def reports(self, thread_id: str | None = None) -> list[RunReport]:
        """Every run's report in the order the runs ended, or those of one thread."""
        with self._lock:
            return [r for r in self._reports if thread_id is None or r.thread_id == thread_id]

    def table(self, thread_id: str | None = None) -> str:
        """The per-turn cache table (server-reported, predicted, why a turn missed), as plain text."""
        header = ("thread", "turn", "prompt", "cached", "predicted", "hit", "cause", "diverged at")
        rows = [
            (
                str(report.thread_id or (agentcache["session"] if agentcache else "-")),
                None if agentcache is None else agentcache["turn"],
                report.prompt_tokens,
                report.cache_read,
                None if agentcache is None else agentcache["predicted_cached"],
                report.hit_ratio,
                None if agentcache is None else agentcache["cause"],
                None if agentcache is None else agentcache["divergence_token"],
            )
            for report in self.reports(thread_id)
            for agentcache in [report.agentcache]
        ]
        return table(header, rows)


def _report(run_id: UUID, thread: str | None, message: BaseMessage) -> RunReport:
    usage = message.usage_metadata if isinstance(message, AIMessage) else None
    agentcache = message.response_metadata.get(KEY)
    return RunReport(
        run_id=run_id,
        thread_id=thread if thread is not None or agentcache is None else agentcache["session"],
        prompt_tokens=None if usage is None else usage["input_tokens"],
        cache_read=None if usage is None else usage.get("input_token_details", {}).get("cache_read"),
        agentcache=cast(CacheReport, agentcache) if isinstance(agentcache, dict) else None,
    )
