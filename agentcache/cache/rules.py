"""The hosted APIs' caching rules, model by model: the one table ``OpenAIPromptCache`` and ``AnthropicPromptCache``
apply, each row with the page that states it.

A row says how small a prefix can be cached, how hits are rounded, how many breakpoints a request may write and
where the implicit one goes, which TTLs exist, and what reads and writes cost relative to uncached input. A model
not in the table gets its provider's most conservative rule (the fewest hits, the dearest tokens) and an
:class:`~agentcache.errors.UnknownModelWarning`, so a prediction for it errs towards the bill being higher.
Rule by rule, with the disagreements between sources: docs/model-hosted.md.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from agentcache.errors import UnknownModelWarning

Provider = Literal["openai", "anthropic"]
Implicit = Literal["every_step", "latest_message", "none"]

OPENAI_GUIDE = "https://developers.openai.com/api/docs/guides/prompt-caching"
OPENAI_PRICING = "https://developers.openai.com/api/docs/pricing"
OPENAI_BREAKPOINT_REFERENCE = (
    "https://learn.microsoft.com/en-us/javascript/api/@azure/ai-projects/promptcachebreakpointconfig"
)
ANTHROPIC_GUIDE = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
ANTHROPIC_MINIMUM_DISPUTE = "https://github.com/anthropics/anthropic-sdk-python/issues/1194"
ANTHROPIC_NEW_MINIMA = "https://dev.to/creeta/claudes-prompt-cache-fails-silently-below-1024-tokens-1ch1"

MAX_BREAKPOINTS = 4
"""Breakpoints one request may carry: Anthropic rejects a 5th ``cache_control`` (HTTP 400, the automatic one
counted); OpenAI (GPT-5.6+) writes at most 4, the implicit one counted."""

LOOKBACK_BLOCKS = 20
"""Content blocks, counting the breakpoint's own, at whose ends Anthropic looks for an earlier entry."""

TTL_SECONDS: Mapping[str, float] = MappingProxyType({"5m": 300.0, "1h": 3600.0})
"""Anthropic's two ``cache_control.ttl`` values. An entry lives this long after its last write or read."""

_ANTHROPIC_WRITE: Mapping[str, float] = MappingProxyType({"5m": 1.25, "1h": 2.0})


@dataclass(frozen=True)
class CacheRule:
    """One model family's caching rule. Costs are multiples of the uncached input-token price."""

    provider: Provider
    model: str
    """The model id (without a date suffix) the row is for; OpenAI rows also cover ``<model>-<variant>``."""
    min_tokens: int
    """Shortest prefix (or breakpoint) that is cached; shorter is silently not cached."""
    increment: int
    """Hits are rounded down to ``min_tokens + k * increment``; 1 means exact boundaries."""
    implicit: Implicit
    """Where the provider caches without being told: every step of the prompt (``every_step``), a breakpoint at the
    end of the latest message (``latest_message``), or nowhere (``none``: only marked breakpoints)."""
    ttls: Mapping[str, float]
    """The TTL names the API accepts, in seconds an idle entry lives; the first is the default."""
    read: float
    """Price of a cached input token."""
    write: Mapping[str, float]
    """Price of a written input token per TTL name (1.0: writes cost what uncached input costs)."""
    source: str
    """The page that states the rule; docs/model-hosted.md lists the others checked."""
    max_breakpoints: int = MAX_BREAKPOINTS
    """Breakpoints a request may write, the implicit one included (unused by ``every_step`` rules)."""

    @property
    def default_ttl(self) -> str:
        return next(iter(self.ttls))

    def round_hit(self, tokens: int, minimum: int | None = None) -> int:
        """The cached tokens reported for a reusable prefix of ``tokens``: 0 under the minimum (``min_tokens``
        unless the caller overrides it), else rounded down to a step."""
        floor = self.min_tokens if minimum is None else minimum
        if tokens < floor:
            return 0
        return floor + (tokens - floor) // self.increment * self.increment

    def turn_cost(self, prompt_tokens: int, cached: int, written: int, ttl: str | None = None) -> float:
        """What a turn's prompt costs in input-token equivalents: reads at ``read``, writes at ``write[ttl]``, the
        rest at 1. ``cached`` and ``written`` are parts of ``prompt_tokens``."""
        uncached = prompt_tokens - cached - written
        return uncached + self.read * cached + self.write[ttl or self.default_ttl] * written


def _openai(model: str, implicit: Implicit, ttls: dict[str, float], read: float, write: float) -> CacheRule:
    steps = 1 if implicit == "latest_message" else 128
    writes = dict.fromkeys(ttls, write)
    return CacheRule(
        "openai",
        model,
        1024,
        steps,
        implicit,
        MappingProxyType(ttls),
        read,
        MappingProxyType(writes),
        OPENAI_GUIDE if implicit == "latest_message" else OPENAI_PRICING,
    )


def _anthropic(model: str, minimum: int, source: str = ANTHROPIC_GUIDE) -> CacheRule:
    return CacheRule("anthropic", model, minimum, 1, "none", TTL_SECONDS, 0.1, _ANTHROPIC_WRITE, source)


