"""LiteLLM through the transport: it takes an OpenAI client, and that client takes the cache-aware httpx client."""

from __future__ import annotations

import os

import httpx
import openai

from agentcache.httpx import CacheAwareTransport
from tests.conftest import EngineInfo

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM fetches a price list at import otherwise
import litellm


def test_litellm_completion_is_canonicalized_and_accounted(llama_server: EngineInfo) -> None:
    llama_server.empty_cache()
    transport = CacheAwareTransport(server="llama.cpp", model_dir=llama_server.model_dir)
    http = httpx.Client(transport=transport)
    client = openai.OpenAI(base_url=f"{llama_server.url}/v1", api_key="-", http_client=http)
    tools = [
        {"type": "function", "function": {"name": name, "description": f"{name}.", "parameters": {"type": "object"}}}
        for name in ("b_tool", "a_tool")
    ]
    reported = []
    for order in (tools, tools[::-1]):  # the tool order changes; canonicalized, the prefix does not
        response = litellm.completion(
            model=f"openai/{llama_server.model}",
            messages=[{"role": "user", "content": "Look this up. " * 20}],
            tools=order,
            max_tokens=2,
            temperature=0,
            client=client,
            api_base=f"{llama_server.url}/v1",
            api_key="-",
        )
        reported.append((response.usage.prompt_tokens, response.usage.prompt_tokens_details.cached_tokens))
    first, second = transport.ledger.turns()
    assert [(t.reported_prompt_tokens, t.reported_cached) for t in (first, second)] == reported
    assert first.reported_cached == first.predicted_cached == 0
    assert second.cause == "none" and second.reported_cached == second.predicted_cached == reported[1][0] - 1
