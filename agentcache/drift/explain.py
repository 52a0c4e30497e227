"""Per-turn drift analysis: predicted and reported cached tokens, where the prefix broke, and why."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentcache.drift import causes
from agentcache.drift.diff import Divergence, first_divergence
from agentcache.drift.prompt import PromptTokenizer, Renderer
from agentcache.drift.replay import CacheOptions, Replay, Served
from agentcache.drift.trace import DEFAULT_SESSION, Trace, TraceRecord, read_trace
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
    prompt_tokens: int
    predicted_cached: int
    """Cached tokens the client-side model predicts the server reports."""
    reported_cached: int | None
    """Cached tokens the server reported (the trace's ``usage``), when known."""
    reported_prompt_tokens: int | None
    """Prompt tokens the server reported, in its own tokenizer's units, when known."""
    cause: str
    """Why the prefix broke: a code from :mod:`agentcache.drift.causes` (``none`` when it did not)."""
    detail: str
    divergence: Divergence | None
    wasted_tokens: int
    """Tokens the previous request had already sent that this one had to prefill again."""
    canonical_cached: int
    """Cached tokens predicted had every request been canonicalized (with ``relocate_volatile``)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Session:
    request: dict[str, Any]
    served: Served


def explain(
    trace: Trace | str | os.PathLike[str] | Iterable[dict[str, Any]],
    tokenizer: str | Tokenizer = "o200k_base",
    cache: CacheOptions | None = None,
    progress: Callable[[int], None] | None = None,
) -> list[TurnReport]:
    """Explain every turn of a trace (a :class:`Trace`, a trace file, or request bodies of one session).

    Requests are replayed in trace order through one client-side cache model (SGLang radix semantics unless
    ``cache`` says otherwise), as a server would see them, and once more canonicalized, for the what-if.
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
    sessions: dict[str, _Session] = {}
    turns: dict[str, int] = {}
    reports = []
    for record in trace.records:
        served = raw.serve(record.request, record.ts, record.session)
        ideal = canonical.serve(record.request, record.ts, record.session)
        previous = sessions.get(record.session)
        turns[record.session] = turns.get(record.session, 0) + 1
        reports.append(_report(record, turns[record.session], previous, served, ideal.cached, raw.minimum()))
        sessions[record.session] = _Session(record.request, served)
        if progress is not None:
            progress(len(reports))
    return reports


def diagnose(
    previous: tuple[dict[str, Any], Served] | None, request: dict[str, Any], served: Served
) -> tuple[str, str, Divergence | None, int]:
    """``(cause, detail, divergence, wasted tokens)`` of a request against the previous request of its session
    (None for the first). Wasted tokens are those the previous request had already sent that this one prefills
    again."""
    if previous is None:
        return causes.NEW_SESSION, "first request of the session", None, 0
    before_request, before = previous
    if before_request.get("model") != request.get("model"):
        divergence: Divergence | None = Divergence("model", "$.model", 0, 0, 0)
    else:
        divergence = first_divergence(before.segments, before.tokens, served.segments, served.tokens, served.starts)
    if divergence is None:
        return causes.NONE, "extends the previous request", None, 0
    index = divergence.segment
    old = before.segments[index] if index < len(before.segments) else None
    new = served.segments[index] if index < len(served.segments) else None
    cause, detail = causes.classify(before_request, request, divergence, old, new)
    return cause, detail, divergence, max(0, len(before.tokens) - divergence.token_index)


def _report(
    record: TraceRecord, turn: int, previous: _Session | None, served: Served, canonical_cached: int, minimum: int
) -> TurnReport:
    usage = CacheUsage.from_usage(record.usage)
    reported = None if usage is None else usage.cached_tokens
    reported_prompt = None if usage is None else usage.prompt_tokens
    before = None if previous is None else (previous.request, previous.served)
    cause, detail, divergence, wasted = diagnose(before, record.request, served)
    if cause in (causes.NONE, causes.NEW_SESSION):
        if 0 < served.prompt_tokens < minimum:
            cause, detail = causes.BELOW_MINIMUM, f"{served.prompt_tokens} tokens, under the minimum of {minimum}"
        elif reported is not None and reported < served.cached and reported_prompt in (None, served.prompt_tokens):
            # Only when the server counts the prompt as we do: with another tokenizer the counts don't compare.
            cause = causes.EVICTED
            detail = f"server reported {reported} cached, the model predicted {served.cached}: evicted or expired"
    return TurnReport(
        session=record.session,
        turn=turn,
        line=record.line,
        prompt_tokens=served.prompt_tokens,
        predicted_cached=served.cached,
        reported_cached=reported,
        reported_prompt_tokens=reported_prompt,
        cause=cause,
        detail=detail,
        divergence=divergence,
        wasted_tokens=wasted,
        canonical_cached=canonical_cached,
    )