_IN_MEMORY = {"in_memory": 300.0, "24h": 86400.0}
_RULES: tuple[CacheRule, ...] = (
    # OpenAI. GPT-5.6 and later: breakpoints (implicit at the latest message, up to 3 explicit), exact boundaries,
    # 30-minute TTL, writes 1.25x. Earlier: every 128-token step from 1024, writes at the input price.
    _openai("gpt-5.6", "latest_message", {"30m": 1800.0}, 0.1, 1.25),
    _openai("gpt-5.5", "every_step", {"24h": 86400.0}, 0.1, 1.0),
    *(_openai(name, "every_step", dict(_IN_MEMORY), 0.1, 1.0) for name in ("gpt-5.4", "gpt-5.2", "gpt-5.1", "gpt-5")),
    *(_openai(name, "every_step", dict(_IN_MEMORY), 0.25, 1.0) for name in ("gpt-4.1", "o3", "o4-mini")),
    *(_openai(name, "every_step", dict(_IN_MEMORY), 0.5, 1.0) for name in ("gpt-4o", "o1")),
    # Anthropic: one mechanism, minima per model.
    *(_anthropic(name, 512, ANTHROPIC_NEW_MINIMA) for name in ("claude-opus-5",)),
    *(_anthropic(name, 1024, ANTHROPIC_NEW_MINIMA) for name in ("claude-sonnet-5",)),
    _anthropic("claude-opus-4-8", 1024),
    _anthropic("claude-opus-4-7", 2048, ANTHROPIC_NEW_MINIMA),
    *(_anthropic(name, 4096) for name in ("claude-opus-4-6", "claude-opus-4-5", "claude-haiku-4-5")),
    _anthropic("claude-sonnet-4-6", 2048, ANTHROPIC_MINIMUM_DISPUTE),
    *(_anthropic(name, 1024) for name in ("claude-opus-4-1", "claude-opus-4", "claude-sonnet-4-5", "claude-sonnet-4")),
    *(_anthropic(name, 1024) for name in ("claude-3-7-sonnet", "claude-3-5-sonnet", "claude-3-opus")),
    *(_anthropic(name, 2048) for name in ("claude-3-5-haiku", "claude-3-haiku")),
)

RULES: Mapping[tuple[Provider, str], CacheRule] = MappingProxyType({(r.provider, r.model): r for r in _RULES})
"""Every documented rule, by (provider, model id without date suffix)."""

CONSERVATIVE: Mapping[Provider, CacheRule] = MappingProxyType(
    {
        # The fewest hits any OpenAI rule gives (hits only at breakpoints, rounded down in 128-token steps from
        # 1024), the shortest TTL and the dearest tokens (reads 0.5x as on gpt-4o, writes 1.25x as on GPT-5.6).
        "openai": CacheRule(
            "openai",
            "unknown",
            1024,
            128,
            "latest_message",
            MappingProxyType({"in_memory": 300.0}),
            0.5,
            MappingProxyType({"in_memory": 1.25}),
            OPENAI_GUIDE,
        ),
        # The largest documented minimum; TTLs and prices are the same for every Claude model.
        "anthropic": CacheRule(
            "anthropic",
            "unknown",
            max(r.min_tokens for r in _RULES if r.provider == "anthropic"),
            1,
            "none",
            TTL_SECONDS,
            0.1,
            _ANTHROPIC_WRITE,
            ANTHROPIC_GUIDE,
        ),
    }
)
"""The rule an unlisted model gets: for each quantity, the least favourable value its provider documents."""

_DATE_SUFFIX = re.compile(r"-(\d{8}|\d{4}-\d{2}-\d{2}|latest)$")


def family(model: str) -> str:
    """The table key of a model id: without a provider prefix (``anthropic/``) or a date suffix."""
    return _DATE_SUFFIX.sub("", model.rsplit("/", 1)[-1].strip().lower())


def lookup(provider: Provider, model: str) -> CacheRule | None:
    """The documented rule of ``model``, or None. OpenAI variants (``gpt-5.6-mini``) take their family's row;
    Claude ids must match a row exactly, since their minima differ between neighbouring versions."""
    name = family(model)
    if provider == "anthropic":
        return RULES.get((provider, name))
    matches = [r for (p, key), r in RULES.items() if p == provider and (name == key or name.startswith(key + "-"))]
    return max(matches, key=lambda r: len(r.model), default=None)


def rule_for(provider: Provider, model: str) -> CacheRule:
    """The rule to model ``model`` with: its documented row, or the conservative one with a warning."""
    rule = lookup(provider, model)
    if rule is not None:
        return rule
    fallback = CONSERVATIVE[provider]
    known = ", ".join(key for p, key in RULES if p == provider)
    warnings.warn(
        f"agentcache: no {provider} caching rule for model {model!r}; predicting with the most conservative one "
        f"(minimum {fallback.min_tokens} tokens, reads {fallback.read}x): name a listed model ({known}) or check "
        "docs/model-hosted.md",
        UnknownModelWarning,
        stacklevel=3,
    )
    return fallback
