"""The hosted providers' own cache-miss diagnoses, read from a response and set beside agentcache's cause.

Anthropic (Messages, ``cache-diagnosis-2026-04-07``): the request carries ``diagnostics.previous_message_id`` (the
previous response's ``id``, or null on the first turn to opt in); the response (or a stream's ``message_start``)
carries ``diagnostics.cache_miss_reason``: null (no divergence, or the comparison was still running), or an object
whose ``type`` is ``model_changed``, ``system_changed``, ``tools_changed``, ``messages_changed`` (with
``cache_missed_input_tokens``), ``previous_message_not_found`` or ``unavailable``.
https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics

OpenAI (Responses API): the request carries ``prompt_cache_options.comparison_response_id``; the response carries
``prompt_cache_diagnostics``, a union on ``type``: ``cache_hit``, ``cache_miss`` (``reason``,
``cache_missed_tokens``, ``comparison_reusable_tokens``), ``comparison_response_not_found``, ``unavailable``.
https://developers.openai.com/api/docs/guides/prompt-caching/diagnostics

Each verdict maps onto the part of the prompt agentcache locates drift in (``model``, ``tools``, ``params``,
``system``, ``messages``): the two agree when agentcache's divergence lies in one of the parts the provider named.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentcache.predict.causes import BELOW_MINIMUM, EVICTED, MODEL_CHANGED, NEW_SESSION, NONE
from agentcache.predict.diff import Divergence

ANTHROPIC_BETA = "cache-diagnosis-2026-04-07"
"""The ``anthropic-beta`` header value that turns on Anthropic's cache diagnosis."""

#: The prompt parts each provider verdict names. ``()`` is "nothing diverged"; a verdict missing here (the
#: previous response not found, diagnosis unavailable, comparison still running) judges nothing.
PARTS_OF: Mapping[str, tuple[str, ...]] = {
    # Anthropic
    "model_changed": ("model",),
    "tools_changed": ("tools",),
    "system_changed": ("system",),
    "messages_changed": ("messages", "params"),  # tool_choice, images and thinking settings invalidate messages
    # OpenAI cache_miss reasons
    "prompt_cache_key_changed": ("params",),
    "text_format_changed": ("params",),
    "reasoning_effort_changed": ("params",),
    "verbosity_changed": ("params",),
    "service_tier_changed": ("params",),
    "context_compacted": ("messages",),
    "input_changed": ("system", "messages"),
    # no divergence
    "cache_hit": (),
}

#: agentcache causes that mean the prompt did not diverge from the session's previous one.
UNBROKEN = frozenset({NONE, BELOW_MINIMUM, EVICTED})


@dataclass(frozen=True)
class ProviderDiagnosis:
    """What the provider said about one turn's cache."""

    provider: str
    """``anthropic`` or ``openai``."""
    verdict: str
    """The provider's own word: a miss reason, ``cache_hit``, ``no_divergence_or_pending`` (Anthropic's null),
    ``previous_not_found`` or ``unavailable``."""
    missed_tokens: int | None = None
    """Input tokens after the divergence, by the provider's estimate."""

    @property
    def parts(self) -> tuple[str, ...] | None:
        """The prompt parts the verdict names (``()``: none diverged); None when it judges nothing."""
        return PARTS_OF.get(self.verdict)

    def agrees(self, cause: str, divergence: Divergence | None, first: bool = False) -> bool | None:
        """Whether agentcache's cause (and where it located the divergence) says what the provider says; None
        when either side has nothing to compare (no verdict, or the ``first`` turn of a session)."""
        parts = self.parts
        if parts is None or first or cause == NEW_SESSION:
            return None
        if not parts:
            return cause in UNBROKEN
        if cause == MODEL_CHANGED:
            return "model" in parts
        return divergence is not None and divergence.part in parts

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "verdict": self.verdict, "missed_tokens": self.missed_tokens}


def read_diagnosis(body: Any) -> ProviderDiagnosis | None:
    """The provider's diagnosis in a response body (or a stream event), or None if it carries none."""
    if not isinstance(body, Mapping):
        return None
    anthropic = body.get("diagnostics")
    if isinstance(anthropic, Mapping) and "cache_miss_reason" in anthropic:
        reason = anthropic["cache_miss_reason"]
        if reason is None:
            return ProviderDiagnosis("anthropic", "no_divergence_or_pending")
        if isinstance(reason, Mapping) and isinstance(reason.get("type"), str):
            verdict = "previous_not_found" if reason["type"] == "previous_message_not_found" else reason["type"]
            return ProviderDiagnosis("anthropic", verdict, _count(reason.get("cache_missed_input_tokens")))
        return None
    openai = body.get("prompt_cache_diagnostics")
    if not isinstance(openai, Mapping) or not isinstance(openai.get("type"), str):
        return None
    kind = openai["type"]
    if kind == "cache_miss" and isinstance(openai.get("reason"), str):
        return ProviderDiagnosis("openai", openai["reason"], _count(openai.get("cache_missed_tokens")))
    if kind == "comparison_response_not_found":
        return ProviderDiagnosis("openai", "previous_not_found")
    return ProviderDiagnosis("openai", kind)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
