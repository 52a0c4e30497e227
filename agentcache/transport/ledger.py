"""The per-turn record of everything the transport saw: what was sent, what the server reported, what the
client-side model predicted, and why a turn missed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from agentcache.breakpoints import Placements
from agentcache.predict.diff import Divergence
from agentcache.redact import redact
from agentcache.totals import Totals, hit_ratio, totals
from agentcache.transport.background import Pending


@dataclass(frozen=True, slots=True)
class Turn:
    """One chat request that went through the transport."""

    session: str
    turn: int
    """1-based position in the session, in the order requests were sent."""
    session_source: str
    """Where the session id came from (see :mod:`agentcache.transport.session`)."""
    path: str
    model: str | None
    stream: bool
    canonicalized: bool
    """Whether the body sent is the canonical form (False when switched off or passed through)."""
    passthrough: str | None
    """Why the request was sent exactly as it came, or None."""
    status: int | None
    """HTTP status, None when no response arrived."""
    error: str | None
    """The exception (type and message) the request or the response stream raised, if any."""
    reported_prompt_tokens: int | None
    """Prompt tokens the server reported."""
    reported_cached: int | None
    """Cached prompt tokens the server reported; None when it did not say."""
    predicted_prompt_tokens: int | None
    """Prompt tokens as the client-side model counts them (the server's own count when ``exact``)."""
    predicted_cached: int | None
    """Cached tokens the client-side model predicts the server reports."""
    exact: bool
    """Whether the prediction used the server's own template and tokenizer (else it is agentcache's estimate)."""
    output_ids_known: bool
    """Whether the server returned the generated token ids (else the output was re-tokenized from its text)."""
    cause: str | None
    """Drift cause against the session's previous request (codes of :mod:`agentcache.predict.causes`)."""
    detail: str | None
    divergence_token: int | None
    """Index of the first prompt token that differs from the previous request of the session."""
    divergence: Divergence | None
    """Where the request first differs from the previous one (part, JSON path, character), in agentcache's
    rendering; None when it extends it, or when there was no prediction."""
    wasted_tokens: int
    started: float
    seconds: float
    prediction_error: str | None = None
    """Why a turn the server answered has no prediction (the client could not render the request), or None."""
    worker: str | None = None
    """The worker of a cluster that served the turn (see :mod:`agentcache.transport.cluster`); None for one server."""
    worker_source: str | None = None
    """How the worker is known: ``header`` (the gateway named it), ``routing_key`` (pinned, not told) or
    ``unknown``; None for a single server."""
    routing_key: str | None = None
    """The routing key the request carried to the gateway, or None."""
    breakpoints: Placements | None = None
    """The cache breakpoints agentcache placed on the request, those it did not and why (the caller's own counted in
    ``existing``), or why it placed none; None when placement was not asked for (``breakpoints=False``)."""
    provider_verdict: str | None = None
    """The provider's own diagnosis of the turn (:mod:`agentcache.predict.provider`), when the response had one."""
    provider_missed_tokens: int | None = None
    """Input tokens after the divergence, by the provider's estimate."""
    provider_agrees: bool | None = None
    """Whether the provider's verdict and agentcache's ``cause`` name the same change; None when there is nothing
    to compare. False is a disagreement worth reading: one of the two is wrong about this turn."""

    @property
    def hit_ratio(self) -> float | None:
        return hit_ratio(self.reported_cached, self.reported_prompt_tokens)

    def to_json(self) -> dict[str, Any]:
        """The turn as JSON, without credentials (an error message can quote a URL with its key)."""
        exported: dict[str, Any] = redact({**asdict(self), "hit_ratio": self.hit_ratio})
        return exported


@dataclass(frozen=True)
class SessionSummary(Totals):
    """The :class:`~agentcache.totals.Totals` of one session."""

    session: str = ""


class Ledger:
    """Thread-safe list of turns, by session. ``on_turn`` is called with each turn as it is recorded.

    Turns are recorded in the background after their responses reached the caller: the reads wait for the ones
    still on their way (:attr:`pending`), so a read after a call returns sees its turn."""

    def __init__(self, on_turn: Callable[[Turn], None] | None = None) -> None:
        self._turns: list[Turn] = []
        self._next: dict[str, int] = {}
        self._lock = threading.Lock()
        self._on_turn = on_turn
        self.pending = Pending()
        """The turns of calls that ended, not recorded yet."""

    def next_turn(self, session: str) -> int:
        """Number the next request of ``session`` (when it is sent, so concurrent turns keep their order)."""
        with self._lock:
            number = self._next[session] = self._next.get(session, 0) + 1
            return number

    def record(self, turn: Turn) -> None:
        with self._lock:
            self._turns.append(turn)
        if self._on_turn is not None:
            self._on_turn(turn)

    def turns(self, session: str | None = None) -> list[Turn]:
        """Turns in the order they completed, of one session or all, sorted by session then turn number."""
        self.pending.wait()
        with self._lock:
            chosen = [t for t in self._turns if session is None or t.session == session]
        return sorted(chosen, key=lambda t: (t.session, t.turn))

    def sessions(self) -> list[str]:
        self.pending.wait()
        with self._lock:
            return sorted({t.session for t in self._turns})

    def disagreements(self) -> list[Turn]:
        """The turns where the provider's own diagnosis and agentcache's cause disagree."""
        return [turn for turn in self.turns() if turn.provider_agrees is False]

    def summary(self, session: str) -> SessionSummary:
        return SessionSummary(**vars(totals(self.turns(session))), session=session)
