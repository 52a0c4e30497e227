"""``agentcache_sglang.CacheAwareEndpoint`` under real ``sgl.function`` programs on the real SGLang engine.

The programs run in the engine's venv (``sglang_programs.py``); these tests check the figures they bring back.
Two SGLang facts the expectations derive from: a prompt that is wholly cached still has its last token
prefilled (the logits come from it), and a fork's branches share exactly the tokens their prompts have in common.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentcache.cache.prefix import common_prefix
from tests.conftest import EngineInfo

PROGRAMS = Path(__file__).with_name("sglang_programs.py")
ROOT = PROGRAMS.parents[2]


@pytest.fixture(scope="module")
def runs(sglang: EngineInfo) -> dict[str, Any]:
    """Every scenario of ``sglang_programs.py``, run once against the engine."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "integrations")])}
    done = subprocess.run(
        [str(sglang.python), str(PROGRAMS), sglang.url], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def only_fork(run: dict[str, Any]) -> dict[str, Any]:
    (fork,) = run["forks"]
    return fork


def test_every_branch_finds_the_whole_prefix_cached(runs: dict[str, Any]) -> None:
    for name, width in (("fork", 3), ("stream", 3), ("select", 3)):
        fork = only_fork(runs[name])
        assert fork["prime_cached"] == 0, name  # each scenario starts from a flushed cache
        assert len(fork["branches"]) == width, name
        assert [b["cached_tokens"] for b in fork["branches"]] == [fork["prefix_tokens"]] * width, name
        assert fork["covered"] == width
        assert fork["prefill_saved"] == width * fork["prefix_tokens"]


def test_the_frontend_alone_leaves_the_branches_to_prefill_the_prefix(runs: dict[str, Any]) -> None:
    """The same program through a plain ``RuntimeEndpoint``: same outputs, and what its branches found cached
    (its own ``get_meta_info``). The frontend's own prime is skipped when the parent's worker thread lags, which
    is timing-dependent, so the figure is only bounded here: it never beats the primed run."""
    plain, aware = runs["plain"]["steps"], runs["fork"]["steps"]
    assert [s["text"] for s in plain] == [s["text"] for s in aware]  # nothing about the requests changed
    assert all(p["cached"] <= a["cached"] for p, a in zip(plain, aware, strict=True))


def test_a_second_run_reuses_the_prefix_up_to_its_last_token(runs: dict[str, Any]) -> None:
    fork = only_fork(runs["fork_again"])
    assert fork["prime_cached"] == fork["prefix_tokens"] - 1
    assert fork["covered"] == 3


def test_nested_forks_are_each_primed_and_covered(runs: dict[str, Any]) -> None:
    forks = runs["nested"]["forks"]
    assert len(forks) == 3  # the root, then one per first-level branch
    for fork in forks:
        assert len(fork["branches"]) == 2
        assert fork["covered"] == 2
    assert sum(call["kind"] == "prime" for call in runs["nested"]["calls"]) == 3


def test_reporting_only_leaves_priming_to_the_frontend(runs: dict[str, Any]) -> None:
    run = runs["reporting_only"]
    assert len(run["forks"]) >= 2  # a branch's fork always inherits its text, so the frontend primes it
    assert all(fork["primed_by"] == "frontend" for fork in run["forks"])
    assert sum(call["kind"] == "prime" for call in run["calls"]) == len(run["forks"])
    assert [s["text"] for s in run["steps"]] == [s["text"] for s in runs["nested"]["steps"]]


def test_canonical_text_keeps_a_changed_line_ending_from_breaking_the_prefix(runs: dict[str, Any]) -> None:
    """Run 1's system prompt ends its lines with LF, run 2's with CRLF."""
    canonical, as_sent = only_fork(runs["canonical"]), only_fork(runs["as_sent"])
    assert canonical["prime_cached"] == canonical["prefix_tokens"] - 1
    assert all(call["canonicalized"] for call in runs["canonical"]["calls"])
    assert as_sent["prime_cached"] < as_sent["prefix_tokens"] - 1  # the CR is new: the prefix diverges there
    assert not any(call["canonicalized"] for call in runs["as_sent"]["calls"])
    assert as_sent["covered"] == 2  # within the run the branches still share the primed prefix


def test_a_timestamp_in_the_prefix_is_reported_and_breaks_the_next_run(runs: dict[str, Any]) -> None:
    fork = only_fork(runs["volatile"])
    assert [(v["kind"], v["text"]) for v in fork["volatile"]] == [("timestamp", "2026-11-30T07:02:00Z")]
    assert 0 < fork["prime_cached"] < fork["prefix_tokens"] - 1
    assert fork["covered"] == 2


def test_a_fork_that_splits_a_token_loses_exactly_the_merged_tokens(runs: dict[str, Any]) -> None:
    """``split``'s prefix ends with a colon and its branches start with a newline: the pre-tokenizer joins them."""
    fork, tokens = only_fork(runs["split"]), runs["split"]["tokens"]
    assert fork["prefix_tokens"] == len(tokens["prefix"])
    shared = common_prefix(tokens["prefix"], tokens["branch"])
    assert shared < len(tokens["prefix"])
    assert [b["cached_tokens"] for b in fork["branches"]] == [shared, shared]
    assert fork["covered"] == 0
