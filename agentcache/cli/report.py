"""``agentcache report TRACE --html OUT.html``: the trace's cache story as one self-contained HTML page of charts."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from agentcache.cache.options import CACHE_KINDS
from agentcache.cli.options import LONG_TRACE, TRACE_HELP, add_cache_options, cache_options, load_trace, report_problems
from agentcache.cli.style import Progress
from agentcache.errors import InputError
from agentcache.report import build_report, render_html
from agentcache.totals import count


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "report", help="write an HTML report of a trace, with charts", description=__doc__
    )
    parser.add_argument("trace", help=TRACE_HELP)
    parser.add_argument("--html", required=True, metavar="OUT", help="the HTML file to write")
    parser.add_argument("--cache", choices=CACHE_KINDS, default="sglang", help="server model of the per-turn charts")
    parser.add_argument("--tokenizer", default="o200k_base", help="o200k_base, cl100k_base or a tokenizer.json")
    add_cache_options(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    trace = load_trace("report", args.trace)
    options = cache_options(args, args.cache)
    total = len(trace.records) * len(CACHE_KINDS)  # one pass per cache kind, for the what-if
    progress = Progress("report", total) if len(trace.records) >= LONG_TRACE else None
    name = "stdin" if args.trace == "-" else Path(args.trace).name
    report = build_report(trace, args.tokenizer, options, name=name, progress=progress)
    page = render_html(report)
    try:
        with open(args.html, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(page)
    except OSError as exc:
        raise InputError(f"cannot write {args.html}: {exc.strerror}; pick a writable path for --html") from None
    print(f"wrote {args.html}: {count(len(report.turns), 'request')} in {count(len(report.sessions()), 'session')}")
    return report_problems("report", args.trace, trace)
