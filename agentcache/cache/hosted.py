"""Hosted APIs' prompt caching (OpenAI, Anthropic), modelled on the client from their published rules.

Neither provider shows its cache, so these models encode what the documentation promises and nothing more:
which prefix lengths can hit, how long an idle prefix lives, what a request writes. Time is explicit: every call
takes ``now`` (seconds; default ``time.monotonic()``), so expiry can be replayed from logged timestamps; ``now``
must not go backwards, and one instance should not mix given times with the default clock.

Both share the interface of the other cache models (``match``, ``insert``, ``serve``, ``stats``); they have no
``evict``, because a hosted cache has no capacity a client can see: entries only expire. Rule by rule, with
sources: docs/model-hosted.md.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal

from agentcache.cache.blockhash import root_hash, token_array
from agentcache.cache.rules import (
    CONSERVATIVE,
    LOOKBACK_BLOCKS,
    MAX_BREAKPOINTS,
    RULES,
    TTL_SECONDS,
    CacheRule,
    lookup,
    rule_for,
)
from agentcache.errors import CacheModelError

Ttl = Literal["5m", "1h"]


@dataclass(frozen=True)
class CacheUsage:
    """What Anthropic reports for one request: ``cache_read_input_tokens`` and ``cache_creation_input_tokens``.

    The rest of the prompt is ``input_tokens``: ``prompt_len == cached + written + input_tokens``.
    """

    cached: int
    written: int


@dataclass
class _Entry:
    """One cached prefix: its length, how long it lives when idle, and when it dies unless used again."""

    length: int
    ttl: float
    expires: float


def _prefix_digests(tokens: Sequence[int], positions: Iterable[int], extra_key: Hashable) -> dict[int, bytes]:
    """Digest of ``tokens[:p]`` for each ``p`` in ``positions``, from one running hash over the token bytes."""
    packed = token_array(tokens)
    running = hashlib.blake2b(root_hash(extra_key), digest_size=16)
    digests: dict[int, bytes] = {}
    done = 0
    for position in sorted(set(positions)):
        running.update(packed[done:position])
        done = position
        digests[position] = running.copy().digest()
    return digests


class HostedPromptCache:
    """Prefix entries that die when idle past their TTL, written at breakpoints or prompt steps by one
    :class:`~agentcache.cache.rules.CacheRule`: the bookkeeping both hosted models share."""

    def __init__(self, rule: CacheRule, minimum: int) -> None:
        self.rule = rule
        self.min_cacheable_tokens = minimum
        self._entries: dict[bytes, _Entry] = {}
        self._latest = float("-inf")
        self._requests = 0
        self._prompt_tokens = 0
        self._cached_tokens = 0
        self._written_tokens = 0

    def minimum_tokens(self) -> int:
        return self.min_cacheable_tokens

    def _clock(self, now: float | None) -> float:
        """Resolve ``now`` and drop entries dead by then, so memory tracks the live cache."""
        moment = time.monotonic() if now is None else now
        if moment < self._latest:
            raise CacheModelError(
                f"time went backwards: now={moment} after {self._latest}; replay requests in the order they were "
                "sent, with their timestamps (and don't mix given times with the default clock)"
            )
        if moment > self._latest:
            self._latest = moment
            self._entries = {key: entry for key, entry in self._entries.items() if entry.expires > moment}
        return moment

    def _alive(self, digest: bytes, now: float) -> _Entry | None:
        entry = self._entries.get(digest)
        return entry if entry is not None and entry.expires > now else None

    def _longest(self, digests: Mapping[int, bytes], now: float) -> tuple[int, _Entry | None]:
        """The longest prefix (of those given as length -> digest) with a live entry, and that entry."""
        for position in sorted(digests, reverse=True):
            entry = self._alive(digests[position], now)
            if entry is not None:
                return position, entry
        return 0, None

    def _count(self, prompt_tokens: int, usage: CacheUsage) -> CacheUsage:
        self._requests += 1
        self._prompt_tokens += prompt_tokens
        self._cached_tokens += usage.cached
        self._written_tokens += usage.written
        return usage

    def stats(self) -> dict[str, int]:
        """Counters over ``serve`` calls (``requests``, ``prompt_tokens``, ``cached_tokens``, ``written_tokens``)
        and ``entries``, the prefixes alive at the latest ``now`` seen."""
        return {
            "requests": self._requests,
            "prompt_tokens": self._prompt_tokens,
            "cached_tokens": self._cached_tokens,
            "written_tokens": self._written_tokens,
            "entries": len(self._entries),
        }

    def _at_breakpoints(
        self,
        tokens: Sequence[int],
        marks: Sequence[int],
        ttls: Sequence[float],
        window: set[int],
        extra_key: Hashable,
        now: float,
    ) -> CacheUsage:
        """One request whose entries live at breakpoints: read the longest live entry among the prefix lengths of
        ``window``, then write (or refresh) an entry at every breakpoint at least the minimum long."""
        digests = _prefix_digests(tokens, window.union(marks), extra_key)
        found, hit = self._longest({position: digests[position] for position in window}, now)
        if hit is not None:
            hit.expires = now + hit.ttl
        cached = self.rule.round_hit(found, self.min_cacheable_tokens)
        written_to = 0
        for mark, seconds in zip(marks, ttls, strict=True):
            if mark < self.min_cacheable_tokens:
                continue
            digest = digests[mark]
            entry = self._alive(digest, now)
            if entry is None:
                self._entries[digest] = _Entry(mark, seconds, now + seconds)
                written_to = mark
            else:
                entry.ttl = max(entry.ttl, seconds)
                entry.expires = now + entry.ttl
        return CacheUsage(cached=cached, written=max(0, written_to - cached))

    def _entry_lengths(self, limit: int) -> set[int]:
        return {entry.length for entry in self._entries.values() if entry.length <= limit}

    @staticmethod
    def _check_breakpoints(marks: Sequence[int], blocks: Sequence[int] | None, length: int) -> None:
        if len(marks) > MAX_BREAKPOINTS:
            raise CacheModelError(
                f"{len(marks)} breakpoints given; the API allows at most {MAX_BREAKPOINTS} per request (the "
                "automatic or implicit one included): keep the ones that end stable prefixes (tools, system, "
                "recent turns), or let agentcache.breakpoints place them"
            )
        if any(not 0 < mark <= length for mark in marks) or any(a >= b for a, b in pairwise(marks)):
            raise CacheModelError(
                f"breakpoints {list(marks)} must be strictly ascending token positions in 1..{length} "
                "(the end of each marked block in the rendered prompt)"
            )
        if blocks is not None:
            if any(a >= b for a, b in pairwise(blocks)) or any(not 0 < end <= length for end in blocks):
                raise CacheModelError(f"blocks must be strictly ascending end positions in 1..{length}")
            stray = [mark for mark in marks if mark not in blocks]
            if stray:
                raise CacheModelError(
                    f"breakpoints {stray} are not block ends; a breakpoint sits on a content block, so each "
                    "breakpoint must be one of `blocks`"
                )


class OpenAIPromptCache(HostedPromptCache):
    """OpenAI's prompt caching, by the rule of ``model`` (:mod:`agentcache.cache.rules`).

    Before GPT-5.6 caching is automatic: prompts of 1024+ tokens, hits in 128-token steps. From GPT-5.6 entries
    live at breakpoints: the implicit one at the end of the latest message plus explicit
    ``prompt_cache_breakpoint`` blocks, up to 4 per request, matched exactly; writes are billed
    (``cache_write_tokens``). ``model=None`` models the rule every model before GPT-5.6 shares (priced as
    gpt-4o); an unlisted model gets the most conservative rule and an
    :class:`~agentcache.errors.UnknownModelWarning`.

    ``extra_key`` stands for ``prompt_cache_key`` (and the model): OpenAI routes on it, so requests with
    different keys are modelled as separate caches. ``retention`` is the API's TTL name (``"in_memory"``, ``"24h"``,
    ``"30m"``, whichever the model accepts; default its first); ``ttl`` overrides its seconds. ``in_memory``
    prefixes live 5 to 10 minutes after last use and the model takes the 5 minutes OpenAI promises.
    """

    def __init__(self, model: str | None = None, *, retention: str | None = None, ttl: float | None = None) -> None:
        rule = RULES["openai", "gpt-4o"] if model is None else rule_for("openai", model)
        super().__init__(rule, rule.min_tokens)
        self.model = model
        self.retention = rule.default_ttl if retention is None else retention
        if self.retention not in rule.ttls:
            raise CacheModelError(
                f"retention {self.retention!r} is not accepted for {model or 'models before GPT-5.6'}: use one of "
                f"{', '.join(map(repr, rule.ttls))}"
            )
        self.ttl = rule.ttls[self.retention] if ttl is None else ttl
        if self.ttl <= 0:
            raise CacheModelError(f"ttl must be positive seconds, got {self.ttl}")

    @property
    def uses_breakpoints(self) -> bool:
        """Whether entries live at breakpoints (GPT-5.6 and later) rather than at every 128-token step."""
        return self.rule.implicit == "latest_message"

    def match(self, tokens: Sequence[int], extra_key: Hashable = None, *, now: float | None = None) -> int:
        """The ``cached_tokens`` a request starting with ``tokens`` would get now."""
        moment = self._clock(now)
        if self.uses_breakpoints:
            found = self._longest(_prefix_digests(tokens, self._entry_lengths(len(tokens)), extra_key), moment)[0]
            return self.rule.round_hit(found, self.min_cacheable_tokens)
        return self._longest(self._digests(tokens, extra_key), moment)[0]

    def insert(self, tokens: Sequence[int], extra_key: Hashable = None, *, now: float | None = None) -> int:
        """Process ``tokens`` as a prompt with a breakpoint at its end; returns the prior hit."""
        return self.serve_usage(tokens, extra_key, now=now, count=False).cached

    def serve(
        self,
        prompt_tokens: Sequence[int],
        output_tokens: Sequence[int] = (),
        extra_key: Hashable = None,
        *,
        now: float | None = None,
        breakpoints: Sequence[int] | None = None,
        blocks: Sequence[int] | None = None,
    ) -> int:
        """One request: returns ``cached_tokens``. See :meth:`serve_usage`."""
        return self.serve_usage(prompt_tokens, extra_key, now=now, breakpoints=breakpoints).cached

    def serve_usage(
        self,
        prompt_tokens: Sequence[int],
        extra_key: Hashable = None,
        *,
        now: float | None = None,
        breakpoints: Sequence[int] | None = None,
        count: bool = True,
    ) -> CacheUsage:
        """One request: ``cached_tokens`` and ``cache_write_tokens`` as OpenAI reports them.

        ``breakpoints`` (GPT-5.6+): ascending positions where the request's breakpoints end, the implicit one
        included; ``None`` is implicit mode's one breakpoint at the end of the prompt, ``[]`` explicit mode without
        breakpoints (nothing cached). Earlier models ignore it. No lookback limit is documented, so block ends
        are not needed. Only the prompt is cached (the output counts once the next prompt carries it)."""
        moment = self._clock(now)
        if not self.uses_breakpoints:
            digests = self._digests(prompt_tokens, extra_key)
            cached = self._longest(digests, moment)[0]
            for position, digest in digests.items():
                self._entries[digest] = _Entry(position, self.ttl, moment + self.ttl)
            longest = max(digests, default=0)
            usage = CacheUsage(cached, max(0, longest - cached))
        else:
            marks = [len(prompt_tokens)] if breakpoints is None else list(breakpoints)
            self._check_breakpoints(marks, None, len(prompt_tokens))
            window = self._entry_lengths(marks[-1]) if marks else set()
            usage = self._at_breakpoints(prompt_tokens, marks, [self.ttl] * len(marks), window, extra_key, moment)
        return self._count(len(prompt_tokens), usage) if count else usage

    def _digests(self, tokens: Sequence[int], extra_key: Hashable) -> dict[int, bytes]:
        """Digests of the prefixes that can be reported: 1024, 1152, ... tokens, up to all of ``tokens``."""
        rule = self.rule
        return _prefix_digests(tokens, range(rule.min_tokens, len(tokens) + 1, rule.increment), extra_key)


class AnthropicPromptCache(HostedPromptCache):
    """Anthropic's prompt caching: entries written at explicit ``cache_control`` breakpoints.

    Tokens are the rendered prompt in the API's prefix order, tools -> system -> messages; a breakpoint is the
    token position where a marked content block ends. A request reads the longest live entry found by looking
    back from each breakpoint (last first) over up to :data:`LOOKBACK_BLOCKS` content-block ends, and writes an
    entry at every breakpoint whose prefix is long enough and not already live. Entries live ``"5m"`` or
    ``"1h"`` after their last write or read. ``extra_key`` separates caches (workspace, model).

    The minimum comes from ``model``'s rule (:mod:`agentcache.cache.rules`); an unlisted model gets the largest
    documented minimum and an :class:`~agentcache.errors.UnknownModelWarning`; ``min_cacheable_tokens``
    overrides it. :meth:`serve` returns the cache read, like every other model's ``serve``; :meth:`serve_usage`
    returns reads and writes, which Anthropic bills differently.
    """

    def __init__(self, model: str | None = None, *, min_cacheable_tokens: int | None = None) -> None:
        if model is None and min_cacheable_tokens is None:
            raise CacheModelError(
                "AnthropicPromptCache needs the model (its minimum cacheable length depends on it) or "
                "min_cacheable_tokens="
            )
        if min_cacheable_tokens is not None and min_cacheable_tokens < 1:
            raise CacheModelError(f"min_cacheable_tokens must be at least 1, got {min_cacheable_tokens}")
        if min_cacheable_tokens is None:
            rule = rule_for("anthropic", model or "")
        else:  # the caller knows the minimum: the rest of the rule (TTLs, prices) is the same for every Claude model
            rule = lookup("anthropic", model or "") or CONSERVATIVE["anthropic"]
        super().__init__(rule, rule.min_tokens if min_cacheable_tokens is None else min_cacheable_tokens)
        self.model = model

    def match(self, tokens: Sequence[int], extra_key: Hashable = None, *, now: float | None = None) -> int:
        """Length of the longest live entry that is a prefix of ``tokens`` (a breakpoint at the end, any
        lookback)."""
        moment = self._clock(now)
        return self._longest(_prefix_digests(tokens, self._entry_lengths(len(tokens)), extra_key), moment)[0]

    def insert(
        self, tokens: Sequence[int], extra_key: Hashable = None, *, ttl: Ttl = "5m", now: float | None = None
    ) -> int:
        """Write an entry for the whole of ``tokens`` (one breakpoint at the end); returns the prior read."""
        if not tokens:
            return 0
        marks = [len(tokens)]
        window = self._lookback(marks, None)
        return self._at_breakpoints(tokens, marks, self._ttls(ttl, 1), window, extra_key, self._clock(now)).cached

    def serve(
        self,
        prompt_tokens: Sequence[int],
        output_tokens: Sequence[int] = (),
        extra_key: Hashable = None,
        *,
        breakpoints: Sequence[int] | None = None,
        ttl: Ttl | Sequence[Ttl] = "5m",
        blocks: Sequence[int] | None = None,
        positions: Sequence[int] | None = None,
        now: float | None = None,
    ) -> int:
        """One request: returns ``cache_read_input_tokens``. See :meth:`serve_usage` for the arguments."""
        return self.serve_usage(
            prompt_tokens,
            output_tokens,
            extra_key,
            breakpoints=breakpoints,
            ttl=ttl,
            blocks=blocks,
            positions=positions,
            now=now,
        ).cached

    def serve_usage(
        self,
        prompt_tokens: Sequence[int],
        output_tokens: Sequence[int] = (),
        extra_key: Hashable = None,
        *,
        breakpoints: Sequence[int] | None = None,
        ttl: Ttl | Sequence[Ttl] = "5m",
        blocks: Sequence[int] | None = None,
        positions: Sequence[int] | None = None,
        now: float | None = None,
    ) -> CacheUsage:
        """One request: returns cache reads and writes as Anthropic reports them.

        ``breakpoints``: ascending token positions of the ``cache_control`` blocks' ends, at most 4; ``None``
        means automatic caching (top-level ``cache_control``), a breakpoint at the end of the prompt.
        ``ttl``: one value for all breakpoints or one per breakpoint; a ``"1h"`` breakpoint may not follow a
        ``"5m"`` one. ``blocks``: ascending end positions of every content block, which bounds the lookback to
        20 blocks; without it the lookback is unbounded, which overstates hits when a turn adds more than 20
        blocks. ``positions``: the lookback position of each of ``blocks`` (:func:`lookback_positions`), for blocks
        that stand for more than one position, or for a run of tool calls or results that takes one; by default
        each block is one position. The output is not cached (it counts once the next prompt carries it).
        """
        marks = [len(prompt_tokens)] if breakpoints is None else list(breakpoints)
        ttls = self._ttls(ttl, len(marks))
        self._check_breakpoints(marks, blocks, len(prompt_tokens))
        if positions is not None and (blocks is None or len(positions) != len(blocks)):
            raise CacheModelError("positions must give one lookback position for each of `blocks`")
        window = self._lookback(marks, blocks, positions)
        usage = self._at_breakpoints(prompt_tokens, marks, ttls, window, extra_key, self._clock(now))
        return self._count(len(prompt_tokens), usage)

    def _lookback(
        self, marks: Sequence[int], blocks: Sequence[int] | None, positions: Sequence[int] | None = None
    ) -> set[int]:
        """Prefix lengths a request checks for a hit: the ends of the blocks within 20 positions up to each
        breakpoint, or (block ends unknown) every entry length up to the last breakpoint."""
        if not marks:
            return set()  # no cache_control: nothing is read
        if blocks is None:
            return self._entry_lengths(marks[-1])
        at = range(len(blocks)) if positions is None else positions
        window: set[int] = set()
        for mark in marks:
            index = blocks.index(mark)
            first = at[index] - LOOKBACK_BLOCKS + 1
            window.update(end for end, position in zip(blocks[: index + 1], at, strict=False) if position >= first)
        return window

    @staticmethod
    def _ttls(ttl: Ttl | Sequence[Ttl], count: int) -> list[float]:
        names: list[str] = [ttl] * count if isinstance(ttl, str) else list(ttl)
        if len(names) != count:
            raise CacheModelError(f"got {len(names)} ttl values for {count} breakpoints; give one, or one each")
        for name in names:
            if name not in TTL_SECONDS:
                raise CacheModelError(f"ttl must be '5m' or '1h' (the API's values), got {name!r}")
        if "5m" in names and "1h" in names[names.index("5m") :]:
            raise CacheModelError(
                f"ttl {names}: a '1h' breakpoint after a '5m' one is rejected by the API; put longer TTLs first"
            )
        return [TTL_SECONDS[name] for name in names]


RUNS = frozenset({"tool_use", "tool_result"})
"""Block types of which Anthropic's lookback counts a run of consecutive blocks as one position."""


