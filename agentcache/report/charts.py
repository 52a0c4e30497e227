"""The report's charts as static SVG: per session the tokens of each turn and the prefill saved so far, for the
whole trace the drift causes ranked by waste and the what-if under each server's rules.

Each figure element carries its numbers as ``data-*`` attributes, so tests (and anyone scraping the report) read
the exact figures that were drawn; hovering shows them too, through SVG ``<title>`` tooltips.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Literal

from agentcache.drift.explain import TurnReport
from agentcache.drift.summary import Summary
from agentcache.predict import causes
from agentcache.report.svg import compact, coord, element, every, svg, text, text_width, ticks, title
from agentcache.totals import ratio

WIDTH = 1000
LEFT = 64
RIGHT = 16
MUTED = "#5f6b7a"
GRID = "#e3e7ee"
PROMPT = "#cdd5e0"
PROMPT_LINE = "#8e99a8"
PREDICTED = "#2f6fc0"
REPORTED = "#e69f00"
CANONICAL = "#1a9e77"
CAUSE_COLORS = {
    causes.VOLATILE_VALUE: "#d55e00",
    causes.TOOL_ORDER: "#cc79a7",
    causes.SCHEMA_KEY_ORDER: "#882255",
    causes.TOOL_ADDED: "#aa4499",
    causes.TOOL_REMOVED: "#6a3d9a",
    causes.TOOL_CHANGED: "#b15928",
    causes.WHITESPACE: "#8c8c1a",
    causes.SYSTEM_EDITED: "#c0392b",
    causes.HISTORY_REWRITTEN: "#7f3c8d",
    causes.PARAMS_CHANGED: "#a6761d",
    causes.MODEL_CHANGED: "#3d3d3d",
    causes.BELOW_MINIMUM: "#8d99a6",
    causes.EVICTED: "#661100",
    causes.WORKER_CHANGED: "#117733",
    causes.WORKER_LOST: "#332288",
}
OTHER_CAUSE = "#b03060"
Mark = Literal["bar", "line", "dashed"]
"""How a legend entry is drawn: as the chart draws it."""
KIND_LABELS = {
    "sglang": "SGLang (radix tree)",
    "vllm": "vLLM (hashed blocks)",
    "llama.cpp": "llama.cpp (slots)",
    "openai": "OpenAI API",
    "anthropic": "Anthropic API",
}


@dataclass(frozen=True)
class Figure:
    """A chart and its legend: ``(colour, text, mark)`` entries the page draws next to it."""

    svg: str
    legend: list[tuple[str, str, Mark]]


def is_drift(cause: str) -> bool:
    """A turn the charts mark: anything but a session's first request and a turn that extended the previous one."""
    return cause not in (causes.NONE, causes.NEW_SESSION)


def cause_color(cause: str) -> str:
    return CAUSE_COLORS.get(cause, OTHER_CAUSE)


def turns_text(count: int) -> str:
    return f"{count:,} turn{'s' if count != 1 else ''}"


def _turn_axis(count: int) -> tuple[float, Callable[[int], float]]:
    """Band width and centre of each turn: the two per-session charts share it, so their turns line up."""
    band = (WIDTH - LEFT - RIGHT) / count
    return band, lambda index: LEFT + band * (index + 0.5)


def _grid(values: Sequence[int], y: Callable[[float], float], label: Callable[[int], str]) -> list[str]:
    out = []
    for value in values:
        out.append(element("line", {"x1": LEFT, "x2": WIDTH - RIGHT, "y1": y(value), "y2": y(value), "stroke": GRID}))
        out.append(text(LEFT - 8, y(value) + 4, label(value), {"text-anchor": "end", "class": "tick"}))
    return out


def _turn_labels(count: int, center: Callable[[int], float], baseline: float) -> list[str]:
    step = every(count, 25)
    labels = [
        text(center(i), baseline + 16, i + 1, {"text-anchor": "middle", "class": "tick"})
        for i in range(count)
        if (i + 1) % step == 0 or step == 1
    ]
    axis = element("line", {"x1": LEFT, "x2": WIDTH - RIGHT, "y1": baseline, "y2": baseline, "stroke": MUTED})
    return [axis, *labels, text(LEFT - 8, baseline + 16, "turn", {"text-anchor": "end", "class": "tick"})]


