"""``agentcache simulate TRACE --cache KIND [--workers N --route R]``: what-if hit ratios of a trace under each
server's cache rules, on one server or on a cluster of N workers under each routing policy."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from agentcache.cache.options import CACHE_KINDS
from agentcache.cli.options import (
    add_cache_options,
    add_positive_int,
    add_trace_options,
    anthropic_note,
    cache_options,
    load_trace,
    report_problems,
)
from agentcache.cli.style import Style, fit, terminal_width
from agentcache.drift.trace import Trace
from agentcache.errors import InputError
from agentcache.predict.prompt import PromptTokenizer
from agentcache.predict.replay import Replay
from agentcache.predict.routing import CACHE_THRESHOLD, POLICIES, ROUTED_KINDS, ROUTES, Router, router
from agentcache.tokens import get_tokenizer
from agentcache.totals import ratio, table

SCHEMA = "agentcache.simulate/3"


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "simulate", help="what-if cache hit ratios of a trace", description=__doc__
    )
    add_trace_options(parser)
    parser.add_argument("--cache", choices=(*CACHE_KINDS, "all"), default="all", help="server model(s)")
    parser.add_argument("--canonicalize", action="store_true", help="also replay the trace canonicalized")
    add_positive_int(parser, "--workers", "replay on a cluster of N workers, one cache each", metavar="N")
    parser.add_argument(
        "--route",
        choices=(*ROUTES, "all"),
        default="all",
        help="how the cluster's gateway routes requests, with --workers (default: all but recorded)",
    )
    add_cache_options(parser)
    parser.set_defaults(run=run)


def simulate(
    trace: Trace, replay: Replay, progress: Callable[[int], None] | None = None, route: Router | None = None
) -> dict[str, Any]:
    """Replay every request the server evaluated, each on the worker ``route`` picks (without one, the worker the
    trace names, else the single server); totals overall and per session."""
    sessions: dict[str, list[int]] = {}
    for done, record in enumerate(trace.records, start=1):
        if record.evaluated:
            worker = record.worker if route is None else route.route(record, replay)
            served = replay.serve(record.request, record.ts, record.session, worker=worker)
            totals = sessions.setdefault(record.session, [0, 0, 0])
            totals[0] += 1
            totals[1] += served.prompt_tokens
            totals[2] += served.cached
        if progress is not None:
            progress(done)
    prompt = sum(t[1] for t in sessions.values())
    cached = sum(t[2] for t in sessions.values())
    return {
        "requests": sum(t[0] for t in sessions.values()),
        "predicted_prompt_tokens": prompt,
        "predicted_cached": cached,
        "hit_ratio": round(ratio(cached, prompt), 4),
        "sessions": {
            name: {
                "requests": t[0],
                "predicted_prompt_tokens": t[1],
                "predicted_cached": t[2],
                "hit_ratio": round(ratio(t[2], t[1]), 4),
            }
            for name, t in sessions.items()
        },
    }


def ratio_color(value: object) -> str | None:
    if not isinstance(value, float):
        return None
    return "green" if value >= 0.8 else "yellow" if value >= 0.4 else "red"


def run(args: argparse.Namespace) -> int:
    trace = load_trace("simulate", args.trace)
    prompts = PromptTokenizer(get_tokenizer(args.tokenizer))
    modes = (False, True) if args.canonicalize else (False,)
    if args.workers is None:
        kinds = CACHE_KINDS if args.cache == "all" else (args.cache,)
        routes: tuple[str | None, ...] = (None,)
    else:
        kinds = ROUTED_KINDS if args.cache == "all" else (args.cache,)
        if not set(kinds) <= set(ROUTED_KINDS):
            raise InputError(f"--workers models a gateway's workers ({', '.join(ROUTED_KINDS)}), not {args.cache}")
        routes = POLICIES if args.route == "all" else (args.route,)
    results = [
        {
            "cache": kind,
            "canonicalized": canonical,
            **({} if route is None else {"route": route, "workers": args.workers}),
            **simulate(
                trace,
                Replay(cache_options(args, kind), prompts, canonical=canonical),
                route=None if route is None else router(route, args.workers, CACHE_THRESHOLD),
            ),
        }
        for kind in kinds
        for canonical in modes
        for route in routes
    ]
    if args.format == "json":
        print(
            json.dumps(
                {
                    "schema": SCHEMA,
                    "trace": args.trace,
                    "tokenizer": args.tokenizer,
                    "results": results,
                    "problems": [{"line": p.line, "message": p.message} for p in trace.problems],
                },
                indent=2,
            )
        )
    else:
        routed = args.workers is not None
        rows = [
            (
                r["cache"],
                *((r["route"] if r["route"] == "recorded" else f"{r['route']} x{r['workers']}",) if routed else ()),
                "canonical" if r["canonicalized"] else "raw",
                r["requests"],
                r["predicted_prompt_tokens"],
                r["predicted_cached"],
                float(r["hit_ratio"]),
            )
            for r in results
        ]
        header = ("cache", *(("routing",) if routed else ()), "requests as", "requests", "prompt tokens")
        header += ("cached tokens", "hit ratio")
        width = terminal_width()
        print(table(header, rows, Style(sys.stdout), {len(header) - 1: ratio_color}, width))
        print("\ncaches are simulated on the client from each server's documented rules")
        note = anthropic_note(kinds, trace)
        if note:
            print(fit(note, width, indent=4))
    return report_problems("simulate", args.trace, trace)
