"""``explain``, ``simulate`` and ``demo`` as a user runs them: real subprocesses on real trace files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentcache import get_tokenizer
from agentcache.demo.scenario import session
from agentcache.drift import TraceRecord, explain
from agentcache.drift.trace import write_trace


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentcache", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four turns of the demo session with usage, a broken line, and one bare request body."""
    requests = session(get_tokenizer("o200k_base"), turns=4)
    path = tmp_path_factory.mktemp("trace") / "trace.jsonl"
    records = [
        TraceRecord(i, "agent", r, {"prompt_tokens_details": {"cached_tokens": 1000}})
        for i, r in enumerate(requests, start=1)
    ]
    write_trace(path, records)
    with path.open("a") as handle:
        handle.write("{not json\n")
        handle.write(json.dumps({"model": "m", "messages": [{"role": "user", "content": "alone"}]}) + "\n")
    return path


def test_explain_json_matches_the_library(trace: Path) -> None:
    result = run("explain", str(trace), "--format", "json")
    assert result.returncode == 2  # the broken line: reported, the rest analysed
    assert (
        result.stderr.strip() == f"agentcache explain: error: {trace}:5: not JSON (Expecting property name "
        "enclosed in double quotes: line 1 column 2 (char 1))"
    )
    out = json.loads(result.stdout)
    assert out["schema"] == "agentcache.explain/2"
    expected = [r.to_json() for r in explain(trace)]
    assert out["turns"] == json.loads(json.dumps(expected))
    assert [t["session"] for t in out["turns"]] == ["agent"] * 4 + ["default"]
    assert out["summary"]["predicted_cached"] == sum(t["predicted_cached"] for t in expected)
    assert out["summary"]["reported_cached"] == 4000
    assert out["problems"] == [{"line": 5, "message": out["problems"][0]["message"]}]


def test_explain_text_table(trace: Path) -> None:
    result = run("explain", str(trace))
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "session",
        "turn",
        "prompt",
        "cached",
        "reported",
        "canonical",
        "wasted",
        "cause",
        "detail",
    ]
    assert "volatile_value" in lines[2] and "timestamp in the system prompt" in lines[2]
    assert "$.system" in lines[2] or "$.messages[0]" in lines[2]
    assert any(line.startswith("predicted cached:") for line in lines)
    assert any("simulated on the client" in line for line in lines)


@pytest.mark.parametrize("kind", ["sglang", "vllm", "openai", "anthropic"])
def test_simulate_each_cache(trace: Path, kind: str) -> None:
    result = run("simulate", str(trace), "--cache", kind, "--canonicalize", "--format", "json")
    out = json.loads(result.stdout)
    raw, canonical = out["results"]
    assert (raw["cache"], raw["canonicalized"], canonical["canonicalized"]) == (kind, False, True)
    assert raw["requests"] == 5 and raw["sessions"]["agent"]["requests"] == 4
    if kind == "anthropic":  # the demo session has no cache_control breakpoints: nothing is ever written
        assert raw["predicted_cached"] == canonical["predicted_cached"] == 0
    else:
        assert canonical["predicted_cached"] > raw["predicted_cached"] > 0


def test_simulate_on_a_cluster_routes_by_every_policy(trace: Path) -> None:
    """The trace's one agent session moves between workers under round robin only: its hit ratio is the lowest."""
    result = run("simulate", str(trace), "--workers", "3", "--format", "json")
    results = json.loads(result.stdout)["results"]
    assert [(r["cache"], r["route"], r["workers"]) for r in results] == [
        (kind, route, 3) for kind in ("sglang", "vllm") for route in ("round_robin", "session", "cache_aware")
    ]
    for kind in ("sglang", "vllm"):
        ratios = {r["route"]: r["hit_ratio"] for r in results if r["cache"] == kind}
        assert ratios["round_robin"] < ratios["session"]


def test_simulate_on_a_cluster_of_llama_servers_is_a_clear_error(trace: Path) -> None:
    result = run("simulate", str(trace), "--workers", "2", "--cache", "llama.cpp")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "agentcache simulate: error: --workers models a gateway's workers (sglang, vllm), not llama.cpp"
    ]


def test_cache_options_reach_the_model(trace: Path) -> None:
    out = json.loads(run("explain", str(trace), "--capacity", "50000", "--page-size", "4", "--format", "json").stdout)
    assert out["cache"] == {
        "kind": "sglang",
        "capacity": 50000,
        "page_size": 4,
        "block_size": 16,
        "model": None,
    }
    assert all(turn["predicted_cached"] % 4 == 0 for turn in out["turns"])
    assert any(turn["predicted_cached"] > 0 for turn in out["turns"])