def lookback_positions(values: Sequence[Any]) -> list[int]:
    """The lookback position at which each value of a prompt ends (0-based, ascending): ``values`` are its tools,
    system blocks and messages in prefix order. Each content block is one position, except that a run of
    ``tool_use`` blocks is one, and so is a run of ``tool_result`` blocks, across messages too: OpenAI-dialect
    ``tool`` messages in a row are one user turn of results to Anthropic, and an OpenAI tool call is a
    ``tool_use`` block. A value that continues a run ends at the position before it."""
    out: list[int] = []
    position, previous = -1, ""
    for value in values:
        for kind in _block_kinds(value):
            if kind not in RUNS or kind != previous:
                position += 1
            previous = kind
        out.append(position)
    return out


def _block_kinds(value: Any) -> list[str]:
    """The types of a value's content blocks, in order (a tool definition or a plain string is one block)."""
    if not isinstance(value, dict) or "role" not in value:
        return ["block"]
    if value.get("role") == "tool":
        return ["tool_result"]
    content, calls = value.get("content"), value.get("tool_calls")
    kinds = (
        [str(block.get("type", "text")) if isinstance(block, dict) else "text" for block in content]
        if isinstance(content, list)
        else ["text"] * bool(content)
    )
    kinds += ["tool_use"] * (len(calls) if isinstance(calls, list) else 0)
    return kinds or ["text"]