def _tip(turn: TurnReport) -> str:
    prompt, cached = turn.predicted_prompt_tokens, turn.predicted_cached
    parts = [f"turn {turn.turn}: {prompt:,} prompt tokens, {cached:,} cached (predicted)"]
    if turn.reported_cached is not None:
        of = "" if turn.reported_prompt_tokens is None else f" of {turn.reported_prompt_tokens:,}"
        parts.append(f"{turn.reported_cached:,}{of} reported by the server")
    parts.append(f"{turn.canonical_cached:,} if canonicalized")
    tip = ", ".join(parts) + f"\n{turn.cause}: {turn.detail}"
    return tip + (f" ({turn.wasted_tokens:,} tokens prefilled again)" if turn.wasted_tokens else "")


def turns_chart(turns: Sequence[TurnReport], label: str) -> Figure:
    """Bars of prompt tokens with the predicted cached part filled in, the server's figure as a tick, and a
    marker (with its cause) over every turn where the prefix broke."""
    band, center = _turn_axis(len(turns))
    drifts = [t.cause for t in turns if is_drift(t.cause)]
    labelled = bool(drifts) and 2 * band >= max(text_width(c, 11) for c in drifts) + 8
    top = 58 if labelled else 24 if drifts else 14  # room for two rows of staggered labels, or the markers
    bottom = top + 206
    height = bottom + 36
    scale = ticks(max(max(t.predicted_prompt_tokens, t.reported_cached or 0) for t in turns))

    def y(value: float) -> float:
        return bottom - (bottom - top) * value / scale[-1]

    bar = max(1.0, band * 0.62)
    body = [*_grid(scale, y, compact), *_turn_labels(len(turns), center, bottom)]
    row = 1
    for index, turn in enumerate(turns):
        x = center(index) - bar / 2
        parts = [
            title(_tip(turn)),
            element(
                "rect",
                {
                    "class": "prompt",
                    "x": x,
                    "y": y(turn.predicted_prompt_tokens),
                    "width": bar,
                    "height": bottom - y(turn.predicted_prompt_tokens),
                    "fill": PROMPT,
                },
            ),
            element(
                "rect",
                {
                    "class": "predicted",
                    "x": x,
                    "y": y(turn.predicted_cached),
                    "width": bar,
                    "height": bottom - y(turn.predicted_cached),
                    "fill": PREDICTED,
                },
            ),
        ]
        if turn.reported_cached is not None:
            level = y(turn.reported_cached)
            parts.append(
                element(
                    "line",
                    {
                        "class": "reported",
                        "x1": x - 2,
                        "x2": x + bar + 2,
                        "y1": level,
                        "y2": level,
                        "stroke": REPORTED,
                        "stroke-width": 3,
                    },
                )
            )
        if is_drift(turn.cause):
            parts += _marker(turn.cause, center(index), top, y(turn.predicted_prompt_tokens))
            previous = turns[index - 1].cause if index else causes.NONE
            row = 1 - row if is_drift(previous) else 0
            if labelled:
                half = text_width(turn.cause, 11) / 2
                spot = min(max(center(index), half), WIDTH - half)  # the edge turns' labels stay inside
                parts.append(
                    text(
                        spot,
                        top - 16 - 14 * row,
                        turn.cause,
                        {"text-anchor": "middle", "class": "cause", "fill": cause_color(turn.cause)},
                    )
                )
        attrs = {
            "class": "turn",
            "data-turn": turn.turn,
            "data-prompt": turn.predicted_prompt_tokens,
            "data-predicted": turn.predicted_cached,
            "data-reported": turn.reported_cached,
            "data-canonical": turn.canonical_cached,
            "data-wasted": turn.wasted_tokens,
            "data-cause": turn.cause,
        }
        body.append(element("g", attrs, parts))
    legend: list[tuple[str, str, Mark]] = [(PROMPT, "prompt tokens", "bar"), (PREDICTED, "cached, predicted", "bar")]
    if any(t.reported_cached is not None for t in turns):
        legend.append((REPORTED, "cached, reported by the server (its own tokens)", "line"))
    legend += [(cause_color(c), f"{c} ({turns_text(drifts.count(c))})", "bar") for c in dict.fromkeys(drifts)]
    return Figure(svg(WIDTH, height, label, body, {"class": "chart", "data-chart": "turns"}), legend)


