"""Where to put cache breakpoints in a request: Anthropic ``cache_control`` markers, OpenAI (GPT-5.6+)
``prompt_cache_breakpoint`` blocks, placed for the shape of an agent session.

An agent session resends one stable prefix (tools, system prompt) and a conversation that grows every turn. So
:func:`place` marks, in order of value:

1. the end of the stable prefix, which every later turn (and every other session) reads: given the session's
   previous request, the end of the part of the tools and system prompt that did not change since (a system prompt
   or state message that changes every turn is marked before, not at its end);
2. the end of the conversation, which the next turn extends (unless the provider already puts a breakpoint there:
   Anthropic's automatic mode, OpenAI's implicit one; and not when this turn and the one before both changed what
   the turn before had sent, since an entry after a part that changes every turn is written and never read);
3. given the session's previous request, its end, when this turn added so many blocks that Anthropic's 20-block
   lookback would not reach it from the new end;
4. with a breakpoint to spare, the end of the tool definitions, which outlive a change of the system prompt (a
   write is billed by the tokens written, not by breakpoint, so the extra entry costs nothing).

The previous request is passed as the :class:`Shape` the previous plan returned (``plan.shape``): one number per
segment, cheap to keep per session, which also carries how many turns in a row did not extend the one before. A
request dict is accepted too (its shape is taken, with no history).

It never places more than the API allows (4, counting the caller's markers and the automatic or implicit one),
never one whose prefix is under the model's minimum (it would write nothing), and says what it placed and why, and
what it did not. Token counts are agentcache's rendering (o200k_base unless told), an estimate of the provider's.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from agentcache.cache.hosted import lookback_positions
from agentcache.cache.rules import LOOKBACK_BLOCKS, MAX_BREAKPOINTS, CacheRule, Provider, rule_for
from agentcache.predict.prompt import MARKERS, PromptTokenizer, Renderer, Segment
from agentcache.tokens import Tokenizer, get_tokenizer

MARKER: dict[Provider, tuple[str, dict[str, str]]] = {
    "anthropic": ("cache_control", {"type": "ephemeral"}),
    "openai": ("prompt_cache_breakpoint", {"mode": "explicit"}),
}
"""The key and value each provider reads as a breakpoint on a content block."""


@dataclass(frozen=True)
class Placement:
    """One breakpoint placed: the JSON path of the marked value, its prefix length in tokens, and why."""

    path: str
    tokens: int
    reason: str


@dataclass(frozen=True)
class Shape:
    """What placement needs to know of a session's previous request: how many messages it had, a digest of each
    segment's rendered text (markers ignored), and how many requests in a row changed what the one before had sent.
    Never the request itself, so a transport can keep one per session for next to nothing."""

    messages: int
    digests: tuple[int, ...]
    changes: int = 0
    """Consecutive requests, this one included, that did not extend the one before (a segment of it changed)."""


@dataclass
class Placements:
    """The account of a placement, as the ledger keeps it on a turn: what was placed, what was not and why."""

    placed: list[Placement] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """(JSON path, why not) of each place considered and left."""
    existing: int = 0
    """Breakpoints the request already had, the automatic or implicit one included."""
    refused: str | None = None
    """Why no placement was made at all (the request went out without agentcache's markers), or None."""

    @property
    def total(self) -> int:
        return self.existing + len(self.placed)


@dataclass
class PlacementPlan(Placements):
    """The request with its breakpoints, the account of them, and the :class:`Shape` to pass as ``previous`` with
    the session's next request."""

    request: dict[str, Any] = field(default_factory=dict)
    shape: Shape | None = None

    def account(self) -> Placements:
        """The account alone, without the request."""
        return Placements(self.placed, self.skipped, self.existing, self.refused)


def place(
    request: dict[str, Any],
    provider: Provider,
    model: str | None = None,
    *,
    previous: Shape | dict[str, Any] | None = None,
    tokenizer: str | Tokenizer = "o200k_base",
) -> PlacementPlan:
    """Breakpoints for ``request`` of a ``provider``'s ``model`` (default: the request's ``model``); ``previous`` is
    the session's previous request (the previous plan's ``shape``). The request is not changed: the plan holds a
    marked copy."""
    rule = rule_for(provider, model or str(request.get("model", "")))
    segments = Renderer().render(request)
    if isinstance(previous, dict):
        previous = _shape(Renderer().render(previous), previous, None)
    shape = _shape(segments, request, previous)
    plan = PlacementPlan(existing=_existing(request, rule), request=copy.deepcopy(request), shape=shape)
    if rule.provider == "openai" and rule.implicit != "latest_message":
        plan.skipped.append(("$", f"{rule.model}: caching is automatic, there are no breakpoints to place"))
        return plan
    encoder = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
    tokens, starts = PromptTokenizer(encoder).prompt(segments)
    ends = [*starts[1:], len(tokens)]
    found, passed = _candidates(request, segments, rule, previous, shape)
    plan.skipped += passed
    for index, reason in found:
        segment = segments[index]
        why_not = _refusal(segment, ends[index], rule, plan)
        if why_not is not None:
            plan.skipped.append((segment.path, why_not))
            continue
        plan.placed.append(Placement(_mark(plan.request, segment, rule.provider), ends[index], reason))
    return plan


def markers(value: Any) -> int:
    """The breakpoint markers written anywhere in a request (or part of one), Anthropic's top-level automatic
    ``cache_control`` included."""
    if isinstance(value, list):
        return sum(markers(item) for item in value)
    if isinstance(value, dict):
        return sum(key in value for key in MARKERS) + sum(markers(item) for item in value.values())
    return 0


def _existing(request: dict[str, Any], rule: CacheRule) -> int:
    """Breakpoints already in the request: the markers, plus OpenAI's implicit one."""
    implicit = rule.provider == "openai" and rule.implicit == "latest_message" and not _explicit_mode(request)
    return markers(request) + implicit


def _explicit_mode(request: dict[str, Any]) -> bool:
    options = request.get("prompt_cache_options")
    return isinstance(options, dict) and options.get("mode") == "explicit"


PREFIX_PARTS = ("tools", "params", "system")
"""The parts of a prompt an agent resends unchanged: its stable prefix."""


def _shape(segments: list[Segment], request: dict[str, Any], previous: Shape | None) -> Shape:
    messages = request.get("messages")
    digests = tuple(hash(s.text) for s in segments)
    extends = previous is None or _common(digests, previous.digests) == len(previous.digests)
    changes = 0 if extends or previous is None else previous.changes + 1
    return Shape(len(messages) if isinstance(messages, list) else 0, digests, changes)


def _candidates(
    request: dict[str, Any], segments: list[Segment], rule: CacheRule, previous: Shape | None, shape: Shape
) -> tuple[list[tuple[int, str]], list[tuple[str, str]]]:
    """(segment index, reason) of each place worth a breakpoint, most valuable first; and (JSON path, why not) of
    the places passed over for what the session's history says."""
    found: list[tuple[int, str]] = []
    passed: list[tuple[str, str]] = []
    stable = [i for i, s in enumerate(segments) if s.part in PREFIX_PARTS]
    kept = len(segments) if previous is None else _common(shape.digests, previous.digests)
    if kept < min(len(segments), len(previous.digests) if previous else 0):
        passed.append((segments[kept].path, "changed since the previous turn: an entry after it is not read"))
    cut = [i for i in stable if i < kept]
    why = "resent unchanged every turn" if len(cut) == len(stable) else "unchanged since the previous turn"
    if rule.provider == "openai":  # breakpoints sit on content blocks: not on tool definitions or schemas
        cut = [i for i in cut if segments[i].part == "system"]
    if cut:
        found.append((cut[-1], f"ends the tools and system prompt {why}"))
    if rule.provider == "anthropic":
        covered = isinstance(request.get("cache_control"), dict)  # automatic mode marks the last block
    else:
        covered = not _explicit_mode(request)  # the implicit breakpoint ends the latest message
    if segments and segments[-1].part == "messages" and not covered:
        if shape.changes >= 2:
            passed.append(
                (
                    segments[-1].path,
                    f"each of the last {shape.changes} turns changed what the one before had sent: an entry here "
                    "would be written and not read",
                )
            )
        else:
            found.append((len(segments) - 1, "ends the conversation so far, which the next turn extends"))
    extends = previous is not None and shape.changes == 0
    boundary = _previous_end(segments, previous) if rule.provider == "anthropic" and extends else None
    if boundary is not None:
        found.append((boundary, f"the previous turn's entry is over {LOOKBACK_BLOCKS} blocks back: mark it to read it"))
    tools = [i for i in cut if segments[i].part == "tools"]
    if tools and rule.provider == "anthropic":  # a write is billed by tokens, not by breakpoint: this one is free
        found.append((tools[-1], "ends the tool definitions, which outlive a change of the system prompt after them"))
    unique: dict[int, str] = {}
    for index, why in found:
        unique.setdefault(index, why)  # each place once, with its most valuable reason
    return list(unique.items()), passed


def _common(now: tuple[int, ...], before: tuple[int, ...]) -> int:
    """How many leading segments are the same in both."""
    return next((i for i, (a, b) in enumerate(zip(now, before, strict=False)) if a != b), min(len(now), len(before)))


def _previous_end(segments: list[Segment], previous: Shape | None) -> int | None:
    """The segment ending the previous request's messages, when this request added so many lookback positions
    after it that Anthropic's lookback from the new end would not reach it; None otherwise."""
    if previous is None or not previous.messages:
        return None
    last = previous.messages - 1
    index = next((i for i, s in enumerate(segments) if s.part == "messages" and s.index == last), None)
    if index is None:
        return None
    positions = lookback_positions([s.value for s in segments])
    return index if positions[-1] - positions[index] >= LOOKBACK_BLOCKS else None


def _refusal(segment: Segment, end: int, rule: CacheRule, plan: PlacementPlan) -> str | None:
    if segment.breakpoint:
        return "already marked by the caller"
    if plan.total >= MAX_BREAKPOINTS:
        return f"no breakpoint left: the API allows {MAX_BREAKPOINTS} and {plan.total} are set"
    if end < rule.min_tokens:
        return (
            f"its prefix is {end:,} tokens, under {rule.model}'s minimum of {rule.min_tokens:,}: it would cache nothing"
        )
    return None


def _mark(request: dict[str, Any], segment: Segment, provider: Provider) -> str:
    """Put the provider's marker on the last content block of the segment's value in ``request``; returns the JSON
    path of the marked segment in the marked request."""
    key, value = MARKER[provider]
    if segment.path == "$.system":  # Anthropic's string system prompt becomes one text block
        request["system"] = [{"type": "text", "text": request["system"], key: dict(value)}]
        return "$.system[0]"
    container, index = _locate(request, segment)
    target = container[index]
    if segment.part == "tools" or not isinstance(target, dict):
        target[key] = dict(value)
        return segment.path
    content = target.get("content")
    if isinstance(content, str):
        target["content"] = [{"type": "text", "text": content, key: dict(value)}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        content[-1][key] = dict(value)
    else:
        target[key] = dict(value)
    return segment.path


def _locate(request: dict[str, Any], segment: Segment) -> tuple[list[Any], int]:
    field = segment.path[2:].split("[", 1)[0]
    return request[field], segment.index
