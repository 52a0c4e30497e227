"""``agentcache demo``: a 10-turn coding-agent session with real-world drift, raw vs canonicalized, through
client-side models of SGLang's radix cache and vLLM's block cache; with ``--server``, sent to a real engine,
its reported cached tokens next to the predicted ones."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from agentcache.cli.explain import cause_color, saving
from agentcache.cli.options import add_positive_int
from agentcache.cli.style import Style, fit, terminal_width
from agentcache.demo.live import run_live
from agentcache.demo.scenario import session
from agentcache.drift import CacheOptions, Trace, TraceRecord, TurnReport, explain
from agentcache.tokens import Tokenizer, get_tokenizer
from agentcache.totals import ratio, table
from agentcache.totals import totals as sum_turns
from agentcache.transport import Turn

SCHEMA = "agentcache.demo/2"
LIVE_SCHEMA = "agentcache.demo-live/2"
ENGINES = {"sglang": CacheOptions("sglang"), "vllm": CacheOptions("vllm", block_size=16)}
LABELS = {"sglang": "SGLang radix", "vllm": "vLLM blocks(16)"}


def register(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "demo", help="replay a drifting coding-agent session through modelled caches", description=__doc__
    )
    add_positive_int(parser, "--turns", "turns in the session (default 10; 6 live)")
    add_positive_int(
        parser, "--sessions", "sessions of the same deployment sharing one cache, interleaved (default 1)", default=1
    )
    parser.add_argument("--format", choices=("text", "json"), default="text", help="output format")
    live = parser.add_argument_group("against a real engine")
    live.add_argument("--server", metavar="URL", help="send the session to this SGLang, vLLM or llama-server")
    live.add_argument("--engine", choices=("sglang", "vllm", "llama.cpp"), help="the server's kind (default: asked)")
    live.add_argument("--model-dir", metavar="DIR", help="the model folder the server loads: exact predictions")
    add_positive_int(live, "--block-size", "vLLM's --block-size (default 16)", default=16)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    if args.server:
        return _live(args, started)
    turns = args.turns or 10
    tokenizer = get_tokenizer("o200k_base")
    drifting = _deployment(tokenizer, args.sessions, turns, drift=True)
    stable = _deployment(tokenizer, args.sessions, turns, drift=False)
    results: dict[str, tuple[list[TurnReport], list[TurnReport]]] = {
        name: (explain(drifting, tokenizer, options), explain(stable, tokenizer, options))
        for name, options in ENGINES.items()
    }
    if args.format == "json":
        print(json.dumps(_json(results, args.sessions), indent=2))
        return 0
    width = terminal_width()
    print(fit(INTRO if args.sessions == 1 else INTRO + SHARED.format(n=args.sessions), width) + "\n")
    columns = [f"{name}\n{kind}" for name in ENGINES for kind in ("ideal", "raw", "canon")]
    if args.sessions == 1:
        header, rows, colors = ["turn", "prompt", *columns, "why raw\nmissed"], _turn_rows(results), {8: cause_color}
    else:
        header, rows, colors = ["session", "prompt", *columns], _session_rows(results), {}
    print(table(header, rows, Style(sys.stdout), colors, width))
    unit = "turn" if args.sessions == 1 else "session, in one shared cache"
    print(f"\ncached tokens per {unit}; ideal = the same sessions without drift\n")
    for name, (drift_reports, ideal_reports) in results.items():
        totals = _totals(drift_reports, ideal_reports)
        line = (
            f"{LABELS[name]:>16}: hit ratio raw {totals['raw_hit_ratio']:.1%}, canonicalized "
            f"{totals['canonical_hit_ratio']:.1%}, ideal {totals['ideal_hit_ratio']:.1%}; {_saved(totals)}"
        )
        print(fit(line, width, indent=18))
    print(f"\ndone in {time.perf_counter() - started:.1f} s")
    return 0


def _deployment(tokenizer: Tokenizer, sessions: int, turns: int, drift: bool) -> Trace:
    """``sessions`` sessions of one deployment, turn by turn in turns (each session's turn 1, then each one's
    turn 2, ...), as one server sees them."""
    runs = [session(tokenizer, turns, drift=drift, index=index) for index in range(sessions)]
    order = [(index, turn) for turn in range(turns) for index in range(sessions)]
    records = [
        TraceRecord(line, f"session-{index + 1}", runs[index][turn]) for line, (index, turn) in enumerate(order, 1)
    ]
    return Trace(records, [])


def _turn_rows(results: dict[str, tuple[list[TurnReport], list[TurnReport]]]) -> list[list[Any]]:
    """One row per turn of the single session."""
    rows = []
    for index, report in enumerate(results["sglang"][0]):
        row: list[Any] = [report.turn, report.predicted_prompt_tokens]
        for drift_reports, ideal_reports in results.values():
            ideal, drifting = ideal_reports[index], drift_reports[index]
            row += [ideal.predicted_cached, drifting.predicted_cached, drifting.canonical_cached]
        rows.append([*row, report.cause])
    return rows


def _session_rows(results: dict[str, tuple[list[TurnReport], list[TurnReport]]]) -> list[list[Any]]:
    """One row per session: its turns' tokens summed."""
    names = list(dict.fromkeys(r.session for r in results["sglang"][0]))
    rows = []
    for name in names:
        row: list[Any] = [name, sum(r.predicted_prompt_tokens for r in results["sglang"][0] if r.session == name)]
        for drift_reports, ideal_reports in results.values():
            totals = _totals(*(_of(reports, name) for reports in (drift_reports, ideal_reports)))
            row += [totals["ideal_cached"], totals["raw_cached"], totals["canonical_cached"]]
        rows.append(row)
    return rows


