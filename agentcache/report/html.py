"""The report as one HTML file: inline CSS and SVG, no script, nothing fetched, so it opens the same offline,
attached to a ticket or years later.

A Content-Security-Policy in the page forbids scripts and every network load: even if a string from the trace
slipped past escaping, the browser would not run it. Everything from the trace is escaped anyway.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agentcache import __version__
from agentcache.breakpoints import Placements
from agentcache.drift.explain import TurnReport
from agentcache.drift.summary import Summary, summarize
from agentcache.report.analysis import Report
from agentcache.report.charts import (
    KIND_LABELS,
    Figure,
    Mark,
    WhatIf,
    cause_color,
    causes_chart,
    cumulative_chart,
    is_drift,
    turns_chart,
    turns_text,
    what_if_chart,
)
from agentcache.report.svg import element, escape

POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
#: Sessions this long or shorter show their table of turns open.
OPEN_TABLE = 30

CSS = """
:root { color-scheme: light; --ink: #1f2933; --muted: #5f6b7a; --line: #e3e7ee; --bg: #f5f6f8; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Liberation Sans", Arial, sans-serif; }
main { max-width: 1120px; margin: 0 auto; padding: 28px 24px 40px; }
h1 { font-size: 26px; margin: 0; }
h2 { font-size: 19px; margin: 0 0 4px; }
h3 { font-size: 15px; margin: 16px 0 4px; }
p { margin: 0 0 10px; }
.lede, .note { color: var(--muted); }
section, article { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 18px 22px;
  margin: 18px 0; }
.tiles { display: grid; grid-template-columns: repeat(auto-fit, minmax(190px, 1fr)); gap: 12px; margin: 16px 0 0; }
.tiles div { background: #fff; border: 1px solid var(--line); border-radius: 10px; padding: 12px 14px; }
.tiles dt { color: var(--muted); font-size: 13px; }
.tiles dd { margin: 2px 0 0; font-size: 22px; font-weight: 650; font-variant-numeric: tabular-nums; }
.tiles dd small { display: block; font-size: 13px; font-weight: 400; color: var(--muted); }
nav ul { list-style: none; margin: 12px 0 0; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 16px; }
nav a { color: #2f6fc0; }
svg.chart { display: block; width: 100%; height: auto; overflow: visible; }
svg.chart text { font-size: 12px; }
svg.chart .tick { fill: var(--muted); font-size: 11px; }
svg.chart .cause { font-size: 11px; font-weight: 600; }
svg.chart .value { fill: var(--muted); }
figure { margin: 12px 0 4px; }
.legend { list-style: none; margin: 6px 0 0; padding: 0; display: flex; flex-wrap: wrap; gap: 4px 18px;
  font-size: 13px; color: var(--muted); }
.legend svg, td svg { width: 18px; height: 10px; margin-right: 6px; vertical-align: baseline; }
table { border-collapse: collapse; width: 100%; font-size: 13px; margin-top: 8px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.detail { color: var(--muted); overflow-wrap: anywhere; }
td.cause { white-space: nowrap; }
td.disagree, .disagree { color: #b3261e; font-weight: 600; }
td ul { list-style: none; margin: 2px 0 0; padding: 0; }
code { font-family: ui-monospace, Menlo, Consolas, "Liberation Mono", "DejaVu Sans Mono", monospace;
  font-size: 0.92em; overflow-wrap: anywhere; }
summary { cursor: pointer; color: var(--muted); margin-top: 12px; }
footer { color: var(--muted); font-size: 13px; text-align: center; }
"""


def render_html(report: Report) -> str:
    """The whole page. The same report always gives the same text (no clock, no randomness)."""
    summary = summarize(report.turns)
    sessions = report.sessions()
    kind = KIND_LABELS.get(report.cache.kind, report.cache.kind)
    body = [_header(report, summary, kind, len(sessions))]
    if report.turns:
        body.append(_causes(summary, kind))
        body.append(_what_if(report, summary))
        body += [part for part in (_provider(report), _placements(report)) if part]
        columns = Columns(
            provider=any(t.provider_verdict is not None for t in report.turns),
            breakpoints=any(t.breakpoints is not None for t in report.turns),
        )
        body += [_session(index, name, turns, columns) for index, (name, turns) in enumerate(sessions.items(), start=1)]
    else:
        body.append(element("section", None, element("p", None, "The trace holds no readable request.")))
    if report.problems:
        items = [element("li", None, escape(f"line {p.line}: {p.message}")) for p in report.problems]
        count = len(report.problems)
        heading = element("h2", None, f"{count:,} line{'s' if count != 1 else ''} could not be read")
        body.append(element("section", {"id": "problems"}, [heading, element("ul", None, items)]))
    body.append(
        element("footer", None, escape(f"agentcache {__version__} · static HTML and SVG: no script, no network"))
    )
    head = [
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}">',
        '<link rel="icon" href="data:,">',
        element("title", None, escape(f"agentcache report: {report.name}")),
        element("style", None, CSS),
    ]
    page = element("html", {"lang": "en"}, [element("head", None, head), element("body", None, _main(body))])
    return f"<!DOCTYPE html>\n{page}\n"


def _main(parts: list[str]) -> str:
    return element("main", None, "\n".join(parts))


def _header(report: Report, summary: Summary, kind: str, sessions: int) -> str:
    options = report.cache
    model = kind
    if options.capacity is not None:
        model += f" with {options.capacity:,} tokens of KV"
    requests = f"{summary.turns:,} requests in {sessions:,} session{'s' if sessions != 1 else ''}"
    if report.live:
        lede = (
            f"{requests}, as a cache-aware transport sent them. Predictions come from its client-side {model} model, "
            f"tokenizer {report.tokenizer}; server-reported figures are the server's own usage of each response."
        )
    else:
        lede = (
            f"{requests}. Caches are simulated on the client from each server's documented rules; the per-session "
            f"charts use the {model} model, tokenizer {report.tokenizer}. Server-reported figures come from the "
            "trace's usage and count the server's own tokens."
        )
    tiles = [
        ("prompt tokens", f"{summary.predicted_prompt_tokens:,}", f"{summary.turns:,} requests"),
        ("cached, predicted", f"{summary.predicted_cached:,}", f"{summary.hit_ratio:.1%} of the prompt tokens"),
    ]
    if summary.reported_cached is not None:
        share = "" if summary.reported_hit_ratio is None else f"{summary.reported_hit_ratio:.1%} of the server's count"
        tiles.append(("cached, reported by the server", f"{summary.reported_cached:,}", share))
    broken = sum(1 for t in report.turns if t.divergence is not None)
    tiles += [
        ("prefilled again after drift", f"{summary.wasted_tokens:,}", f"{turns_text(broken)} broke the prefix"),
        (
            "cached if canonicalized",
            f"{summary.canonical_cached:,}",
            f"{summary.canonical_hit_ratio:.1%}, {summary.saved_by_canonicalization:+,} tokens",
        ),
    ]
    diagnosed = [t for t in report.turns if t.provider_verdict is not None]
    if diagnosed:
        judged = [t.provider_agrees for t in diagnosed if t.provider_agrees is not None]
        agreement = f"agrees on {judged.count(True):,}, disagrees on {judged.count(False):,}"
        tiles.append(("diagnosed by the provider", turns_text(len(diagnosed)), agreement))
    dl = element(
        "dl",
        {"class": "tiles"},
        [
            element("div", None, [element("dt", None, escape(t)), element("dd", None, [escape(v), _small(s)])])
            for t, v, s in tiles
        ],
    )
    parts = [
        element("h1", None, ["Prefix-cache report: ", element("code", None, escape(report.name))]),
        element("p", {"class": "lede"}, escape(lede)),
        dl,
    ]
    if sessions > 1:
        links = [
            element("li", None, element("a", {"href": f"#session-{i}"}, escape(name)))
            for i, name in enumerate(report.sessions(), start=1)
        ]
        parts.append(element("nav", None, element("ul", None, links)))
    return element("header", None, parts)


def _small(text: str) -> str:
    return element("small", None, escape(text)) if text else ""


def _figure(figure: Figure, caption: str | None = None) -> str:
    parts = [] if caption is None else [element("h3", None, escape(caption))]
    parts.append(figure.svg)
    if figure.legend:
        parts.append(element("ul", {"class": "legend"}, [_legend(*entry) for entry in figure.legend]))
    return element("figure", None, parts)


def _legend(color: str, text: str, mark: Mark) -> str:
    return element("li", None, [_swatch(color, mark), escape(text)])


def _swatch(color: str, mark: Mark = "bar") -> str:
    if mark == "bar":
        shape = element("rect", {"width": 18, "height": 10, "rx": 2, "fill": color})
    else:
        dash = "5 3" if mark == "dashed" else None
        attrs = {"x1": 0, "x2": 18, "y1": 5, "y2": 5, "stroke": color, "stroke-width": 3, "stroke-dasharray": dash}
        shape = element("line", attrs)
    return element("svg", {"viewBox": "0 0 18 10", "aria-hidden": "true"}, shape)


def _causes(summary: Summary, kind: str) -> str:
    heading = element("h2", None, "Why the prefix broke")
    if not any(is_drift(cause) for cause in summary.turns_by_cause):
        note = "Nothing broke the prefix: every request extended the previous request of its session."
        return element("section", {"id": "causes"}, [heading, element("p", {"class": "note"}, escape(note))])
    note = (
        f"Causes of drift, ranked by the tokens the previous request of the session had already sent and the next "
        f"one prefilled again, with their share of that waste and the turns they broke ({kind} model)."
    )
    figure = _figure(causes_chart(summary, "Causes of drift ranked by wasted tokens"))
    return element("section", {"id": "causes"}, [heading, element("p", {"class": "note"}, escape(note)), figure])


def _what_if(report: Report, summary: Summary) -> str:
    rows = [
        WhatIf(
            kind,
            sum(t.predicted_prompt_tokens for t in turns),
            sum(t.predicted_cached for t in turns),
            sum(t.canonical_cached for t in turns),
        )
        for kind, turns in report.what_if.items()
    ]
    reported = None
    if summary.reported_hit_ratio is not None and summary.reported_cached is not None:
        reported = (summary.reported_hit_ratio, summary.reported_cached)
    note = (
        "Share of the prompt tokens each server would serve from its cache, for the requests as they were sent and "
        "canonicalized (stable JSON, sorted tools, volatile values moved out of the system prompt). The hosted "
        "APIs cache nothing under their minimum prompt length; Anthropic's caches only up to cache_control "
        "breakpoints."
    )
    if report.live:
        note = (
            "Share of the prompt tokens the server served from its cache, predicted and reported. A ledger holds no "
            "request bodies, so the other servers' rules cannot be replayed on it: record a trace for the what-if."
        )
    figure = _figure(what_if_chart(rows, report.cache.kind, reported, "Cache hit ratio per server, raw and canonical"))
    heading = element("h2", None, "What if: each server's rules, as sent and canonicalized")
    return element("section", {"id": "what-if"}, [heading, element("p", {"class": "note"}, escape(note)), figure])


def _provider(report: Report) -> str:
    """The providers' own diagnoses, counted by verdict, and the turns where they disagree with agentcache's cause;
    empty when no turn carried one."""
    diagnosed = [t for t in report.turns if t.provider_verdict is not None]
    if not diagnosed:
        return ""
    judged = [t for t in diagnosed if t.provider_agrees is not None]
    disagree = [t for t in judged if t.provider_agrees is False]
    note = (
        f"{turns_text(len(diagnosed))} of {len(report.turns):,} carry the provider's own diagnosis of its cache "
        "(Anthropic's cache diagnosis, OpenAI's prompt_cache_diagnostics), set beside the cause agentcache found. "
        f"They agree on {len(judged) - len(disagree):,} and disagree on {len(disagree):,}; the rest judge nothing "
        "(a session's first turn, the previous response not found, the diagnosis unavailable or still running). "
        "A disagreement is worth reading: one of the two is wrong about that turn."
    )
    verdicts: dict[str, list[TurnReport]] = {}
    for turn in diagnosed:
        verdicts.setdefault(turn.provider_verdict or "", []).append(turn)
    rows = [
        (
            verdict,
            len(turns),
            sum(t.provider_agrees is True for t in turns),
            sum(t.provider_agrees is False for t in turns),
            sum(t.provider_missed_tokens or 0 for t in turns),
        )
        for verdict, turns in sorted(verdicts.items(), key=lambda item: (-len(item[1]), item[0]))
    ]
    parts = [
        element("h2", None, "The provider's own diagnosis"),
        element("p", {"class": "note"}, escape(note)),
        _grid(("provider's verdict", "turns", "agrees", "disagrees", "missed, by the provider"), rows),
    ]
    if disagree:
        sessions = {name: index for index, name in enumerate(report.sessions(), start=1)}
        listed = [
            (
                element("a", {"href": f"#session-{sessions[t.session]}"}, escape(t.session)),
                t.turn,
                escape(t.cause),
                escape(t.detail),
                escape(t.provider_verdict or ""),
            )
            for t in disagree
        ]
        parts.append(element("h3", None, "Where the two disagree"))
        parts.append(_grid(("session", "turn", "agentcache's cause", "detail", "provider's verdict"), listed, raw=True))
    return element("section", {"id": "provider"}, parts)


def _placements(report: Report) -> str:
    """What breakpoint placement did over the whole ledger: the breakpoints it placed and why, the places it left
    and why, the requests it placed none on; empty when placement was not asked for."""
    accounts = [t.breakpoints for t in report.turns if t.breakpoints is not None]
    if not accounts:
        return ""
    refused = Counter(a.refused for a in accounts if a.refused)
    placed = Counter(p.reason for a in accounts for p in a.placed)
    skipped = Counter(why for a in accounts for _, why in a.skipped)
    marked = sum(1 for a in accounts if a.placed)
    note = (
        f"agentcache placed {sum(placed.values()):,} cache breakpoints on {turns_text(marked)} of "
        f"{len(accounts):,}, never more than the API allows on a request, counting the caller's own "
        f"({sum(a.existing for a in accounts):,} over all turns, the automatic or implicit one included) and never "
        f"one on a prefix under the model's minimum. {turns_text(sum(refused.values()))} went out without placement."
    )
    parts = [element("h2", None, "Cache breakpoints placed"), element("p", {"class": "note"}, escape(note))]
    tallies: tuple[tuple[str, Counter[str]], ...] = (
        ("Placed, by reason", placed),
        ("Places left, by reason", skipped),
        ("Requests without placement, by reason", refused),
    )
    for heading, counts in tallies:
        if counts:
            parts.append(element("h3", None, heading))
            parts.append(_grid(("reason", "times"), counts.most_common()))
    return element("section", {"id": "breakpoints"}, parts)


def _grid(header: Sequence[str], rows: Iterable[Sequence[str | int]], raw: bool = False) -> str:
    """A plain table; numbers right-aligned and grouped, text escaped unless ``raw`` (already markup)."""

    def cell(value: str | int) -> str:
        if isinstance(value, int):
            return element("td", {"class": "n"}, f"{value:,}")
        return element("td", None, value if raw else escape(value))

    head = element("tr", None, [element("th", None, escape(h)) for h in header])
    body = [element("tr", None, [cell(value) for value in row]) for row in rows]
    return element("table", None, [element("thead", None, head), element("tbody", None, body)])


@dataclass(frozen=True)
class Columns:
    """The columns a session table adds when the report has something to show in them."""

    provider: bool = False
    breakpoints: bool = False


def _session(index: int, name: str, turns: Sequence[TurnReport], columns: Columns) -> str:
    summary = summarize(turns)
    broken = sum(1 for t in turns if t.divergence is not None)
    facts = [
        f"{summary.turns:,} turns",
        f"{summary.predicted_prompt_tokens:,} prompt tokens",
        f"{summary.predicted_cached:,} cached, predicted ({summary.hit_ratio:.1%})",
    ]
    if summary.reported_cached is not None:
        facts.append(f"{summary.reported_cached:,} reported by the server")
    facts += [
        f"{turns_text(broken)} broke the prefix, {summary.wasted_tokens:,} tokens prefilled again",
        f"{summary.canonical_cached:,} cached if canonicalized ({summary.canonical_hit_ratio:.1%})",
    ]
    parts = [
        element("h2", None, ["Session ", element("code", None, escape(name))]),
        element("p", {"class": "note"}, escape(" · ".join(facts))),
        _figure(turns_chart(turns, f"Session {name}: prompt and cached tokens per turn"), "Tokens per turn"),
        _figure(cumulative_chart(turns, f"Session {name}: prefill saved so far"), "Prefill saved so far"),
        _table(turns, columns),
    ]
    return element("article", {"class": "session", "id": f"session-{index}", "data-session": name}, parts)


def _table(turns: Sequence[TurnReport], columns: Columns) -> str:
    header = ["turn", "prompt", "cached", "reported", "canonical", "wasted", "cause", "detail"]
    header += ["provider's verdict"] * columns.provider + ["breakpoints"] * columns.breakpoints
    head = element("tr", None, [element("th", {"class": "n" if i < 6 else None}, h) for i, h in enumerate(header)])
    rows = [element("tr", {"data-turn": t.turn}, _cells(t, columns)) for t in turns]
    table = element("table", None, [element("thead", None, head), element("tbody", None, rows)])
    summary = element("summary", None, f"All {len(turns):,} turns")
    return element("details", {"open": "" if len(turns) <= OPEN_TABLE else None}, [summary, table])


def _cells(turn: TurnReport, columns: Columns) -> Iterable[str]:
    numbers = (
        turn.turn,
        turn.predicted_prompt_tokens,
        turn.predicted_cached,
        turn.reported_cached,
        turn.canonical_cached,
        turn.wasted_tokens,
    )
    for value in numbers:
        yield element("td", {"class": "n"}, "-" if value is None else f"{value:,}")
    swatch = _swatch(cause_color(turn.cause)) if is_drift(turn.cause) else ""
    yield element("td", {"class": "cause"}, [swatch, escape(turn.cause)])
    yield element("td", {"class": "detail"}, escape(turn.detail))
    if columns.provider:
        yield _verdict(turn)
    if columns.breakpoints:
        yield _breakpoints(turn.breakpoints)


def _verdict(turn: TurnReport) -> str:
    """The provider's verdict on a turn, the tokens it says missed, and whether it agrees with agentcache."""
    if turn.provider_verdict is None:
        return element("td", None, "-")
    text = turn.provider_verdict
    if turn.provider_missed_tokens is not None:
        text += f" · {turn.provider_missed_tokens:,} missed"
    if turn.provider_agrees is not None:
        text += " · agrees" if turn.provider_agrees else " · disagrees"
    return element("td", {"class": "disagree" if turn.provider_agrees is False else None}, escape(text))


def _breakpoints(account: Placements | None) -> str:
    """A turn's placement account: how many breakpoints, then each placed and each place left, with why."""
    if account is None:
        return element("td", None, "-")
    if account.refused is not None:
        return element("td", {"class": "detail"}, escape(f"none: {account.refused}"))
    count = f"{len(account.placed):,} placed" + (f", {account.existing:,} already there" if account.existing else "")
    lines = [f"{p.path} at {p.tokens:,} tokens: {p.reason}" for p in account.placed]
    lines += [f"not {path}: {why}" for path, why in account.skipped]
    items = element("ul", None, [element("li", None, escape(line)) for line in lines]) if lines else ""
    return element("td", {"class": "detail"}, [escape(count), items])
