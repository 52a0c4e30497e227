"""``agentcache demo --server`` against the real engines, run as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import EngineInfo


@pytest.mark.parametrize("fixture", ["llama_server", "sglang", "vllm"])
def test_demo_against_a_real_engine_predicts_every_turn(request: pytest.FixtureRequest, fixture: str) -> None:
    engine: EngineInfo = request.getfixturevalue(fixture)
    args = ["demo", "--server", engine.url, "--model-dir", str(engine.model_dir), "--format", "json", "--turns", "4"]
    if engine.name == "vllm":
        args += ["--block-size", "32"]
    done = subprocess.run([sys.executable, "-m", "agentcache", *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["simulated"] is False and out["exact"] is True
    assert out["engine"] == engine.profile and out["model"] == engine.model
    raw, canonical = out["totals"]["raw"], out["totals"]["canonical"]
    assert canonical["exact_turns"] == canonical["turns"] == 4
    assert raw["exact_turns"] == raw["turns"] == 4
    assert canonical["reported_cached"] > raw["reported_cached"]
    assert canonical["hit_ratio"] > 0.5 > raw["hit_ratio"]
    causes = {turn["cause"] for turn in out["turns"]["raw"][1:]}
    assert causes <= {"volatile_value", "tool_order", "schema_key_order"}


def test_demo_refuses_a_url_where_no_engine_answers() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agentcache", "demo", "--server", "http://127.0.0.1:9", "--engine", "sglang"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "127.0.0.1:9" in done.stderr and "Traceback" not in done.stderr