def _marker(cause: str, x: float, top: float, bar_top: float) -> list[str]:
    """A triangle above the plot, and a dashed drop line to the bar it marks."""
    color = cause_color(cause)
    return [
        element(
            "line",
            {
                "x1": x,
                "x2": x,
                "y1": top - 2,
                "y2": bar_top,
                "stroke": color,
                "stroke-dasharray": "2 3",
                "stroke-width": 1.2,
            },
        ),
        element(
            "path",
            {
                "class": "drift",
                "d": f"M{coord(x - 5)} {top - 11}L{coord(x + 5)} {top - 11}L{coord(x)} {top - 2}Z",
                "fill": color,
            },
        ),
    ]


def cumulative_chart(turns: Sequence[TurnReport], label: str) -> Figure:
    """Running totals: what the session prefilled without a cache, what the cache saved (predicted, and
    reported when every turn has usage), and what it would have saved canonicalized."""
    height, top, bottom = 230, 14, 196
    band, center = _turn_axis(len(turns))
    sent = list(accumulate(t.predicted_prompt_tokens for t in turns))
    canonical = list(accumulate(t.canonical_cached for t in turns))
    predicted = list(accumulate(t.predicted_cached for t in turns))
    totals: list[tuple[str, str, str, list[int], Mark]] = [
        ("prompt", "prompt tokens sent", PROMPT_LINE, sent, "dashed"),
        ("canonical", "prefill saved if canonicalized", CANONICAL, canonical, "dashed"),
        ("predicted", "prefill saved, predicted", PREDICTED, predicted, "line"),
    ]
    reported = [t.reported_cached for t in turns]
    if all(value is not None for value in reported):
        served = list(accumulate(value or 0 for value in reported))
        totals.append(("reported", "prefill saved, reported by the server", REPORTED, served, "line"))
    scale = ticks(max(values[-1] for _, _, _, values, _ in totals))

    def y(value: float) -> float:
        return bottom - (bottom - top) * value / scale[-1]

    body = [*_grid(scale, y, compact), *_turn_labels(len(turns), center, bottom)]
    for name, caption, color, values, mark in totals:
        points = " ".join(f"{coord(center(i))},{coord(y(v))}" for i, v in enumerate(values))
        line = element(
            "polyline",
            {
                "points": points,
                "fill": "none",
                "stroke": color,
                "stroke-width": 2.5,
                "stroke-dasharray": "7 5" if mark == "dashed" else None,
                "stroke-linejoin": "round",
            },
        )
        dots = []
        if band >= 8:
            dots = [
                element(
                    "circle",
                    {"cx": center(i), "cy": y(v), "r": 3, "fill": color},
                    title(f"turn {i + 1}: {caption}: {v:,} tokens so far"),
                )
                for i, v in enumerate(values)
            ]
        attrs = {"class": "series", "data-series": name, "data-values": ",".join(map(str, values))}
        body.append(element("g", attrs, [title(caption), line, *dots]))
    legend = [(color, f"{caption}: {values[-1]:,} tokens", mark) for _, caption, color, values, mark in totals]
    return Figure(svg(WIDTH, height, label, body, {"class": "chart", "data-chart": "cumulative"}), legend)


def causes_chart(summary: Summary, label: str) -> Figure:
    """One bar per cause of drift, longest waste first; causes that wasted nothing (a hosted minimum, an
    eviction) still show with their turn count."""
    rows = sorted(
        (
            (cause, summary.wasted_by_cause.get(cause, 0), count)
            for cause, count in summary.turns_by_cause.items()
            if is_drift(cause)
        ),
        key=lambda row: (-row[1], -row[2], row[0]),
    )
    left, room, pitch = 200, WIDTH - 200 - 280, 32
    peak = max(wasted for _, wasted, _ in rows)
    body = []
    for index, (cause, wasted, count) in enumerate(rows):
        y = 10 + pitch * index
        width = room * ratio(wasted, peak)
        share = f" ({ratio(wasted, summary.wasted_tokens):.0%})" if wasted else ""
        value = f"{wasted:,} tokens{share} · {turns_text(count)}"
        parts = [
            title(f"{cause}: {wasted:,} tokens prefilled again{share}, {turns_text(count)}"),
            text(left - 10, y + 15, cause, {"text-anchor": "end", "class": "label"}),
            element(
                "rect",
                {"x": left, "y": y + 2, "width": max(width, 2.0), "height": 18, "rx": 2, "fill": cause_color(cause)},
            ),
            text(left + max(width, 2.0) + 8, y + 15, value, {"class": "value"}),
        ]
        attrs = {"class": "cause", "data-cause": cause, "data-wasted": wasted, "data-turns": count}
        body.append(element("g", attrs, parts))
    height = 20 + pitch * len(rows)
    return Figure(svg(WIDTH, height, label, body, {"class": "chart", "data-chart": "causes"}), [])


