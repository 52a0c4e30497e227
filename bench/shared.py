"""Shared-cache reuse across the sessions of one deployment, canonicalized, against the ideal.

Run: ``python bench/shared.py [--sessions 48] [--turns 8]``. Target (issue 18): canonicalized reuse >= 99% of the
ideal in one shared cache. Exits 1 when missed.

Many sessions of one application share a system prompt and tools, but each puts its own volatile lines in the
system prompt: its clock (new every turn) and its session id. Agents assemble prompts in different code paths, so
those lines stand at different places: first, after some paragraph, or last, a paragraph of their own or attached
to a neighbour. Every session is sent turn by turn, interleaved with the others, through ONE
client-side SGLang radix model, in OpenAI chat and Anthropic Messages form:

- raw: as the agents send them;
- canonicalized: ``CanonicalPolicy(relocate_volatile=True)``, the what-if ``explain`` reports;
- ideal: the same sessions with the volatile lines frozen, the same in every session and turn, at one place.
"""

from __future__ import annotations

import argparse
import random
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import workload

from agentcache import get_tokenizer
from agentcache.drift import CacheOptions, Trace, TraceRecord, explain
from agentcache.totals import ratio

_PARAGRAPHS = [
    "You are Relay, the support agent of a parcel carrier. You answer customers about their shipments.",
    "Look the parcel up before you answer anything about it, and quote its tracking number back.",
    "Never promise a delivery date the tracking system does not show. Say what it shows and when it was updated.",
    "When a parcel is lost, open a claim with the claim tool and give the customer its number.",
    "Keep answers under 120 words. Use the customer's language. Do not use markdown tables.",
    "Escalate to a human when the customer asks for one, or after two failed attempts to solve the problem.",
]
_RULES = [f"{n + 1}. {text}" for n, text in enumerate(_PARAGRAPHS * 4)]
_FROZEN = ["Current time: 2026-11-30T00:00:00Z", "Session: 00000000-0000-4000-8000-000000000000"]


def _volatile(rng: random.Random, session: int, turn: int) -> list[str]:
    """The session's volatile lines at ``turn``: its clock and its id."""
    return [
        f"Current time: 2026-11-30T{8 + session % 12:02d}:{turn * 2:02d}:{(session * 7 + turn * 13) % 60:02d}Z",
        f"Session: {uuid.UUID(int=rng.getrandbits(128), version=4)}",
    ]


def _system(volatile: list[str], position: int, attached: bool) -> str:
    """The deployment's paragraphs, a blank line apart, with ``volatile`` as one block at ``position``: a paragraph
    of its own, or ``attached`` to the paragraph before it (or after it, at the top) by a single newline."""
    text = "\n\n".join(_RULES[:position])
    block = "\n".join(volatile)
    rest = "\n\n".join(_RULES[position:])
    if not text:
        return block + ("\n" if attached else "\n\n") + rest
    if not rest:
        return text + ("\n" if attached else "\n\n") + block
    return text + ("\n" if attached else "\n\n") + block + "\n\n" + rest


def _sessions(sessions: int, turns: int, anthropic: bool, ideal: bool) -> Trace:
    """Every session's requests, turn by turn in turns, as one server receives them."""
    tools = workload.tools(count=4)
    if anthropic:
        tools = [
            {
                "name": t["function"]["name"],
                "description": t["function"]["description"],
                "input_schema": t["function"]["parameters"],
            }
            for t in tools
        ]
    runs = []
    for session in range(sessions):
        rng = random.Random(session)
        position = 0 if ideal else rng.randrange(len(_RULES) + 1)
        attached = not ideal and rng.random() < 0.5
        history: list[dict[str, Any]] = [{"role": "user", "content": f"Where is parcel JX{session:05d}? It is late."}]
        requests = []
        for turn in range(turns):
            system = _system(_FROZEN if ideal else _volatile(rng, session, turn), position, attached)
            requests.append(_request(system, tools, history, anthropic))
            call = f"call_{session}_{turn}"
            result = _scans(session, turn)
            history += _tool_turn(call, session, result, anthropic)
        runs.append(requests)
    order = [(s, t) for t in range(turns) for s in range(sessions)]
    return Trace([TraceRecord(n, f"s{s}", runs[s][t]) for n, (s, t) in enumerate(order, 1)], [])


def _scans(session: int, turn: int) -> str:
    """The tracking lookup's answer: the parcel's scan history, about 300 tokens."""
    scans = [
        f"{day + 1:02d} Nov 2026 {8 + (day * 5 + session) % 10:02d}:{(day * 17) % 60:02d}"
        f" depot D{(day * 7 + turn) % 40:02d} - {('received', 'sorted', 'loaded', 'in transit', 'delivering')[day % 5]}"
        for day in range(24)
    ]
    return f"Parcel JX{session:05d}, lookup {turn + 1}:\n" + "\n".join(scans)


def _request(
    system: str, tools: list[dict[str, Any]], history: list[dict[str, Any]], anthropic: bool
) -> dict[str, Any]:
    if anthropic:
        return {
            "model": "claude",
            "max_tokens": 512,
            "system": [{"type": "text", "text": system}],
            "tools": tools,
            "messages": [*history],
        }
    return {"model": "relay", "tools": tools, "messages": [{"role": "system", "content": system}, *history]}


def _tool_turn(call: str, session: int, result: str, anthropic: bool) -> list[dict[str, Any]]:
    """The assistant's tracking lookup and its result."""
    arguments = {"tracking_number": f"JX{session:05d}"}
    if anthropic:
        return [
            {"role": "assistant", "content": [{"type": "tool_use", "id": call, "name": "track", "input": arguments}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call, "content": result}]},
        ]
    function = {"name": "track", "arguments": f'{{"tracking_number": "JX{session:05d}"}}'}
    return [
        {"role": "assistant", "content": None, "tool_calls": [{"id": call, "type": "function", "function": function}]},
        {"role": "tool", "tool_call_id": call, "content": result},
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=48)
    parser.add_argument("--turns", type=int, default=8)
    args = parser.parse_args()
    tokenizer = get_tokenizer("o200k_base")
    cache = CacheOptions("sglang")
    print(f"{args.sessions} sessions x {args.turns} turns, one shared SGLang radix model, tokenizer o200k_base\n")
    print(f"{'format':<10} {'prompt':>10} {'ideal':>7} {'raw':>7} {'canon':>7} {'canon/ideal':>12}")
    missed = False
    for name, anthropic in (("openai", False), ("anthropic", True)):
        drifting = explain(_sessions(args.sessions, args.turns, anthropic, ideal=False), tokenizer, cache)
        ideal = explain(_sessions(args.sessions, args.turns, anthropic, ideal=True), tokenizer, cache)
        prompt = sum(r.predicted_prompt_tokens for r in drifting)
        ideal_cached = sum(r.predicted_cached for r in ideal)
        raw = sum(r.predicted_cached for r in drifting)
        canonical = sum(r.canonical_cached for r in drifting)
        ideal_ratio = ratio(ideal_cached, sum(r.predicted_prompt_tokens for r in ideal))
        of_ideal = ratio(canonical, ideal_cached)
        missed |= of_ideal < 0.99
        print(
            f"{name:<10} {prompt:>10,} {ideal_ratio:>7.1%} {ratio(raw, prompt):>7.1%} "
            f"{ratio(canonical, prompt):>7.1%} {of_ideal:>12.1%}"
        )
    print("\nhit ratios of the prompt tokens sent; canon/ideal = canonicalized cached tokens / ideal cached tokens")
    print("target: canon/ideal >= 99% —", "MISSED" if missed else "met")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
