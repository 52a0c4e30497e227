"""A transport that reads the server's KV events (SGLang, vLLM): its model takes the server's evictions, so
predictions stay equal to the reports when the pool is too small for the working set, and the turns that lost
their prefix to an eviction are ``evicted``, not drift.

The shared SGLang and vLLM servers' KV pools are 4,096 tokens: three documents of about 1,400 tokens do not fit
together.
"""

from __future__ import annotations

import gc
import threading
import time
from typing import Any

import httpx
import pytest

from agentcache.httpx import SESSION_HEADER, CacheAwareTransport
from agentcache.predict import causes
from agentcache.transport.process import PredictIn
from tests.conftest import EngineInfo
from tests.servers.test_kv_events import document

ORDER = ("alpha", "alpha", "beta", "gamma", "alpha")
"""Alpha's third turn comes after gamma pushed it out of a 4,096-token pool."""


def through_an_eviction(url: str, transport: CacheAwareTransport, model: str, headers: dict[str, str]) -> None:
    """Three sessions of one long document each, in :data:`ORDER`, each turn extending the session's last."""
    histories: dict[str, list[dict[str, Any]]] = {
        name: [{"role": "system", "content": "Summarize."}, {"role": "user", "content": document(name)}]
        for name in ("alpha", "beta", "gamma")
    }
    with httpx.Client(transport=transport, base_url=url, timeout=300) as http:
        for name in ORDER:
            body = {"model": model, "messages": histories[name], "max_tokens": 2, "temperature": 0}
            response = http.post("/v1/chat/completions", json=body, headers={**headers, SESSION_HEADER: name})
            assert response.status_code == 200, response.text
            # a fixed answer, not the random-weight model's text, so each turn extends the last whatever it wrote
            histories[name] = [*histories[name], {"role": "assistant", "content": f"Summary of {name}, part one."}]
            histories[name].append({"role": "user", "content": f"And section {len(histories[name])}?"})


def assert_exact_through_the_eviction(transport: CacheAwareTransport) -> None:
    """Every turn predicted as reported, and alpha's third turn ``evicted`` by the server's word."""
    turns = transport.ledger.turns()
    assert len(turns) == len(ORDER)
    for turn in turns:
        assert turn.predicted_cached == turn.reported_cached, repr(turn)  # the guarantee; whole, not cut short
    alpha = transport.ledger.turns("alpha")
    assert [t.cause for t in alpha[:2]] == [causes.NEW_SESSION, causes.NONE]
    assert alpha[2].cause == causes.EVICTED and "KV events" in (alpha[2].detail or ""), alpha[2]
    assert (alpha[2].reported_cached or 0) < (alpha[1].reported_cached or 0)


@pytest.mark.parametrize("predict_in", ["thread", "process"])
def test_evictions_the_server_reports_keep_predictions_exact(sglang: EngineInfo, predict_in: PredictIn) -> None:
    assert sglang.kv_events is not None
    sglang.empty_cache()
    transport = CacheAwareTransport(
        server="sglang", model_dir=sglang.model_dir, kv_events=sglang.kv_events, predict_in=predict_in
    )
    through_an_eviction(sglang.url, transport, sglang.model, {})
    assert_exact_through_the_eviction(transport)


def test_vllm_s_evictions_keep_predictions_exact(vllm: EngineInfo) -> None:
    """vLLM evicts single blocks (the tail of alpha's, the least recently freed), and the block-hash model drops
    the same ones."""
    assert vllm.kv_events is not None
    vllm.empty_cache()
    transport = CacheAwareTransport(
        server="vllm", cache=vllm.cache_options, kv_events=vllm.kv_events, predict_in="thread"
    )
    through_an_eviction(vllm.url, transport, vllm.model, {})
    assert_exact_through_the_eviction(transport)


def test_a_middleware_that_went_stops_reading_the_server_s_events(sglang: EngineInfo) -> None:
    """Each middleware subscribes to the server's events; once it is garbage, its stream stops. Left reading, every
    dropped one went on decoding and applying each event for the life of the process: a test session's hundred
    transports made a hundred threads doing so, enough load to make the live one late."""
    assert sglang.kv_events is not None
    name = f"agentcache-kv-events {sglang.kv_events}"
    before = {thread for thread in threading.enumerate() if thread.name == name}
    transport = CacheAwareTransport(
        server="sglang", model_dir=sglang.model_dir, kv_events=sglang.kv_events, predict_in="thread"
    )
    reading = [thread for thread in threading.enumerate() if thread.name == name and thread not in before]
    assert len(reading) == 1 and reading[0].is_alive()
    del transport
    deadline = time.monotonic() + 10
    while reading[0].is_alive() and time.monotonic() < deadline:  # the worker may still hold it for a moment
        gc.collect()
        reading[0].join(timeout=0.2)
    assert not reading[0].is_alive()