@pytest.mark.parametrize("kind", ["sglang", "vllm"])
def test_capacity_smaller_than_a_request_is_a_clear_error(trace: Path, kind: str) -> None:
    result = run("simulate", str(trace), "--cache", kind, "--capacity", "1024")
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentcache simulate: error: ")


@pytest.mark.parametrize("command", ["explain", "simulate"])
def test_missing_trace_is_a_one_line_error(tmp_path: Path, command: str) -> None:
    result = run(command, str(tmp_path / "missing.jsonl"))
    assert result.returncode == 2
    assert result.stderr.strip().startswith(f"agentcache {command}: error: cannot read trace")


def test_unknown_tokenizer(trace: Path) -> None:
    result = run("explain", str(trace), "--tokenizer", "no_such_vocab")
    assert result.returncode == 2
    assert "unknown tokenizer 'no_such_vocab'" in result.stderr


def test_demo_text() -> None:
    result = run("demo")
    assert result.returncode == 0, result.stderr
    assert "SIMULATED ON THE CLIENT" in result.stdout
    rows = [line.split() for line in result.stdout.splitlines() if line.strip()[:2].strip().isdigit()]
    assert [int(row[0]) for row in rows] == list(range(1, 11))


def test_demo_numbers() -> None:
    out: dict[str, Any] = json.loads(run("demo", "--format", "json").stdout)
    assert out["simulated"] is True
    for engine in ("sglang", "vllm"):
        totals = out["engines"][engine]["totals"]
        causes = {turn["cause"] for turn in out["engines"][engine]["turns"]}
        assert {"volatile_value", "tool_order", "schema_key_order"} <= causes
        assert totals["raw_cached"] < totals["canonical_cached"] <= totals["ideal_cached"]
        assert totals["prefill_saved"] == totals["canonical_cached"] - totals["raw_cached"]
        turns = out["engines"][engine]["turns"]
        # system 2,000 + tools 1,500 + repository context 6,000
        assert 9_000 < turns[0]["predicted_prompt_tokens"] < 10_000


def test_vllm_capacity_error_speaks_of_capacity(trace: Path) -> None:
    result = run("simulate", str(trace), "--cache", "vllm", "--capacity", "20")
    assert result.returncode == 2
    assert "a capacity of 20 tokens holds 1 blocks of 16" in result.stderr


@pytest.mark.parametrize("command", ["explain", "simulate", "report"])
def test_a_line_that_is_not_utf8_is_named_and_the_rest_analysed(tmp_path: Path, command: str) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Hi there"}]}
    path = tmp_path / "trace.jsonl"
    line = json.dumps(body).encode()
    path.write_bytes(line + b"\n" + b'{"model": "caf\xe9"}\n' + line + b"\n")
    extra = ["--html", str(tmp_path / "report.html")] if command == "report" else ["--format", "json"]
    result = run(command, str(path), *extra)
    assert result.returncode == 2, result.stderr
    problem = "not UTF-8 (invalid continuation byte at byte 14 of the line)"
    assert result.stderr.strip() == f"agentcache {command}: error: {path}:2: {problem}"
    if command == "explain":
        assert [t["line"] for t in json.loads(result.stdout)["turns"]] == [1, 3]
    elif command == "simulate":
        assert json.loads(result.stdout)["results"][0]["requests"] == 2
    else:
        assert "2 requests in 1 session" in result.stdout


def test_demo_sessions_share_one_cache() -> None:
    """Sessions of one deployment differ in task and clock only: canonicalized, every session after the first
    starts from the first one's system prompt and tools, so it reuses more than the first did."""
    out: dict[str, Any] = json.loads(run("demo", "--sessions", "3", "--turns", "3", "--format", "json").stdout)
    assert out["sessions"] == 3
    for engine in ("sglang", "vllm"):
        turns = out["engines"][engine]["turns"]
        assert [t["session"] for t in turns] == ["session-1", "session-2", "session-3"] * 3
        first = {t["session"]: t for t in turns if t["turn"] == 1}
        assert first["session-1"]["canonical_cached"] == 0
        # the system prompt and tools, ~3,500 tokens, are shared canonicalized (the raw clock line breaks them)
        assert first["session-2"]["canonical_cached"] > 3_000 > first["session-2"]["predicted_cached"]
        totals = out["engines"][engine]["totals"]
        assert totals["raw_cached"] < totals["canonical_cached"] <= totals["ideal_cached"]


def test_demo_sessions_text() -> None:
    result = run("demo", "--sessions", "2", "--turns", "2")
    assert result.returncode == 0, result.stderr
    assert "2 sessions of this deployment" in result.stdout
    assert [line.split()[0] for line in result.stdout.splitlines() if line.startswith("session-")] == [
        "session-1",
        "session-2",
    ]
