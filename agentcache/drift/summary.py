"""Totals over the turns of an explanation: hit ratios, waste, what canonicalization would save."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from agentcache.drift.explain import TurnReport
from agentcache.totals import ratio


@dataclass(frozen=True)
class Summary:
    turns: int
    sessions: int
    predicted_prompt_tokens: int
    predicted_cached: int
    reported_cached: int | None
    """Sum over the turns whose usage was recorded; None when no turn had usage."""
    reported_hit_ratio: float | None
    """Reported cached over reported prompt tokens, over the turns whose usage has both: the server's own units,
    never mixed with the client tokenizer's."""
    wasted_tokens: int
    canonical_cached: int
    wasted_by_cause: dict[str, int] = field(default_factory=dict)
    """Wasted tokens per cause, largest first."""
    turns_by_cause: dict[str, int] = field(default_factory=dict)

    @property
    def hit_ratio(self) -> float:
        return ratio(self.predicted_cached, self.predicted_prompt_tokens)

    @property
    def canonical_hit_ratio(self) -> float:
        return ratio(self.canonical_cached, self.predicted_prompt_tokens)

    @property
    def saved_by_canonicalization(self) -> int:
        """Prefill tokens canonicalization would have saved (negative if it would have cost some)."""
        return self.canonical_cached - self.predicted_cached

    def to_json(self) -> dict[str, object]:
        return {
            "turns": self.turns,
            "sessions": self.sessions,
            "predicted_prompt_tokens": self.predicted_prompt_tokens,
            "predicted_cached": self.predicted_cached,
            "hit_ratio": round(self.hit_ratio, 4),
            "reported_cached": self.reported_cached,
            "reported_hit_ratio": None if self.reported_hit_ratio is None else round(self.reported_hit_ratio, 4),
            "wasted_tokens": self.wasted_tokens,
            "canonical_cached": self.canonical_cached,
            "canonical_hit_ratio": round(self.canonical_hit_ratio, 4),
            "saved_by_canonicalization": self.saved_by_canonicalization,
            "wasted_by_cause": self.wasted_by_cause,
            "turns_by_cause": self.turns_by_cause,
        }


def summarize(reports: Sequence[TurnReport]) -> Summary:
    wasted: Counter[str] = Counter()
    for report in reports:
        if report.wasted_tokens:
            wasted[report.cause] += report.wasted_tokens
    reported = [r for r in reports if r.reported_cached is not None]
    both = [r for r in reported if r.reported_prompt_tokens]
    return Summary(
        turns=len(reports),
        sessions=len({r.session for r in reports}),
        predicted_prompt_tokens=sum(r.predicted_prompt_tokens for r in reports),
        predicted_cached=sum(r.predicted_cached for r in reports),
        reported_cached=sum(r.reported_cached or 0 for r in reported) if reported else None,
        reported_hit_ratio=ratio(
            sum(r.reported_cached or 0 for r in both), sum(r.reported_prompt_tokens or 0 for r in both)
        )
        if both
        else None,
        wasted_tokens=sum(r.wasted_tokens for r in reports),
        canonical_cached=sum(r.canonical_cached for r in reports),
        wasted_by_cause=dict(wasted.most_common()),
        turns_by_cause=dict(Counter(r.cause for r in reports).most_common()),
    )