def _of(reports: list[TurnReport], session_name: str) -> list[TurnReport]:
    return [r for r in reports if r.session == session_name]


INTRO = (
    "agentcache demo: a coding agent's session (2,000-token system prompt, 1,500 tokens of tools, 6,000 tokens\n"
    "of repository context, ~500 tokens of tool output per turn) with the drift real agents show: tools from\n"
    "a set, a timestamp in the system prompt, schema keys in varying order. Each request is replayed raw and\n"
    "canonicalized. The caches are SIMULATED ON THE CLIENT (agentcache's models of each server's rules);\n"
    "no server is contacted. Tokenizer: o200k_base."
)
SHARED = (
    "\n\n{n} sessions of this deployment (each its own task and clock) go through ONE shared cache, turn by turn in\n"
    "turns: the system prompt and tools can only be shared when every session sends them byte for byte alike."
)


def _saved(totals: dict[str, Any]) -> str:
    """What canonicalization did to prefill, against the reuse the session allows (none in one turn)."""
    saved = totals["prefill_saved"]
    text = f"canonicalization saves {saved:,} prefill tokens" if saved >= 0 else saving(saved)
    if not totals["ideal_cached"]:
        return f"{text} (no reuse is possible: nothing is sent twice)"
    return f"{text} ({totals['canonical_of_ideal']:.1%} of the ideal reuse)"


def _totals(drift_reports: list[TurnReport], ideal_reports: list[TurnReport]) -> dict[str, Any]:
    prompt = sum(r.predicted_prompt_tokens for r in drift_reports)
    raw = sum(r.predicted_cached for r in drift_reports)
    canonical = sum(r.canonical_cached for r in drift_reports)
    ideal = sum(r.predicted_cached for r in ideal_reports)
    return {
        "predicted_prompt_tokens": prompt,
        "raw_cached": raw,
        "canonical_cached": canonical,
        "ideal_cached": ideal,
        "raw_hit_ratio": ratio(raw, prompt),
        "canonical_hit_ratio": ratio(canonical, prompt),
        "ideal_hit_ratio": ratio(ideal, sum(r.predicted_prompt_tokens for r in ideal_reports)),
        "prefill_saved": canonical - raw,
        "canonical_of_ideal": ratio(canonical, ideal),
    }


def _json(results: dict[str, tuple[list[TurnReport], list[TurnReport]]], sessions: int) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "simulated": True,
        "sessions": sessions,
        "engines": {
            name: {
                "totals": _totals(drift, ideal),
                "turns": [r.to_json() for r in drift],
                "ideal_turns": [r.to_json() for r in ideal],
            }
            for name, (drift, ideal) in results.items()
        },
    }


def _live(args: argparse.Namespace, started: float) -> int:
    result = run_live(args.server, args.turns or 6, args.engine, args.model_dir, args.block_size)
    totals = {name: _live_totals(turns) for name, turns in (("raw", result.raw), ("canonical", result.canonical))}
    if args.format == "json":
        runs = {"raw": result.raw, "canonical": result.canonical}
        out = {"schema": LIVE_SCHEMA, "simulated": False, "engine": result.engine, "model": result.model}
        out |= {"exact": result.exact, "totals": totals}
        out["turns"] = {name: [t.to_json() for t in turns] for name, turns in runs.items()}
        print(json.dumps(out, indent=2))
        return 0
    how = "its own template and tokenizer" if result.exact else "agentcache's estimate (pass --model-dir for exact)"
    print(f"agentcache demo against {args.server} ({result.engine}, model {result.model}): the drifting session,")
    print("sent raw and then canonicalized. 'server' is what the engine REPORTED; 'predicted' is the client-side")
    print(f"model of its cache, with {how}.\n")
    rows = [
        [raw.turn, raw.reported_prompt_tokens, raw.reported_cached, raw.predicted_cached, canon.reported_cached,
         canon.predicted_cached, raw.cause]
        for raw, canon in zip(result.raw, result.canonical, strict=True)
    ]
    header = ["turn", "prompt", "raw\nserver", "raw\npredicted", "canon\nserver", "canon\npredicted", "why raw\nmissed"]
    print(table(header, rows, Style(sys.stdout), {6: cause_color}, terminal_width()))
    raw, canon = totals["raw"], totals["canonical"]
    print(
        f"\nhit ratio raw {raw['hit_ratio']:.1%}, canonicalized {canon['hit_ratio']:.1%}; "
        f"{saving(canon['reported_cached'] - raw['reported_cached'])}"
    )
    print(
        f"predicted == server-reported on {raw['exact_turns'] + canon['exact_turns']} of "
        f"{raw['turns'] + canon['turns']} turns"
    )
    print(f"\ndone in {time.perf_counter() - started:.1f} s")
    return 0


def _live_totals(turns: list[Turn]) -> dict[str, Any]:
    run = sum_turns(turns)
    return {
        "turns": run.turns,
        "reported_prompt_tokens": run.reported_prompt_tokens,
        "reported_cached": run.reported_cached,
        "predicted_cached": run.predicted_cached,
        "hit_ratio": ratio(run.reported_cached, run.reported_prompt_tokens),
        "exact_turns": sum(t.reported_cached is not None and t.reported_cached == t.predicted_cached for t in turns),
    }