@dataclass(frozen=True)
class WhatIf:
    """One cache kind's totals over the trace, as served and as canonicalized."""

    kind: str
    prompt_tokens: int
    cached: int
    canonical_cached: int


def what_if_chart(rows: Sequence[WhatIf], primary: str, reported: tuple[float, int] | None, label: str) -> Figure:
    """Hit ratio per server kind, raw and canonicalized; first, when the trace has usage, what the server
    reported (``reported`` is its hit ratio, in its own token counts, and its cached tokens)."""
    left, room = 200, WIDTH - 200 - 250
    top, pitch = 28, 50
    height = top + (36 if reported else 0) + pitch * len(rows)

    def x(share: float) -> float:
        return left + room * share

    body = []
    for share in (0.0, 0.25, 0.5, 0.75, 1.0):
        body.append(element("line", {"x1": x(share), "x2": x(share), "y1": top - 6, "y2": height, "stroke": GRID}))
        body.append(text(x(share), top - 10, f"{share:.0%}", {"text-anchor": "middle", "class": "tick"}))
    y = top
    if reported is not None:
        share, cached = reported
        parts = [
            title("as served: the cached tokens the server reported, over its own prompt-token count"),
            text(left - 10, y + 18, "as served (reported)", {"text-anchor": "end", "class": "label"}),
            _bar(x, y + 6, share, REPORTED),
            text(x(share) + 8, y + 18, f"{share:.1%} · {cached:,} tokens", {"class": "value"}),
        ]
        body.append(element("g", {"class": "whatif", "data-kind": "reported", "data-cached": cached}, parts))
        y += 36
    for row in rows:
        name = KIND_LABELS.get(row.kind, row.kind)
        weight = "700" if row.kind == primary else None
        parts = [text(left - 10, y + 24, name, {"text-anchor": "end", "class": "label", "font-weight": weight})]
        for offset, mode, cached, color in (
            (4, "raw", row.cached, PREDICTED),
            (24, "canonical", row.canonical_cached, CANONICAL),
        ):
            share = ratio(cached, row.prompt_tokens)
            tip = f"{name}, {'as sent' if mode == 'raw' else 'canonicalized'}: {cached:,} of {row.prompt_tokens:,}"
            attrs = {
                "class": "whatif",
                "data-kind": row.kind,
                "data-mode": mode,
                "data-cached": cached,
                "data-prompt": row.prompt_tokens,
            }
            bar = [
                title(tip + " prompt tokens cached"),
                _bar(x, y + offset, share, color),
                text(x(share) + 8, y + offset + 12, f"{share:.1%} · {cached:,} tokens", {"class": "value"}),
            ]
            parts.append(element("g", attrs, bar))
        body.append(element("g", {"class": "kind"}, parts))
        y += pitch
    legend: list[tuple[str, str, Mark]] = [(PREDICTED, "as sent", "bar"), (CANONICAL, "canonicalized", "bar")]
    if reported is not None:
        legend.insert(0, (REPORTED, "as served: reported by the server", "bar"))
    return Figure(svg(WIDTH, height, label, body, {"class": "chart", "data-chart": "what-if"}), legend)


def _bar(x: Callable[[float], float], y: float, share: float, color: str) -> str:
    return element(
        "rect", {"x": x(0), "y": y, "width": max(x(share) - x(0), 1.0), "height": 16, "rx": 2, "fill": color}
    )
