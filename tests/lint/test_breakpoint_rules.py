"""The breakpoint rules on traces (AC311-AC314): one trace per bug, and a correctly marked session with none."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentcache.breakpoints import place
from agentcache.cache.rules import MAX_BREAKPOINTS, RULES
from agentcache.lint import lint_paths, rules

MODEL = "claude-opus-4-8"
SYSTEM = "You are a careful agent. " + " ".join(f"Rule {i}: read item {i} before changing it." for i in range(300))
MARK = {"type": "ephemeral"}


def request(system: Any, turns: int, **extra: Any) -> dict[str, Any]:
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"step {i}"} for i in range(2 * turns - 1)]
    return {"model": MODEL, "system": system, "messages": messages, **extra}


def codes(tmp_path: Path, requests: list[dict[str, Any]]) -> list[tuple[int, str]]:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps({"session": "s", "request": r}) + "\n" for r in requests))
    return [(f.line, f.code) for f in lint_paths([path]).findings if f.code in ("AC311", "AC312", "AC313", "AC314")]


def test_the_rules_are_in_the_catalogue() -> None:
    assert [rules()[code].name for code in ("AC311", "AC312", "AC313", "AC314")] == [
        "too-many-breakpoints",
        "breakpoint-on-changing-block",
        "breakpoint-under-minimum",
        "ttl-order",
    ]


def test_a_session_marked_by_agentcache_breakpoints_has_no_finding(tmp_path: Path) -> None:
    requests = [request(SYSTEM, turns) for turns in (1, 2, 3)]
    assert codes(tmp_path, [place(r, "anthropic").request for r in requests]) == []


def test_more_breakpoints_than_allowed(tmp_path: Path) -> None:
    blocks = [{"type": "text", "text": f"{SYSTEM} part {i}", "cache_control": MARK} for i in range(MAX_BREAKPOINTS)]
    assert codes(tmp_path, [request(blocks, 1, cache_control=MARK)]) == [(1, "AC311")]


def test_a_breakpoint_on_a_block_that_changes_every_turn(tmp_path: Path) -> None:
    def turn(n: int) -> dict[str, Any]:
        blocks = [{"type": "text", "text": SYSTEM}, {"type": "text", "text": f"Now: turn {n}", "cache_control": MARK}]
        return request(blocks, n)

    assert codes(tmp_path, [turn(1), turn(2), turn(3)]) == [(2, "AC312"), (3, "AC312")]


def test_a_breakpoint_under_the_models_minimum(tmp_path: Path) -> None:
    short = [{"type": "text", "text": "Be brief.", "cache_control": MARK}]
    assert RULES["anthropic", MODEL].min_tokens > 100
    assert codes(tmp_path, [request(short, 1)]) == [(1, "AC313")]


def test_a_ttl_mix_the_api_refuses(tmp_path: Path) -> None:
    blocks = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral", "ttl": "5m"}}]
    late = request(blocks, 2)
    late["messages"][-1]["content"] = [
        {"type": "text", "text": "go", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
    ]
    contradicts = request(SYSTEM, 2, cache_control={"type": "ephemeral", "ttl": "1h"})
    contradicts["messages"][-1]["content"] = [{"type": "text", "text": "go", "cache_control": MARK}]
    assert codes(tmp_path, [late]) == [(1, "AC314")]
    assert codes(tmp_path, [contradicts]) == [(1, "AC314")]
