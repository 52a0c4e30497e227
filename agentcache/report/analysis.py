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
from agentcache.tokens import Tokenizer, get_tokenizer


@dataclass(frozen=True)
class Report:
    """A trace explained under every cache kind; the per-turn charts show ``cache``'s explanation."""

    name: str
    """What the report is of, shown in its title (the trace's file name)."""
    tokenizer: str
    cache: CacheOptions
    what_if: dict[str, list[TurnReport]]
    """Each cache kind's explanation of the whole trace, in ``CACHE_KINDS`` order."""
    problems: list[TraceProblem]

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


def _short(name: str) -> str:
    """A vocabulary name as it is; a ``tokenizer.json`` path as its folder and file (no machine paths in reports)."""
    path = Path(name)
    return name if len(path.parts) < 2 else f"{path.parent.name}/{path.name}"
