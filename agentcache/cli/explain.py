"""``agentcache explain TRACE``: per turn, the cached tokens predicted and reported, where the prefix broke, why."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from agentcache.cache.options import CACHE_KINDS
from agentcache.cli.options import (
    add_cache_options,
    add_trace_options,
    anthropic_note,
    cache_options,
    load_trace,
    long_trace_progress,
    report_problems,
)
from agentcache.cli.style import Style, fit, terminal_width
from agentcache.drift import TurnReport, explain
from agentcache.drift.summary import Summary, summarize
from agentcache.totals import count, table

SCHEMA = "agentcache.explain/2"


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "explain", help="explain each turn's cache hit or miss", description=__doc__
    )
    add_trace_options(parser)
    parser.add_argument("--cache", choices=CACHE_KINDS, default="sglang", help="server model (default sglang)")
    add_cache_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    trace = load_trace("explain", args.trace)
    options = cache_options(args, args.cache)
    reports = explain(trace, args.tokenizer, options, progress=long_trace_progress("explain", len(trace.records)))
    summary = summarize(reports)
    if args.format == "json":
        out = {
            "schema": SCHEMA,
            "trace": args.trace,
            "tokenizer": args.tokenizer,
            "cache": {
                "kind": options.kind,
                "capacity": options.capacity,
                "page_size": options.page_size,
                "block_size": options.block_size,
                "model": options.model,
            },
            "turns": [report.to_json() for report in reports],
            "summary": summary.to_json(),
            "problems": [{"line": p.line, "message": p.message} for p in trace.problems],
        }
        print(json.dumps(out, indent=2))
    else:
        rows = [
            (
                r.session,
                r.turn,
                r.predicted_prompt_tokens,
                r.predicted_cached,
                r.reported_cached,
                r.canonical_cached,
                r.wasted_tokens,
                r.cause,
                detail(r),
            )
            for r in reports
        ]
        header = ("session", "turn", "prompt", "cached", "reported", "canonical", "wasted", "cause", "detail")
        width = terminal_width()
        print(table(header, rows, Style(sys.stdout), {7: cause_color}, width))
        print()
        text = summary_text(summary, f"{options.kind} model, simulated on the client; tokenizer {args.tokenizer}")
        print("\n".join(fit(line, width, indent=4) for line in text.splitlines()))
        disagree = sum(r.provider_agrees is False for r in reports)
        if disagree:
            print(
                fit(
                    f"the provider's own diagnosis disagrees with agentcache's cause on {count(disagree, 'turn')}",
                    width,
                    indent=4,
                )
            )
        cost = cost_text(reports)
        if cost:
            print(fit(cost, width, indent=4))
        note = anthropic_note((options.kind,), trace)
        if note:
            print(fit(note, width, indent=4))
    return report_problems("explain", args.trace, trace)


def cause_color(cause: object) -> str | None:
    """Green for an unbroken turn, dim for a session's first, yellow below a hosted minimum, red for drift."""
    return {"none": "green", "new_session": "dim", "below_minimum": "yellow"}.get(str(cause), "red")


def detail(report: TurnReport) -> str:
    """Where the prefix broke (the JSON path of the first differing value and the index of its first token), then
    why."""
    where = report.divergence
    text = report.detail if where is None else f"at {where.path}, token {where.token_index:,}: {report.detail}"
    return text + provider_note(report)


def provider_note(report: TurnReport) -> str:
    """The provider's own verdict beside agentcache's, and whether they disagree."""
    if report.provider_verdict is None:
        return ""
    judged = {True: "agrees", False: "DISAGREES", None: "not compared"}[report.provider_agrees]
    return f" [provider: {report.provider_verdict}, {judged}]"


def cost_text(reports: list[TurnReport]) -> str | None:
    """The trace's prompt price under the hosted model's rule, beside what it would cost uncached."""
    costs = [r.predicted_cost for r in reports]
    if not costs or any(cost is None for cost in costs):
        return None
    total = sum(cost for cost in costs if cost is not None)
    uncached = sum(r.predicted_prompt_tokens for r in reports)
    written = sum(r.predicted_written for r in reports)
    return (
        f"cost: {total:,.0f} input-token equivalents ({total / uncached:.1%} of {uncached:,} uncached), "
        f"{written:,} tokens written"
        if uncached
        else None
    )


def saving(tokens: int) -> str:
    """What canonicalization changes in prefill: a saving, or a cost when it would cache less."""
    if tokens < 0:
        return f"canonicalization cost {-tokens:,} prefill tokens"
    return f"{tokens:,} prefill tokens saved"


def summary_text(summary: Summary, model: str) -> str:
    lines = [
        f"{count(summary.turns, 'turn')} in {count(summary.sessions, 'session')}, "
        f"{summary.predicted_prompt_tokens:,} prompt tokens ({model})",
        f"predicted cached: {summary.predicted_cached:,} ({summary.hit_ratio:.1%})",
    ]
    if summary.reported_cached is not None:
        share = "" if summary.reported_hit_ratio is None else f" ({summary.reported_hit_ratio:.1%} of its own count)"
        lines.append(f"server-reported cached: {summary.reported_cached:,}{share}")
    lines.append(f"wasted (prefilled again after drift): {summary.wasted_tokens:,} tokens")
    lines.append(
        f"canonicalized: {summary.canonical_cached:,} cached ({summary.canonical_hit_ratio:.1%}), "
        f"{saving(summary.saved_by_canonicalization)}"
    )
    if summary.wasted_by_cause:
        ranked = ", ".join(f"{cause} {tokens:,}" for cause, tokens in summary.wasted_by_cause.items())
        lines.append(f"wasted by cause: {ranked}")
    return "\n".join(lines)
