"""Per-turn drift analysis: predicted and reported cached tokens, where the prefix broke, and why."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentcache.breakpoints import Placements
from agentcache.cache.options import CacheOptions
from agentcache.drift.trace import DEFAULT_SESSION, Trace, TraceRecord, read_trace
from agentcache.predict.diff import Divergence
from agentcache.predict.prompt import PromptTokenizer, Renderer
from agentcache.predict.provider import read_diagnosis
from agentcache.predict.replay import Prediction, Replay
from agentcache.redact import redact
from agentcache.tokens import Tokenizer, get_tokenizer
from agentcache.usage import CacheUsage


@dataclass(frozen=True)
class TurnReport:
    """One request of a session, compared with the previous request of the same session."""

    session: str
    turn: int
    """1-based position in the session."""
    line: int
    """Line of the trace file (or index in the list) the request came from."""
    predicted_prompt_tokens: int
    """Prompt tokens as the modelled server counts them (its own count when the replay has its template)."""
    predicted_cached: int
    """Cached tokens the client-side model predicts the server reports."""
    reported_cached: int | None
    """Cached tokens the server reported (the trace's ``usage``), when known."""
    reported_prompt_tokens: int | None
    """Prompt tokens the server reported, in its own tokenizer's units, when known."""
    cause: str
    """Why the prefix broke: a code from :mod:`agentcache.predict.causes` (``none`` when it did not)."""
    detail: str
    divergence: Divergence | None
    wasted_tokens: int
    """Tokens the previous request had already sent that this one had to prefill again."""
    canonical_cached: int
    """Cached tokens predicted had every request been canonicalized (with ``relocate_volatile``)."""
    predicted_written: int = 0
    """Cache writes a hosted API would bill for the turn (``cache_creation_input_tokens``, ``cache_write_tokens``)."""
    predicted_cost: float | None = None
    """The prompt's price in uncached-input-token equivalents under the hosted model's rule; None for engines."""
    provider_verdict: str | None = None
    """The provider's own diagnosis of the turn, when the trace recorded one (:mod:`agentcache.predict.provider`)."""
    provider_missed_tokens: int | None = None
    provider_agrees: bool | None = None
    """Whether that verdict and ``cause`` name the same change; None when there is nothing to compare."""
    breakpoints: Placements | None = None
    """The cache breakpoints a live transport placed on the request and why (a ledger's turns only: a trace keeps
    the request as sent, markers included, not the account)."""
    worker: str | None = None
    """The worker of a cluster that served the turn, when known; each worker's cache is modelled on its own."""

    @classmethod
    def of(cls, record: TraceRecord, turn: int, predicted: Prediction, canonical_cached: int) -> TurnReport:
        """The report of one turn; its texts without credentials, since reports and ``explain`` show them."""
        diagnosis = read_diagnosis(record.diagnosis)
        return cls(
            session=redact(record.session),
            turn=turn,
            line=record.line,
            predicted_prompt_tokens=predicted.predicted_prompt_tokens,
            predicted_cached=predicted.predicted_cached,
            reported_cached=predicted.reported_cached,
            reported_prompt_tokens=predicted.reported_prompt_tokens,
            cause=predicted.cause,
            detail=redact(predicted.detail),
            divergence=predicted.divergence,
            wasted_tokens=predicted.wasted_tokens,
            canonical_cached=canonical_cached,
            predicted_written=predicted.predicted_written,
            predicted_cost=predicted.predicted_cost,
            provider_verdict=None if diagnosis is None else diagnosis.verdict,
            provider_missed_tokens=None if diagnosis is None else diagnosis.missed_tokens,
            provider_agrees=None
            if diagnosis is None
            else diagnosis.agrees(predicted.cause, predicted.divergence, first=turn == 1),
            worker=record.worker,
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def explain(
    trace: Trace | str | os.PathLike[str] | Iterable[dict[str, Any]],
    tokenizer: str | Tokenizer = "o200k_base",
    cache: CacheOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[TurnReport]:
    """Explain every turn of a trace (a :class:`Trace`, a trace file, or request bodies of one session).

    Requests are replayed in trace order through one client-side cache model (SGLang radix semantics unless
    ``cache`` says otherwise), as a server would see them, and once more canonicalized, for the what-if; a
    cluster's requests on the model of the worker the trace names. A request the server did not evaluate (the
    trace says ``"evaluated": false``) cached nothing: it keeps its turn number and gets no report.
    ``progress`` is told how many requests are done after each one.
    """
    if isinstance(trace, (str, os.PathLike)):
        trace = read_trace(Path(trace))
    elif not isinstance(trace, Trace):
        records = [TraceRecord(i, DEFAULT_SESSION, request) for i, request in enumerate(trace, start=1)]
        trace = Trace(records, [])
    encoder = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    prompts = PromptTokenizer(encoder)
    options = cache or CacheOptions()
    renderer = Renderer()
    raw = Replay(options, prompts, renderer=renderer)
    canonical = Replay(options, prompts, canonical=True, renderer=renderer)
    turns: dict[str, int] = {}
    reports = []
    for done, record in enumerate(trace.records, start=1):
        turns[record.session] = turns.get(record.session, 0) + 1
        if record.evaluated:
            usage = CacheUsage.from_usage(record.usage)
            predicted = raw.diagnose_turn(
                record.request,
                record.ts,
                record.session,
                reported_prompt_tokens=None if usage is None else usage.prompt_tokens,
                reported_cached=None if usage is None else usage.cached_tokens,
                worker=record.worker,
            )
            ideal = canonical.serve(record.request, record.ts, record.session, worker=record.worker)
            reports.append(TurnReport.of(record, turns[record.session], predicted, ideal.cached))
        if progress is not None:
            progress(done)
    return reports
