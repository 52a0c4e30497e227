"""Issue 15: ``agentcache lint`` on real agent code. Each corpus (pinned sdists of agent frameworks, fetched with
pip into a cache and checked by sha256) is linted, and every finding is matched to its label in
bench/lint_labels_CORPUS.toml: no finding left unjudged, and precision and recall over the labelled problems at
least the corpus's floor (the targets, 90% and 80%, on the tuned corpus; what the others reached, on them).
``AGENTCACHE_LINT_CORPUS`` names the cache folder (default ``~/.cache/agentcache/lint``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agentcache.lint import lint_paths

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import lint_real  # the benchmark owns the corpus, the labels and the scoring


@pytest.mark.parametrize("corpus", lint_real.CORPORA)
def test_precision_and_recall_on_the_labelled_corpora(corpus: str) -> None:
    root = lint_real.fetch(Path(os.environ.get("AGENTCACHE_LINT_CORPUS", lint_real.DEFAULT_CACHE)), corpus)
    result = lint_paths([root])
    total = lint_real.score(result.findings, root, lint_real.labels(corpus))["all"]
    assert total.unlabelled == [], f"label these findings in bench/lint_labels_{corpus}.toml"
    precision, recall = lint_real.FLOORS[corpus]
    assert total.precision >= precision, (total.tp, total.fp)
    assert total.recall >= recall, total.missed
