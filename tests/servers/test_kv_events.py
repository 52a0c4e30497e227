"""The servers' KV cache events: SGLang's own record of what it stored and evicted, read over ZMQ.

The shared SGLang server publishes its events (engines.py starts it with ``--kv-events-config``), and its KV pool
is 4,096 tokens, so three prompts of about 1,400 tokens do not fit together: the server evicts, and the events
say what. What the stream holds before a request is what the server then reports cached, with and without
eviction.
"""

from __future__ import annotations

from typing import Any

import httpx
import msgpack
import pytest

from agentcache.errors import EventsError
from agentcache.servers import ServerPrompt
from agentcache.servers.kv_events import KvEventStream, ServerBlocks, decode_batch
from tests.conftest import EngineInfo


def document(name: str, words: int = 350) -> str:
    return f"Document {name}. " + " ".join(f"{name}{i % 97} item{i}" for i in range(words))


def body(engine: EngineInfo, text: str) -> dict[str, Any]:
    messages = [{"role": "system", "content": "Summarize."}, {"role": "user", "content": text}]
    return {"model": engine.model, "messages": messages, "max_tokens": 1, "temperature": 0}


def test_what_the_events_hold_is_what_sglang_reports_cached_under_eviction(sglang: EngineInfo) -> None:
    assert sglang.kv_events is not None, "engines.py starts SGLang with --kv-events-config"
    prompt = ServerPrompt.from_pretrained(sglang.model_dir, sglang.profile)
    bodies = [body(sglang, document(name)) for name in ("alpha", "beta", "gamma")]
    tokens = [prompt.tokens(b) for b in bodies]
    assert all(1_200 < len(t) < 2_000 for t in tokens)  # three do not fit a pool of 4,096 together
    checked: list[tuple[int, int]] = []
    with KvEventStream(sglang.kv_events) as stream, httpx.Client(base_url=sglang.url, timeout=300) as http:
        sglang.empty_cache()
        assert stream.settle()
        seen = []
        for index in (0, 0, 1, 2, 0):  # alpha twice, beta, gamma, then alpha again, evicted in part
            assert stream.settle()
            held, seq = stream.held(tokens[index]), stream.seq
            response = http.post("/v1/chat/completions", json=bodies[index])
            assert response.status_code == 200, response.text
            reported = response.json()["usage"]["prompt_tokens_details"]["cached_tokens"]
            checked.append((reported, min(held, len(tokens[index]) - 1)))
            seen.append(seq)
        assert stream.settle()
        assert stream.error is None and stream.missed == 0
        evicted = stream.evicted_since(tokens[0], seen[1])
    assert [reported for reported, _ in checked] == [held for _, held in checked]
    assert checked[0][0] == 0 and checked[1][0] > 1_000  # alpha computed, then read back
    assert evicted is not None and checked[4][0] < checked[1][0]  # the server evicted alpha's tail for gamma


def test_a_flush_clears_what_the_events_hold(sglang: EngineInfo) -> None:
    assert sglang.kv_events is not None
    request = body(sglang, document("delta", 100))
    tokens = ServerPrompt.from_pretrained(sglang.model_dir, sglang.profile).tokens(request)
    with KvEventStream(sglang.kv_events) as stream, httpx.Client(base_url=sglang.url, timeout=300) as http:
        assert http.post("/v1/chat/completions", json=request).status_code == 200
        # stored onto the chat template's prefix, stored before this subscription: no known path
        assert stream.settle() and stream.held(tokens) == 0
        sglang.empty_cache()
        assert http.post("/v1/chat/completions", json=request).status_code == 200
        assert stream.settle() and stream.held(tokens) == len(tokens)
        seq = stream.seq
        sglang.empty_cache()
        assert stream.settle()
        assert stream.held(tokens) == 0 and stream.blocks.cleared_at > seq


def batch(*events: Any) -> bytes:
    packed: bytes = msgpack.packb([1.0, list(events), None])
    return packed


def test_both_encodings_and_unknown_types_are_read() -> None:
    """Tagged maps (SGLang, vLLM 0.9+) and tag-first arrays (older vLLM) give the same blocks; a type the reader
    does not know is left out, and bytes hashes (vLLM) are keys like int ones (SGLang)."""
    stored_map = {"type": "BlockStored", "block_hashes": [1, 2], "parent_block_hash": None, "token_ids": [5, 6, 7, 8]}
    stored_array = ["BlockStored", [b"\x01", b"\x02"], None, [5, 6, 7, 8], 2, None]
    for stored in ({**stored_map, "block_size": 2}, stored_array):
        blocks = ServerBlocks()
        blocks.apply(decode_batch(batch(stored, {"type": "SomethingNew"})), 0)
        assert blocks.held([5, 6, 7, 8, 9]) == 4 and blocks.held([5, 6, 0, 0]) == 2
        removed = stored_map["block_hashes"][1:] if isinstance(stored, dict) else [b"\x02"]
        blocks.apply(decode_batch(batch({"type": "BlockRemoved", "block_hashes": removed})), 1)
        assert blocks.held([5, 6, 7, 8]) == 2 and blocks.evicted_since([5, 6, 7, 8], 0) == 2
        assert blocks.evicted_since([5, 6, 7, 8], 1) is None  # nothing removed after message 1


def test_a_payload_that_is_not_a_batch_is_refused_by_name() -> None:
    with pytest.raises(EventsError, match="not a KV event batch"):
        decode_batch(msgpack.packb({"events": []}))


def test_a_removal_leaves_out_what_was_stored_again_before_a_request_was_matched() -> None:
    """The server evicted four blocks, then stored the first two again: a request matched after that re-store
    could read them, so only the last two are still gone for it; for one matched before, all four are. A request's
    match is placed by its own first store."""
    blocks = ServerBlocks()
    stored = {"type": "BlockStored", "block_hashes": [1, 2, 3, 4], "parent_block_hash": None, "block_size": 1}
    blocks.apply(decode_batch(batch({**stored, "token_ids": [5, 6, 7, 8]})), 0, now=1.0)
    (removal,) = blocks.apply(decode_batch(batch({"type": "BlockRemoved", "block_hashes": [1, 2, 3, 4]})), 1)
    assert (removal.path, removal.start, removal.order) == ((5, 6, 7, 8), 0, 2)
    blocks.apply(decode_batch(batch({**stored, "block_hashes": [1, 2], "token_ids": [5, 6]})), 2, now=3.0)
    before = blocks.still_gone(removal, before=3)
    assert before is not None and (before.path, before.start) == (removal.path, 0)
    later = blocks.still_gone(removal, before=4)
    assert later is not None and later.start == 2
    assert blocks.first_store([5, 6, 7, 8], after=2.0) == 3  # the re-store, the first to arrive after 2.0
    assert blocks.first_store([5, 6, 7, 8], after=3.0) is None
    blocks.apply(decode_batch(batch({**stored, "token_ids": [5, 6, 7, 8]})), 3, now=5.0)
    assert blocks.still_gone(removal, before=5) is None  # all stored again: nothing is gone
