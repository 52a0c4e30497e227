"""Real models' chat templates on SGLang and vLLM: every turn the server accepts is predicted to the token.

The same sessions as the llama-server matrix (:mod:`tests.servers.realtemplates`) on a chosen set of templates,
through one server of each engine for the whole matrix: both take a chat template in the request when started
with ``--trust-request-chat-template`` (``engines.py`` does), vLLM as ``chat_template``, SGLang as
``chat_template_kwargs.chat_template``. That is also how the client is told: :class:`ServerPrompt` renders the
request's own template where the server does. SGLang shapes the messages by the content format of the template
it was started with (the test model's), vLLM by the request's; both are modelled, so the predictions hold.

Cost: no start of its own (the shared engine fixtures, 30-45 s each on a quiet machine), then 29 turns per
template. Measured on two CPUs under a load average of 20-60 from other work: SGLang 523 s for the first nine
templates (28-188 s each, about 40 s typical), vLLM 197 s (14-24 s each); Mistral-Small-3.2 took 52 s and 13 s.
``AGENTCACHE_TEMPLATES=GLOB`` narrows the set.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from agentcache.cache.options import CacheOptions
from agentcache.servers import ChatTemplate, ServerPrompt, get_profile
from tests.conftest import EngineInfo, engine_script
from tests.servers.realtemplates import TEMPLATES, chosen, problems, run_sessions, tokenizer

MATRIX = [
    "Qwen-Qwen3-0.6B",
    "Qwen-Qwen2.5-7B-Instruct",
    "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
    "deepseek-ai-DeepSeek-V3.1",
    "NousResearch-Hermes-3-Llama-3.1-8B-tool_use",
    "ibm-granite-granite-4.0",
    "meta-llama-Llama-3.1-8B-Instruct",
    "meta-llama-Llama-3.2-3B-Instruct",
    "mistralai-Mistral-Nemo-Instruct-2407",
    "Mistral-Small-3.2-24B-Instruct-2506",
]
"""Templates of the families the issue names; each engine runs all of them. Granite-4.0 and Mistral-Small-3.2 loop
over a message's parts (``openai``), so vLLM shapes parts for them; SGLang shapes by the test model's template."""


def carried(engine: str, source: str) -> dict[str, Any]:
    """The request fields that carry ``source`` as the request's own chat template on ``engine``."""
    return {"chat_template": source} if engine == "vllm" else {"chat_template_kwargs": {"chat_template": source}}


@pytest.mark.parametrize("fixture", ["sglang", "vllm"])
def test_every_accepted_turn_is_predicted_exactly(request: pytest.FixtureRequest, fixture: str) -> None:
    engine: EngineInfo = request.getfixturevalue(fixture)
    picked = chosen(MATRIX)
    if not picked:
        assert TEMPLATES.is_dir(), f"the real templates are missing from {TEMPLATES}"
        pytest.skip("AGENTCACHE_TEMPLATES picks none of the matrix")
    profile = get_profile(engine.profile)
    prompt = ServerPrompt(profile, ChatTemplate.from_pretrained(engine.model_dir, profile.float_format), tokenizer())
    options = {"cache": CacheOptions("vllm", block_size=engine_script.VLLM_BLOCK)} if engine.name == "vllm" else {}
    found: list[str] = []
    for template in picked:
        began = time.monotonic()
        outcomes = run_sessions(engine.url, prompt, engine.empty_cache, carried(engine.name, template.read_text()),
                                **options)
        mine = problems(template, outcomes)
        accepted = sum(1 for o in outcomes if o.turn.status is not None and 200 <= o.turn.status < 300)
        print(f"{engine.name} {template.stem}: {len(outcomes)} turns, {accepted} accepted, {len(mine)} problems, "
              f"{time.monotonic() - began:.1f} s")
        found += mine
    assert not found, "\n".join(found)


