"""What agentcache attaches to each LLM run, and the three places it goes: the AIMessage's ``response_metadata``,
its ``usage_metadata`` (``cache_read``, set to the server's own number), and the run a tracer (LangSmith) records."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any, TypedDict

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.tracers.base import AsyncBaseTracer, BaseTracer

from agentcache.httpx import Turn
from agentcache.redact import redact

KEY = "agentcache"
"""The key of the report in ``AIMessage.response_metadata`` and in the LLM run's metadata."""


class CacheReport(TypedDict):
    """One LLM call as the cache-aware transport saw it (docs/integrations.md explains each field)."""

    session: str
    """The thread id of the LangGraph run (or the session the transport resolved otherwise)."""
    turn: int
    """1-based number of this request within its session."""
    prompt_tokens: int | None
    """Prompt tokens the server reported."""
    cached_tokens: int | None
    """Prompt tokens the server reported served from its prefix cache (None: it did not say)."""
    hit_ratio: float | None
    predicted_cached: int | None
    """Cached tokens agentcache's model of the server predicted."""
    exact: bool
    """Whether the prediction used the server's own template and tokenizer (``model_dir``)."""
    cause: str | None
    """Drift cause against the thread's previous request (``none`` when it extends it, ``new_session`` first)."""
    detail: str | None
    divergence_token: int | None
    """Index of the first prompt token that differs from the previous request of the thread."""
    wasted_tokens: int
    """Tokens the previous request already sent that this one prefilled again."""
    canonicalized: bool
    passthrough: str | None
    """Why the request was sent unchanged (None when it was canonicalized)."""
    breakpoints: dict[str, Any] | None
    """The cache breakpoints agentcache placed (``breakpoints=True``): ``placed``, ``skipped``, ``existing`` and
    ``refused`` as on the ledger's turn; None when placement was not asked for."""


def report_of(turn: Turn) -> CacheReport:
    """The report of a turn, without credentials as a ledger export is: it reaches the message, the run's metadata
    (and so LangSmith) and the callback handler, and its session (a thread id) or passthrough reason may quote
    one."""
    report: CacheReport = redact(
        CacheReport(
            session=turn.session,
            turn=turn.turn,
            prompt_tokens=turn.reported_prompt_tokens,
            cached_tokens=turn.reported_cached,
            hit_ratio=turn.hit_ratio,
            predicted_cached=turn.predicted_cached,
            exact=turn.exact,
            cause=turn.cause,
            detail=turn.detail,
            divergence_token=turn.divergence_token,
            wasted_tokens=turn.wasted_tokens,
            canonicalized=turn.canonicalized,
            passthrough=turn.passthrough,
            breakpoints=None if turn.breakpoints is None else asdict(turn.breakpoints),
        )
    )
    return report


def reported(message: BaseMessage, report: CacheReport) -> dict[str, Any]:
    """The fields of ``message`` to update: its report, and ``cache_read`` equal to what the server reported (the
    SDK's reading misses dialects agentcache reads, such as ``cache_read_input_tokens`` behind a proxy)."""
    update: dict[str, Any] = {"response_metadata": {**message.response_metadata, KEY: report}}
    usage = message.usage_metadata if isinstance(message, AIMessage) else None
    if usage is not None and report["cached_tokens"] is not None:
        details = {**usage.get("input_token_details", {}), "cache_read": report["cached_tokens"]}
        update["usage_metadata"] = {**usage, "input_token_details": details}
    return update


def annotate_run(
    run_manager: CallbackManagerForLLMRun | AsyncCallbackManagerForLLMRun | None, report: CacheReport
) -> None:
    """Add the report to the metadata of this LLM run in every tracer recording it, before the run ends, so the
    tracer sends it with the run's end (LangSmith's ``LangChainTracer`` patches ``extra.metadata`` then)."""
    if run_manager is None:
        return
    for handler in run_manager.handlers:
        if isinstance(handler, (BaseTracer, AsyncBaseTracer)):
            run = handler.run_map.get(str(run_manager.run_id))
            if run is not None:
                run.add_metadata({KEY: dict(report)})
