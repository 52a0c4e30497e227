"""Trace rules for cache breakpoints (AC311-AC314): markers the API refuses, or that cache nothing.

Each request of a trace is checked on its own (the budget, the minimum, the TTL order) and against the previous
request of its session (a marker on a block that changed). A marker is Anthropic's ``cache_control`` or OpenAI's
``prompt_cache_breakpoint``; the model's minimum comes from :mod:`agentcache.cache.rules` (a model without a rule
is not checked for it), prefix lengths from agentcache's rendering in o200k_base (an estimate of the provider's).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentcache.cache.rules import MAX_BREAKPOINTS, lookup
from agentcache.drift.trace import Trace, TraceRecord
from agentcache.lint.core import Finding, Rule
from agentcache.predict.prompt import MARKERS, PromptTokenizer, Renderer, Segment, json_text
from agentcache.tokens import get_tokenizer

TOO_MANY = Rule(
    "AC311",
    "too-many-breakpoints",
    "a request carries more cache breakpoints than the API allows (4, the automatic or implicit one included)",
    "keep at most 4: the end of the tools and system prompt, and the end of the conversation; "
    "agentcache.breakpoints.place counts the ones already set",
)
CHANGING = Rule(
    "AC312",
    "breakpoint-on-changing-block",
    "a breakpoint marks a block whose content changed since the session's previous turn",
    "mark blocks that stay the same (the system prompt without its volatile values, the end of the history); "
    "an entry written on a changing block is never read",
)
UNDER_MINIMUM = Rule(
    "AC313",
    "breakpoint-under-minimum",
    "a breakpoint ends a prefix shorter than the model's minimum cacheable length, so it caches nothing",
    "move the breakpoint later, past the minimum (docs/model-hosted.md lists it per model), or drop it",
)
TTL_ORDER = Rule(
    "AC314",
    "ttl-order",
    "a 1-hour breakpoint comes after a 5-minute one, or the top-level TTL contradicts the last block's: the API "
    "refuses the request",
    "put longer TTLs first (tools and system 1h, the conversation 5m), and give the top-level cache_control the "
    "last block's TTL",
)
RULES: tuple[Rule, ...] = (TOO_MANY, CHANGING, UNDER_MINIMUM, TTL_ORDER)


def findings(display: str, trace: Trace) -> list[Finding]:
    """The breakpoint findings of every request of ``trace``, at its line."""
    prompts = PromptTokenizer(get_tokenizer("o200k_base"))
    renderer = Renderer()
    previous: dict[str, dict[str, str]] = {}
    out: list[Finding] = []
    for record in trace.records:
        segments = renderer.render(record.request)
        marked = {s.path: json_text(s.value) for s in segments if s.breakpoint}
        for rule, message in _check(record, segments, marked, previous.get(record.session), prompts):
            out.append(Finding(display, record.line, 1, rule.code, message, rule.hint))
        previous[record.session] = {s.path: json_text(s.value) for s in segments}
    return out


def _check(
    record: TraceRecord,
    segments: list[Segment],
    marked: dict[str, str],
    before: dict[str, str] | None,
    prompts: PromptTokenizer,
) -> Iterator[tuple[Rule, str]]:
    request = record.request
    ttls = list(_ttls(request))
    automatic = request.get("cache_control")
    count = len(ttls) + isinstance(automatic, dict)
    if count > MAX_BREAKPOINTS:
        yield TOO_MANY, f"{count} breakpoints (the limit is {MAX_BREAKPOINTS}): the API refuses the request"
    if any(a == "5m" and b == "1h" for i, a in enumerate(ttls) for b in ttls[i + 1 :]):
        yield TTL_ORDER, f"breakpoint TTLs in prompt order are {ttls}: a '1h' one follows a '5m' one"
    elif isinstance(automatic, dict) and ttls and _last_block_ttl(request) not in (None, automatic.get("ttl", "5m")):
        yield TTL_ORDER, "the top-level cache_control's TTL differs from the explicit one on the last block"
    last = segments[-1].path if segments else None
    for path, text in marked.items():
        if before is not None and path != last and path in before and before[path] != text:
            yield CHANGING, f"the breakpoint on {path} marks content that changed since the previous turn"
    rule = next(
        (r for p in ("anthropic", "openai") if (r := lookup(p, str(request.get("model", "")))) is not None), None
    )
    if rule is None or not marked:
        return
    tokens, starts = prompts.prompt(segments)
    ends = [*starts[1:], len(tokens)]
    for segment, end in zip(segments, ends, strict=True):
        if segment.breakpoint and end < rule.min_tokens:
            yield (
                UNDER_MINIMUM,
                (
                    f"the breakpoint on {segment.path} ends a prefix of about {end:,} tokens, under {rule.model}'s "
                    f"minimum of {rule.min_tokens:,}"
                ),
            )


def _ttls(request: dict[str, Any]) -> Iterator[str]:
    """The TTL of every explicit marker, in prompt order (tools, system, messages); 5m unless given."""
    for part in ("tools", "system", "messages"):
        yield from _marker_ttls(request.get(part))


def _marker_ttls(value: Any) -> Iterator[str]:
    if isinstance(value, list):
        for item in value:
            yield from _marker_ttls(item)
    elif isinstance(value, dict):
        for key in MARKERS:
            marker = value.get(key)
            if isinstance(marker, dict):
                ttl = marker.get("ttl")
                yield ttl if isinstance(ttl, str) else "5m"
        yield from _marker_ttls(value.get("content"))


def _last_block_ttl(request: dict[str, Any]) -> str | None:
    """The TTL of an explicit marker on the very last block of the request, if it has one."""
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None
    content = messages[-1].get("content")
    block = content[-1] if isinstance(content, list) and content else messages[-1]
    marker = block.get("cache_control") if isinstance(block, dict) else None
    return (marker.get("ttl") or "5m") if isinstance(marker, dict) else None
