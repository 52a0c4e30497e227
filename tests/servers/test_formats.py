"""agentcache's ports of SGLang's and vLLM's content-format rules say what the engines' own code says, on every
real template (the llama-cpp-python sdist's ``models/templates``). The engines' functions run in their own venvs;
no server is asked, but the shared engine fixture is what installs them."""

from __future__ import annotations

import json
import subprocess

import pytest

from agentcache.servers.formats import sglang_content_format, vllm_content_format
from tests.conftest import EngineInfo
from tests.servers.realtemplates import TEMPLATES, templates

ENGINE_RULES = {
    "sglang": "from sglang.srt.parser.jinja_template_utils import detect_jinja_template_content_format as detect",
    "vllm": "from vllm.renderers.hf import _detect_content_format\n"
    "detect = lambda source: _detect_content_format(source, default='string')",
}
OURS = {"sglang": sglang_content_format, "vllm": vllm_content_format}


@pytest.mark.parametrize("fixture", ["sglang", "vllm"])
def test_content_format_matches_the_engine(request: pytest.FixtureRequest, fixture: str) -> None:
    engine: EngineInfo = request.getfixturevalue(fixture)
    paths = templates()
    assert len(paths) >= 30, f"the real templates are missing from {TEMPLATES}"
    program = ENGINE_RULES[engine.name] + (
        "\nimport json, sys\n"
        "print(json.dumps({p: detect(open(p).read()) for p in sys.argv[1:]}))"
    )
    done = subprocess.run(
        [str(engine.python), "-c", program, *map(str, paths)], capture_output=True, text=True, check=True, timeout=600
    )
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    ours = {str(p): OURS[engine.name](p.read_text()) for p in paths}
    assert ours == theirs
    assert set(theirs.values()) == {"string", "openai"}  # both kinds occur, so the comparison tells them apart
