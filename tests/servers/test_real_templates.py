"""Real models' chat templates on llama-server: every turn the server accepts is predicted to the token.

The templates are the ones llama.cpp ships with its source (``models/templates/`` of the sdist the engine script
builds llama-server from); nothing is downloaded and nothing is copied into the repository. For each template a
model folder is made in a temporary directory (the test model's tokenizer and config, that template as its
``chat_template``), a llama-server is started on it with ``--chat-template-file``, and multi-turn sessions of many
shapes go through :class:`CacheAwareTransport`. The assistant turns in the history are fixed texts and tool
calls, never what the random-weight model generates, so every run sends the same requests.

A template llama-server refuses at start is passed over with a warning that gives its reason. On every turn the
server accepts, the prediction must equal the report; a turn the client cannot render must say why, and its
request must have gone out as the agent wrote it.

Cost: one llama-server start (a few seconds) and 29 turns per template; most of a turn is llama-server's own
request handling (its template analysis and tool grammar), not prompt evaluation. The 70 templates took 20 minutes
on two CPUs shared with other work (9 to 74 s a template), about 7 s a template on a quiet machine. Run it
alone with ``scripts/test tests/servers/test_real_templates.py``, on some templates with
``AGENTCACHE_TEMPLATES='*Qwen3*'``.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from tests.conftest import EngineInfo
from tests.servers.realtemplates import TEMPLATES, chosen, problems, run_template


@pytest.fixture(scope="module")
def installed(llama_server: EngineInfo) -> EngineInfo:
    """The shared llama-server fixture installs the binary, the model and the sdist the templates come from."""
    return llama_server


def test_every_accepted_turn_is_predicted_exactly(installed: EngineInfo, tmp_path: Path) -> None:
    """One test over all the templates, not one per template: they come with the sdist, which a fresh machine
    downloads only when the engine fixtures run, after collection. ``AGENTCACHE_TEMPLATES=GLOB`` picks some."""
    picked = chosen()
    if "AGENTCACHE_TEMPLATES" not in os.environ:
        assert len(picked) >= 30, f"the real templates are missing from {TEMPLATES}"
    found = []
    for template in picked:
        workdir = tmp_path / template.stem
        workdir.mkdir()
        refused, outcomes = run_template(template, workdir)
        if refused is not None:
            warnings.warn(f"llama-server refuses {template.stem}: {refused}", stacklevel=1)
        found += problems(template, outcomes)
    assert not found, "\n".join(found)
