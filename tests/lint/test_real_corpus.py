"""Issue 15: ``agentcache lint`` on real agent code. The tuned corpus (pinned sdists of agent frameworks, fetched with
pip into a cache and checked by sha256) is linted, and every finding is matched to its label in
bench/lint_labels_tuned.toml: precision >= 90% and recall >= 80% over the labelled problems, and no finding left
unjudged. ``AGENTCACHE_LINT_CORPUS`` names the cache folder (default ``~/.cache/agentcache/lint``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from agentcache.lint import lint_paths

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import lint_real  # the benchmark owns the corpus, the labels and the scoring


def test_precision_and_recall_on_the_labelled_corpus() -> None:
    root = lint_real.fetch(Path(os.environ.get("AGENTCACHE_LINT_CORPUS", lint_real.DEFAULT_CACHE)), "tuned")
    result = lint_paths([root])
    total = lint_real.score(result.findings, root, lint_real.labels("tuned"))["all"]
    assert total.unlabelled == [], "label these findings in bench/lint_labels_tuned.toml"
    assert total.precision >= lint_real.PRECISION, (total.tp, total.fp)
    assert total.recall >= lint_real.RECALL, total.missed
