"""Totals over turns, the hit ratio, and plain text tables: written once, for the CLI, the ledger and the reports.

Every per-turn record (the ledger's :class:`~agentcache.transport.Turn`, a CrewAI call's report) is summed here,
so "cached tokens of a session" means the same everywhere: the server's counts over the turns whose server
reported both its prompt and its cached tokens, beside the model's predictions over every turn.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["Cell", "Colorer", "Counted", "Totals", "cell", "count", "hit_ratio", "ratio", "table", "totals"]


def hit_ratio(cached: int | None, prompt: int | None) -> float | None:
    """Cached over prompt tokens; None when either is unknown or there was no prompt (no ratio is not 0%)."""
    if cached is None or not prompt:
        return None
    return cached / prompt


def count(number: int, noun: str) -> str:
    """``1 turn``, ``2 turns``: a count with its noun, thousands separated, plural unless it is exactly one."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def ratio(part: float, whole: float) -> float:
    """A share of a whole, 0.0 of an empty one: for bar widths and what-if tables whose schema holds a number."""
    return part / whole if whole else 0.0


class Counted(Protocol):
    """What a per-turn record gives the totals."""

    @property
    def reported_prompt_tokens(self) -> int | None: ...
    @property
    def reported_cached(self) -> int | None: ...
    @property
    def predicted_cached(self) -> int | None: ...
    @property
    def wasted_tokens(self) -> int: ...
    @property
    def passthrough(self) -> str | None: ...
    @property
    def cause(self) -> str | None: ...


@dataclass(frozen=True)
class Totals:
    turns: int
    reported_prompt_tokens: int
    """Server-reported, over the turns that reported both prompt and cached tokens."""
    reported_cached: int
    """Server-reported, over the same turns."""
    predicted_cached: int
    wasted_tokens: int
    passed_through: int
    causes: dict[str, int] = field(default_factory=dict)
    """How many turns had each drift cause (``none`` and ``new_session`` included)."""

    @property
    def hit_ratio(self) -> float | None:
        return hit_ratio(self.reported_cached, self.reported_prompt_tokens)


def totals(turns: Iterable[Counted]) -> Totals:
    chosen = list(turns)
    reported = [t for t in chosen if t.reported_cached is not None and t.reported_prompt_tokens is not None]
    return Totals(
        turns=len(chosen),
        reported_prompt_tokens=sum(t.reported_prompt_tokens or 0 for t in reported),
        reported_cached=sum(t.reported_cached or 0 for t in reported),
        predicted_cached=sum(t.predicted_cached or 0 for t in chosen),
        wasted_tokens=sum(t.wasted_tokens for t in chosen),
        passed_through=sum(t.passthrough is not None for t in chosen),
        causes=dict(Counter(t.cause for t in chosen if t.cause is not None)),
    )


Cell = str | int | float | None
#: Picks a colour for a cell from its value (None: no colour).
Colorer = Callable[[Cell], str | None]


def cell(value: Cell) -> str:
    """A number as a person reads it: ``-`` for unknown, thousands separated, ratios as percentages."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1%}"
    if isinstance(value, int):
        return f"{value:,}"
    return value


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    paint: Callable[[str, str | None], str] | None = None,
    colors: Mapping[int, Colorer] | None = None,
    width: int | None = None,
) -> str:
    """Rows under a header; a column is right-aligned when its cells are numbers. A header cell may hold a newline,
    to stack its words. With ``paint`` (a terminal style), the header is bold and ``colors`` paints cells by column
    index; colour goes around the padded text, so columns stay aligned.

    With ``width``, the last column (the free text) is wrapped to fit: in its own column when at least
    :data:`MIN_WRAP` characters are left for it, else on indented lines under its row."""
    colour = paint or (lambda text, color: text)
    colors = colors or {}
    text = [[cell(value) for value in row] for row in rows]
    heads = [h.split("\n") for h in header]
    depth = max(len(h) for h in heads)
    heads = [[""] * (depth - len(h)) + h for h in heads]  # stacked words sit on the bottom line
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(header))]
    widths = [max([len(w) for w in heads[i]] + [len(row[i]) for row in text]) for i in range(len(header))]
    last = len(header) - 1
    room = None if width is None else width - sum(widths[:last]) - 2 * last
    below = room is not None and room < MIN_WRAP and widths[last] > max(room, 0)
    if room is not None and not below and widths[last] > room:
        widths[last] = room

    def line(cells: Sequence[str], values: Sequence[Cell] | None, plain: bool = False) -> str:
        parts = []
        for i, (c, w, num) in enumerate(zip(cells, widths, numeric, strict=True)):
            padded = c.rjust(w) if num else c.ljust(w)
            color = None if plain else "bold" if values is None else (colors[i](values[i]) if i in colors else None)
            parts.append(colour(padded, color) if i < len(cells) - 1 else colour(padded.rstrip(), color))
        return "  ".join(parts).rstrip()

    out = [line([h[k] for h in heads[:last]] + ["" if below else heads[last][k]], None) for k in range(depth)]
    for row, values in zip(text, rows, strict=True):
        if width is None or (len(row[last]) <= widths[last] and not below):
            out.append(line(row, values))
        elif below:
            out.append(line([*row[:last], ""], values))
            out += textwrap.wrap(row[last], max(width - 4, MIN_WRAP), initial_indent="    ", subsequent_indent="    ")
        else:
            pieces = textwrap.wrap(row[last], widths[last]) or [""]
            out.append(line([*row[:last], pieces[0]], values))
            out += [line([""] * last + [piece], None, plain=True) for piece in pieces[1:]]
    return "\n".join(out)


#: The narrowest the free-text column of a table is wrapped to; with less room it goes under its row.
MIN_WRAP = 24
