"""``agentcache_sglang.CacheAwareEndpoint`` under real ``sgl.function`` programs on the real SGLang engine.

The programs run in the engine's venv (``sglang_programs.py``); these tests check the figures they bring back.
Two SGLang facts the expectations derive from: a prompt that is wholly cached still has its last token
prefilled (the logits come from it), and a branch finds cached the tokens its prompt shares with what the server
holds: the primed prefix, and a sibling's prompt when the sibling was scheduled first. The programs' siblings
differ from their first token on, so each finds exactly the prefix.
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
        assert fork["prefill_saved"] == (width - 1) * fork["prefix_tokens"]  # the prime prefilled it once


def test_the_frontend_alone_leaves_the_branches_to_prefill_the_prefix(runs: dict[str, Any]) -> None:
    """The same program through a plain ``RuntimeEndpoint`` gives the same outputs. What its branches find
    cached depends on whether the frontend's worker thread had run the program's text when it forked, and on
    how the server schedules the racing branches: measured in ``bench/sglang_frontend.py``, not asserted."""
    plain, aware = runs["plain"]["steps"], runs["fork"]["steps"]
    assert [s["text"] for s in plain] == [s["text"] for s in aware]  # nothing about the requests changed


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
    shared = common_prefix(tokens["prefix"], tokens["branch 1"])
    assert shared == common_prefix(tokens["prefix"], tokens["branch 2"]) < len(tokens["prefix"])
    # The first branch the server schedules finds only what it shares with the prime; a later one may also find
    # the merged token its sibling put there, never more than the two branches share.
    cached = [b["cached_tokens"] for b in fork["branches"]]
    assert min(cached) == shared
    assert max(cached) <= common_prefix(tokens["branch 1"], tokens["branch 2"])
