"""``agentcache simulate TRACE --cache KIND``: what-if hit ratios of a trace under each server's cache rules."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from agentcache.cache.options import CACHE_KINDS
from agentcache.cli.options import (
    add_cache_options,
    add_trace_options,
    anthropic_note,
    cache_options,
    load_trace,
    report_problems,
)
from agentcache.cli.style import Style, fit, terminal_width
from agentcache.drift.trace import Trace
from agentcache.predict.prompt import PromptTokenizer
from agentcache.predict.replay import Replay
from agentcache.tokens import get_tokenizer
from agentcache.totals import ratio, table

SCHEMA = "agentcache.simulate/2"


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "simulate", help="what-if cache hit ratios of a trace", description=__doc__
    )
    add_trace_options(parser)
    parser.add_argument("--cache", choices=(*CACHE_KINDS, "all"), default="all", help="server model(s)")
    parser.add_argument("--canonicalize", action="store_true", help="also replay the trace canonicalized")
    add_cache_options(parser)
    parser.set_defaults(run=run)


def simulate(trace: Trace, replay: Replay, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Replay every request the server evaluated, each on the model of the worker the trace names; totals
    overall and per session."""
    sessions: dict[str, list[int]] = {}
    for done, record in enumerate(trace.records, start=1):
        if record.evaluated:
            served = replay.serve(record.request, record.ts, record.session, worker=record.worker)
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
    kinds = CACHE_KINDS if args.cache == "all" else (args.cache,)
    modes = (False, True) if args.canonicalize else (False,)
    results = [
        {
            "cache": kind,
            "canonicalized": canonical,
            **simulate(trace, Replay(cache_options(args, kind), prompts, canonical=canonical)),
        }
        for kind in kinds
        for canonical in modes
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
        rows = [
            (
                r["cache"],
                "canonical" if r["canonicalized"] else "raw",
                r["requests"],
                r["predicted_prompt_tokens"],
                r["predicted_cached"],
                float(r["hit_ratio"]),
            )
            for r in results
        ]
        header = ("cache", "requests as", "requests", "prompt tokens", "cached tokens", "hit ratio")
        width = terminal_width()
        print(table(header, rows, Style(sys.stdout), {5: ratio_color}, width))
        print("\ncaches are simulated on the client from each server's documented rules")
        note = anthropic_note(kinds, trace)
        if note:
            print(fit(note, width, indent=4))
    return report_problems("simulate", args.trace, trace)
