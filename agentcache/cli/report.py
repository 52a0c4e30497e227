"""``agentcache report TRACE --html OUT.html``: the trace's cache story as one self-contained HTML page of charts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from agentcache.cache.options import CACHE_KINDS
from agentcache.cli.options import LONG_TRACE, add_cache_options, cache_options, report_problems
from agentcache.cli.style import Progress
from agentcache.drift import read_trace
from agentcache.errors import InputError
from agentcache.report import build_report, render_html


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "report", help="write an HTML report of a trace, with charts", description=__doc__
    )
    parser.add_argument("trace", help="a JSONL trace (docs/trace-format.md) or a file of request bodies")
    parser.add_argument("--html", required=True, metavar="OUT", help="the HTML file to write")
    parser.add_argument("--cache", choices=CACHE_KINDS, default="sglang", help="server model of the per-turn charts")
    parser.add_argument("--tokenizer", default="o200k_base", help="o200k_base, cl100k_base or a tokenizer.json")
    add_cache_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    trace = read_trace(args.trace)
    options = cache_options(args, args.cache)
    total = len(trace.records) * len(CACHE_KINDS)  # one pass per cache kind, for the what-if
    progress = Progress("report", total) if len(trace.records) >= LONG_TRACE else None
    report = build_report(trace, args.tokenizer, options, name=Path(args.trace).name, progress=progress)
    page = render_html(report)
    try:
        with open(args.html, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(page)
    except OSError as exc:
        raise InputError(f"cannot write {args.html}: {exc.strerror}; pick a writable path for --html") from None
    sessions = len(report.sessions())
    print(f"wrote {args.html}: {len(report.turns):,} requests in {sessions:,} session{'s' if sessions != 1 else ''}")
    return report_problems("report", args.trace, trace)
