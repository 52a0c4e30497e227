"""Why a turn got the cache hit it got: the one diagnosis the live ledger and the offline explainer share.

A turn is compared with the previous turn of its session (the first divergent segment, JSON path and token, and
its cause), then with what the server reported (a hit smaller than the model predicted is an eviction or an
expiry) and the server's floor (a prompt too short to be cached at all).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcache.cache.prefix import common_prefix
from agentcache.predict import causes
from agentcache.predict.diff import Divergence, first_divergence
from agentcache.predict.served import Served


@dataclass(frozen=True)
class Previous:
    """What a session's last turn left for the next one to be compared with."""

    request: dict[str, Any]
    served: Served
    relocated: str | None = None
    """JSON path of the message canonicalization appended to hold volatile lines, if it did."""
    worker: str | None = None
    """The worker of a cluster that served it (None: a single server)."""
    rendered_at: datetime | None = None
    """The time the server's template rendered the turn at (its date, for a template that renders one)."""
    server_evicted: int = 0
    """Tokens its server had said it evicted (KV events) when the turn was served: a later count above it means
    the server evicted since."""


@dataclass(frozen=True)
class Diagnosis:
    cause: str
    """A code of :mod:`agentcache.predict.causes` (``none`` when the prefix held)."""
    detail: str
    divergence: Divergence | None
    """Where the request first differs from the previous one, in agentcache's segments and tokens."""
    divergence_token: int | None
    """Index of the first prompt token that differs, in the tokens the prediction counted (the server's own when
    the prediction is exact)."""
    wasted_tokens: int
    """Tokens the previous request had already sent that this one prefills again."""


def diagnose(
    previous: Previous | None,
    request: dict[str, Any],
    served: Served,
    reported_cached: int | None = None,
    reported_prompt_tokens: int | None = None,
    minimum: int = 0,
    worker: str | None = None,
    lost: frozenset[str] = frozenset(),
    server_evicted: bool = False,
) -> Diagnosis:
    """The diagnosis of ``request``, just served as ``served`` on ``worker``, against the previous turn of its
    session; ``lost`` are the workers known to have gone away; ``server_evicted``, whether the server said (KV
    events) it evicted some of its cache since the session's previous turn."""
    cause, detail, divergence, wasted = _drift(previous, request, served)
    relocated = None if previous is None else previous.relocated
    if relocated and divergence is not None and divergence.path.startswith(relocated):
        cause = causes.VOLATILE_VALUE
        detail = "volatile lines changed; relocated to the last message, so only the tail is prefilled again"
    token = _divergence_token(previous, served, cause, divergence)
    moved = None
    if previous is not None and previous.worker != worker and cause != causes.NEW_SESSION:
        moved = _moved(previous, served, worker, lost)
    if moved is not None and (cause == causes.NONE or moved[2] > wasted):
        # A turn that both changed and moved is named by what re-billed more: the prefix before the change that
        # the new worker lacked, or the tokens after it.
        drift = "" if cause == causes.NONE else f"; it also changed ({cause}: {detail}), re-billing {wasted} more"
        cause, detail = moved[0], moved[1] + drift
    elif cause == causes.NONE and previous is not None and server_evicted:
        reusable = _reusable(previous, served)
        if served.cached < reusable:
            cause = causes.EVICTED
            detail = (
                f"the server evicted {reusable - served.cached} of the {reusable} tokens the previous turn left "
                "(its KV events)"
            )
    if cause in (causes.NONE, causes.NEW_SESSION):
        if 0 < served.prompt_tokens < minimum:
            cause, detail = causes.BELOW_MINIMUM, f"{served.prompt_tokens} tokens, under the minimum of {minimum}"
        elif (
            reported_cached is not None
            and reported_cached < served.cached
            and reported_prompt_tokens in (None, served.prompt_tokens)
        ):
            # Only when the server counts the prompt as we do: with another tokenizer the counts don't compare.
            cause = causes.EVICTED
            detail = (
                f"server reported {reported_cached} cached, the model predicted {served.cached}: evicted or expired"
            )
    return Diagnosis(cause, detail, divergence, token, wasted)


def _moved(
    previous: Previous, served: Served, worker: str | None, lost: frozenset[str]
) -> tuple[str, str, int] | None:
    """``worker_changed`` (or ``worker_lost``), its detail and the tokens it re-billed, when a turn landed on a worker
    that holds less of its predecessor's prompt than the predecessor's worker would have (their common prefix, all
    but the last token: servers recompute that one)."""
    reusable = _reusable(previous, served)
    if served.cached >= reusable:
        return None
    held = f"{worker} held {served.cached} of the {reusable} tokens the previous turn left on {previous.worker}"
    if previous.worker in lost:
        return causes.WORKER_LOST, f"{previous.worker} went away; {held}", reusable - served.cached
    return causes.WORKER_CHANGED, f"routed to another worker: {held}", reusable - served.cached


def _reusable(previous: Previous, served: Served) -> int:
    """Tokens of the previous turn's prompt this one could read from its cache: their common prefix, all but the
    last token of this prompt (servers recompute that one), in the server's own tokens when both are known."""
    before, now = previous.served, served
    old, new = (
        (before.exact, now.exact) if now.exact is not None and before.exact is not None else (before.tokens, now.tokens)
    )
    return min(common_prefix(old, new), max(0, len(new) - 1))


def _drift(
    previous: Previous | None, request: dict[str, Any], served: Served
) -> tuple[str, str, Divergence | None, int]:
    if previous is None:
        return causes.NEW_SESSION, "first request of the session", None, 0
    before_request, before = previous.request, previous.served
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


def _divergence_token(
    previous: Previous | None, served: Served, cause: str, divergence: Divergence | None
) -> int | None:
    if served.exact is None:  # agentcache's rendering: the divergence is in its tokens
        return None if divergence is None else divergence.token_index
    before: array[int] | None = None if previous is None else previous.served.exact
    if before is None or cause == causes.NONE:
        return None
    return common_prefix(before, served.exact)  # the server's own tokens: where they first differ
