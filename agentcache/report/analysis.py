"""What a report shows: one explanation of the trace per server kind, so the what-if compares like with like."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from agentcache.cache.options import CacheKind, CacheOptions
from agentcache.drift.explain import TurnReport, explain
from agentcache.drift.trace import Trace, TraceProblem
from agentcache.redact import redact
from agentcache.tokens import Tokenizer, get_tokenizer
from agentcache.transport import Ledger


@dataclass(frozen=True)
class Report:
    """A trace explained under every cache kind; the per-turn charts show ``cache``'s explanation."""

    name: str
    """What the report is of, shown in its title (the trace's file name)."""
    tokenizer: str
    cache: CacheOptions
    what_if: dict[str, list[TurnReport]]
    """Each cache kind's explanation of the whole trace, in ``CACHE_KINDS`` order (a ledger's: its server only)."""
    problems: list[TraceProblem]
    live: bool = False
    """Whether the turns are a live ledger's (predicted as they were sent) rather than a trace replayed."""

    @property
    def turns(self) -> list[TurnReport]:
        return self.what_if[self.cache.kind]

    def sessions(self) -> dict[str, list[TurnReport]]:
        """The turns of each session, sessions in the order they first appear in the trace."""
        out: dict[str, list[TurnReport]] = {}
        for turn in self.turns:
            out.setdefault(turn.session, []).append(turn)
        return out


def build_report(
    trace: Trace,
    tokenizer: str | Tokenizer = "o200k_base",
    cache: CacheOptions | None = None,
    name: str = "trace",
    progress: Callable[[int], None] | None = None,
) -> Report:
    """Explain ``trace`` once per cache kind (``cache``'s capacity, page and block sizes apply to all of them).

    ``progress`` is told how many requests are done, over all kinds (one pass per kind)."""
    options = cache or CacheOptions()
    encoder = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    kinds: tuple[CacheKind, ...] = get_args(CacheKind)
    what_if: dict[str, list[TurnReport]] = {}
    for index, kind in enumerate(kinds):
        done = index * len(trace.records)
        step = None if progress is None else (lambda n, done=done: progress(done + n))
        what_if[kind] = explain(trace, encoder, dataclasses.replace(options, kind=kind), progress=step)
    return Report(name, _short(encoder.name), options, what_if, list(trace.problems))


def ledger_report(ledger: Ledger, cache: CacheOptions, tokenizer: str, name: str = "ledger") -> Report:
    """The turns a cache-aware transport recorded, as a report: its server's figures only, since a ledger holds
    no request to replay under the other servers' rules. ``cache`` and ``tokenizer`` are the middleware's
    (``middleware.cache_options``; the server's own tokenizer when its predictions are exact). Turns without a
    prediction (no 2xx response, or a body passed through unread) are listed as problems. Texts are shown without
    credentials, as in every report."""
    turns, problems = [], []
    for line, turn in enumerate(ledger.turns(), start=1):
        if turn.predicted_prompt_tokens is None or turn.predicted_cached is None:
            why = turn.error or turn.passthrough or f"HTTP {turn.status}"
            problems.append(TraceProblem(line, f"session {turn.session} turn {turn.turn}: no prediction ({why})"))
            continue
        turns.append(
            TurnReport(
                session=redact(turn.session),
                turn=turn.turn,
                line=line,
                predicted_prompt_tokens=turn.predicted_prompt_tokens,
                predicted_cached=turn.predicted_cached,
                reported_cached=turn.reported_cached,
                reported_prompt_tokens=turn.reported_prompt_tokens,
                cause=turn.cause or "",
                detail=redact(turn.detail or ""),
                divergence=turn.divergence,
                wasted_tokens=turn.wasted_tokens,
                canonical_cached=turn.predicted_cached,  # sent as it is: the canonical form, when canonicalized
                provider_verdict=turn.provider_verdict,
                provider_missed_tokens=turn.provider_missed_tokens,
                provider_agrees=turn.provider_agrees,
                breakpoints=turn.breakpoints,
                worker=turn.worker,
            )
        )
    return Report(name, _short(tokenizer), cache, {cache.kind: turns}, problems, live=True)


def _short(name: str) -> str:
    """A vocabulary name as it is; a ``tokenizer.json`` path as its folder and file (no machine paths in reports)."""
    path = Path(name)
    return name if len(path.parts) < 2 else f"{path.parent.name}/{path.name}"
