"""Drift analysis cost: ``agentcache.explain`` against the same analysis tokenizing every prompt whole.

Run: ``python bench/explain.py`` (``--sessions 40 --turns 25``: 1,000 requests averaging about 30k tokens).
Target (issue 3): explain >= 10x faster than the baseline. Exits 1 when it is missed.

The baseline is explain itself with its tokenization swapped for the naive one: every segment of every prompt
(raw and canonicalized) encoded each time, nothing remembered, nothing reused from the previous turn. Both runs
must produce identical reports. A second, lighter baseline only tokenizes every raw prompt whole as one text,
without any analysis.
"""

from __future__ import annotations

import argparse
import importlib
import random
import sys
import time
from array import array
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).parent))
import workload

from agentcache import explain, get_tokenizer
from agentcache.cache.prefix import common_prefix
from agentcache.drift import Trace, TraceRecord
from agentcache.predict.prompt import PromptTokenizer, Segment, render


class NaivePrompts(PromptTokenizer):
    """Tokenizes every segment of every prompt, every time."""

    def prompt(
        self, segments: list[Segment], previous: tuple[list[Segment], array[int], list[int]] | None = None
    ) -> tuple[array[int], list[int]]:
        tokens = array("I")
        starts = []
        for segment in segments:
            starts.append(len(tokens))
            tokens += self.segment(segment.text)
        return tokens, starts

    def segment(self, text: str) -> array[int]:
        return array("I", self.tokenizer.encode(text))


def build_trace(sessions: int, turns: int) -> Trace:
    """Sessions sharing a system prompt and 20 tools, each with its own repository context, growing by a tool
    call and ~400 tokens of output per turn, with a timestamp in the system prompt. Sessions interleave turn by
    turn, as on a server."""
    rng = random.Random(3)
    tools = workload.tools(20)
    rules = "Follow the repository's conventions; run the tests; explain each change. " * 600
    histories: list[list[dict[str, Any]]] = [
        [{"role": "user", "content": f"Repository {s}:\n" + "def handler(event):\n    return process(event)\n" * 550}]
        for s in range(sessions)
    ]
    records = []
    for turn in range(turns):
        for session, history in enumerate(histories):
            system = {"role": "system", "content": f"Now: 2026-11-30T{turn % 24:02d}:{session % 60:02d}:00Z\n{rules}"}
            request = {"model": "m", "tools": tools, "messages": [system, *history]}
            records.append(TraceRecord(len(records) + 1, f"s{session}", request))
            history += [
                {"role": "assistant", "content": f"Checking module {rng.randint(0, 999)}."},
                {"role": "tool", "content": f"line {turn}: ok\n" * 100},
            ]
    return Trace(records, [])


def baseline(trace: Trace) -> int:
    """Tokenize every prompt whole and find the first token that differs from the session's previous prompt;
    returns how many requests did not extend their previous prompt."""
    tokenizer = get_tokenizer("o200k_base")
    previous: dict[str, list[int]] = {}
    breaks = 0
    for record in trace.records:
        tokens = tokenizer.encode("".join(segment.text for segment in render(record.request)))
        before = previous.get(record.session)
        if before is not None and common_prefix(before, tokens) < len(before):
            breaks += 1
        previous[record.session] = tokens
    return breaks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--turns", type=int, default=25)
    args = parser.parse_args()
    trace = build_trace(args.sessions, args.turns)
    tokenizer = get_tokenizer("o200k_base")
    started = time.perf_counter()
    reports = explain(trace, tokenizer)
    ours = time.perf_counter() - started
    explain_module = importlib.import_module("agentcache.drift.explain")  # the module; the package exports the function
    with mock.patch.object(explain_module, "PromptTokenizer", NaivePrompts):
        started = time.perf_counter()
        naive_reports = explain(trace, tokenizer)
        naive = time.perf_counter() - started
    started = time.perf_counter()
    broken = baseline(trace)
    whole = time.perf_counter() - started
    prompt_tokens = sum(r.predicted_prompt_tokens for r in reports)
    print(
        f"trace: {len(trace.records):,} requests in {args.sessions} sessions, {prompt_tokens:,} prompt tokens "
        f"(mean {prompt_tokens // len(reports):,} per request)"
    )
    print(f"{'case':<58}{'seconds':>9}{'speed-up':>10}")
    print(f"{'baseline: explain tokenizing every prompt (raw + canonical)':<58}{naive:>9.2f}{naive / ours:>9.1f}x")
    print(f"{'lighter baseline: tokenize every raw prompt, no analysis':<58}{whole:>9.2f}{whole / ours:>9.1f}x")
    print(f"{'agentcache.explain':<58}{ours:>9.2f}{1:>9.1f}x")
    found = sum(r.divergence is not None for r in reports)
    print(f"requests that broke their session's prefix: explain {found:,}, lighter baseline {broken:,}")
    speedup = naive / ours
    checks = [
        ("mean prompt >= 25k tokens", prompt_tokens / len(reports) >= 25_000),
        ("identical reports with naive tokenization", naive_reports == reports),
        ("same breaks as whole-prompt tokenization", found == broken),
        ("explain >= 10x faster", speedup >= 10),
    ]
    for name, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    raise SystemExit(main())
