"""``explain`` with the server's own prompt (``CacheOptions.model_dir``) on a trace recorded against SGLang."""

from __future__ import annotations

from pathlib import Path

import httpx

from agentcache import get_tokenizer
from agentcache.demo.live import SCALE
from agentcache.demo.scenario import session
from agentcache.drift import CacheOptions, explain
from agentcache.httpx import CacheAwareTransport, TraceRecorder
from tests.conftest import EngineInfo


def test_explain_with_the_model_folder_predicts_what_sglang_reported(sglang: EngineInfo, tmp_path: Path) -> None:
    sglang.empty_cache()
    trace = tmp_path / "trace.jsonl"
    transport = CacheAwareTransport(server="sglang", canonicalize=False, recorder=TraceRecorder(trace))
    with httpx.Client(transport=transport, base_url=sglang.url, timeout=300) as http:
        for body in session(get_tokenizer("o200k_base"), 4, drift=True, scale=SCALE):
            response = http.post("/v1/chat/completions", json={**body, "model": sglang.model, "max_tokens": 2})
            assert response.status_code == 200, response.text

    exact = explain(trace, cache=CacheOptions("sglang", model_dir=str(sglang.model_dir)))
    assert [r.predicted_cached for r in exact] == [r.reported_cached for r in exact]
    assert [r.predicted_prompt_tokens for r in exact] == [r.reported_prompt_tokens for r in exact]
    assert {r.cause for r in exact[1:]} <= {"volatile_value", "tool_order", "schema_key_order"}

    generic = explain(trace, cache=CacheOptions("sglang"))  # agentcache's own rendering: an estimate
    assert [r.cause for r in generic] == [r.cause for r in exact]
    assert [r.predicted_prompt_tokens for r in generic] != [r.reported_prompt_tokens for r in generic]
