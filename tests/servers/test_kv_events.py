"""The servers' KV cache events: SGLang's and vLLM's own record of what they stored and evicted, read over ZMQ.

The shared SGLang and vLLM servers publish their events (engines.py starts them with ``--kv-events-config``),
and their KV pools are 4,096 tokens, so three prompts of about 1,400 tokens do not fit together: the server
evicts, and the events say what. What the stream holds before a request is what the server then reports cached,
with and without eviction.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import msgpack
import pytest

from agentcache.errors import EventsError
from agentcache.servers import ServerPrompt
from agentcache.servers.kv_events import KEEPS_COPIES, STORE_WAIT, Held, KvEventStream, ServerBlocks, decode_batch
from tests.conftest import EngineInfo


def document(name: str, words: int = 350) -> str:
    return f"Document {name}. " + " ".join(f"{name}{i % 97} item{i}" for i in range(words))


def body(engine: EngineInfo, text: str) -> dict[str, Any]:
    messages = [{"role": "system", "content": "Summarize."}, {"role": "user", "content": text}]
    return {"model": engine.model, "messages": messages, "max_tokens": 1, "temperature": 0}


def stream_of(engine: EngineInfo) -> KvEventStream:
    assert engine.kv_events is not None, "engines.py starts the server with --kv-events-config"
    return KvEventStream(engine.kv_events, copies=engine.profile in KEEPS_COPIES)


@pytest.mark.parametrize("fixture", ["sglang", "vllm"])
def test_what_the_events_hold_is_what_the_server_reports_cached_under_eviction(
    request: pytest.FixtureRequest, fixture: str
) -> None:
    engine: EngineInfo = request.getfixturevalue(fixture)
    prompt = ServerPrompt.from_pretrained(engine.model_dir, engine.profile)
    bodies = [body(engine, document(name)) for name in ("alpha", "beta", "gamma")]
    tokens = [prompt.tokens(b) for b in bodies]
    assert all(1_200 < len(t) < 2_000 for t in tokens)  # three do not fit a pool of 4,096 together
    checked: list[tuple[int, int]] = []
    with stream_of(engine) as stream, httpx.Client(base_url=engine.url, timeout=300) as http:
        engine.empty_cache()
        assert stream.settle()
        seen = []
        for index in (0, 0, 1, 2, 0):  # alpha twice, beta, gamma, then alpha again, evicted in part
            assert stream.settle()
            held, seq = stream.held(tokens[index]), stream.seq
            response = http.post("/v1/chat/completions", json=bodies[index])
            assert response.status_code == 200, response.text
            reported = response.json()["usage"]["prompt_tokens_details"]["cached_tokens"]
            # the last prompt token is always computed again; vLLM reports whole blocks
            checked.append((reported, engine.reusable(min(held + 1, len(tokens[index])))))
            seen.append(seq)
        assert stream.settle()
        assert stream.error is None and stream.missed == 0
        evicted = stream.evicted_since(tokens[0], seen[1])
    assert [reported for reported, _ in checked] == [held for _, held in checked]
    assert checked[0][0] == 0 and checked[1][0] > 1_000  # alpha computed, then read back
    assert evicted is not None and checked[4][0] < checked[1][0]  # the server evicted part of alpha for gamma


def test_a_flush_clears_what_the_events_hold(sglang: EngineInfo) -> None:
    """A path the server stored before the subscription cannot be placed (no event names its first block); after a
    flush the server stores it from the root, and the events hold it; a second flush clears it."""
    assert sglang.kv_events is not None
    request = body(sglang, document("delta", 100))
    tokens = ServerPrompt.from_pretrained(sglang.model_dir, sglang.profile).tokens(request)
    with httpx.Client(base_url=sglang.url, timeout=300) as http:
        assert http.post("/v1/chat/completions", json=request).status_code == 200  # cached before the subscription
        with KvEventStream(sglang.kv_events) as stream:
            assert http.post("/v1/chat/completions", json=request).status_code == 200
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
    assert blocks.stores_after([5, 6, 7, 8], after=2.0) == [3]  # the re-store, the first to arrive after 2.0
    assert blocks.stores_after([5, 6, 7, 8], after=3.0) == []
    blocks.apply(decode_batch(batch({**stored, "token_ids": [5, 6, 7, 8]})), 3, now=5.0)
    assert blocks.still_gone(removal, before=5) is None  # all stored again: nothing is gone


def test_vllm_s_salt_names_the_namespace_of_the_chain_and_copies_are_counted() -> None:
    """vLLM sends ``cache_salt`` in the first block's ``extra_keys`` only (after a LoRA name when there is one), and
    can hold a block twice: a removal takes one copy, and the block is gone with the last."""
    stored = {"type": "BlockStored", "parent_block_hash": None, "block_size": 2, "lora_name": None}
    root = {**stored, "block_hashes": [1], "token_ids": [5, 6], "extra_keys": [["tenant-a"]]}
    after = {**stored, "block_hashes": [2], "parent_block_hash": 1, "token_ids": [7, 8], "extra_keys": [None]}
    blocks = ServerBlocks(copies=True)
    blocks.apply(decode_batch(batch(root, after, after)), 0)
    (removal,) = blocks.apply(decode_batch(batch({"type": "BlockRemoved", "block_hashes": [2]})), 1)
    assert (removal.path, removal.start, removal.salt) == ((5, 6, 7, 8), 2, "tenant-a")
    assert blocks.held([5, 6, 7, 8]) == 4 and blocks.evicted_since([5, 6, 7, 8], 0) is None  # a copy is left
    kept = blocks.still_gone(removal, before=9)  # the model counts copies too: the drop is whole
    assert kept is not None and (kept.path, kept.start) == (removal.path, removal.start)
    blocks.apply(decode_batch(batch({"type": "BlockRemoved", "block_hashes": [2]})), 2)
    assert blocks.held([5, 6, 7, 8]) == 2 and blocks.evicted_since([5, 6, 7, 8], 1) == 2
    lora = {**root, "block_hashes": [3], "lora_name": "adapter", "extra_keys": [["adapter", [b"mm", 0], "tenant-b"]]}
    assert decode_batch(batch(lora))[0].salt == "tenant-b"


def test_what_the_server_held_of_a_path_at_a_moment_and_whether_the_events_know_it_held_no_more() -> None:
    """Events 1 (store of 5 6 7 8), 2 (removal of 7 8), 3 (store of 7 8 again): what was held before each event,
    and whether the block after the held part is known not held (stored only later, or removed) or was never
    named by an event (the server may hold it since before the subscription)."""
    blocks = ServerBlocks()
    stored = {"type": "BlockStored", "block_hashes": [1, 2, 3, 4], "parent_block_hash": None, "block_size": 1}
    blocks.apply(decode_batch(batch({**stored, "token_ids": [5, 6, 7, 8]})), 0)
    blocks.apply(decode_batch(batch({"type": "BlockRemoved", "block_hashes": [3, 4]})), 1)
    blocks.apply(
        decode_batch(batch({**stored, "block_hashes": [3, 4], "parent_block_hash": 2, "token_ids": [7, 8]})), 2
    )
    path = [5, 6, 7, 8, 9]
    assert blocks.held_before(path, 1) == Held(0, known=True)  # stored only at event 1
    assert blocks.held_before(path, 2) == Held(4, known=False)  # 9 was never named
    assert blocks.held_before(path, 3) == Held(2, known=True)  # 7 and 8 removed at event 2
    assert blocks.held_before(path, 4) == Held(4, known=False)
    assert blocks.held_before([5, 0], 4) == Held(1, known=False)
    blocks.apply(decode_batch(batch({"type": "AllBlocksCleared"})), 3)
    assert blocks.held_before(path, 5) == Held(0, known=True)


def test_a_request_s_own_first_store_is_past_what_the_server_matched() -> None:
    """The session's previous turn stored 5 6 and its events arrived late, after the next turn was sent; that turn
    matched 2 tokens and stored 7 8: its own first store is the one past those 2, and what the server held then
    counts the late store."""
    blocks = ServerBlocks()
    stored = {"type": "BlockStored", "parent_block_hash": None, "block_size": 1}
    blocks.apply(decode_batch(batch({**stored, "block_hashes": [1, 2], "token_ids": [5, 6]})), 0, now=2.0)
    nxt = {**stored, "block_hashes": [3, 4], "parent_block_hash": 2, "token_ids": [7, 8]}
    blocks.apply(decode_batch(batch(nxt)), 1, now=3.0)
    assert blocks.stores_after([5, 6, 7, 8], after=1.0) == [1, 2]  # the previous turn's store first
    assert blocks.stores_after([5, 6, 7, 8], after=1.0, beyond=2) == [2]
    assert blocks.held_before([5, 6, 7, 8], 2) == Held(2, known=True)


def test_a_store_read_late_is_not_taken_for_the_request_s_own_when_the_events_held_more_than_it_matched() -> None:
    """The stream reads behind the server (a loaded machine): the previous turn's store of block 4 and the eviction
    of blocks 3 and 4 by another session both arrive after the next turn was sent. That turn matched 4 tokens and
    stored blocks 3 to 5. The late store of block 4 lies past the match and arrived after the turn was sent, but
    the events held 6 tokens before it, not the 4 matched: it was made before the match. Taken for the turn's own,
    it placed the match before the eviction (held 6, nothing removed), where the server held 4."""
    stream = KvEventStream("unused")  # not started: messages are given to it as they would arrive
    stored = {"type": "BlockStored", "parent_block_hash": None, "block_size": 2}
    path = [5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
    stream.receive(0, decode_batch(batch({**stored, "block_hashes": [1, 2, 3], "token_ids": path[:6]})), now=1.0)
    previous = {**stored, "block_hashes": [4], "parent_block_hash": 3, "token_ids": path[6:8]}
    stream.receive(1, decode_batch(batch(previous)), now=5.0)
    evicted = batch({"type": "BlockRemoved", "block_hashes": [4]}, {"type": "BlockRemoved", "block_hashes": [3]})
    stream.receive(2, decode_batch(evicted), now=5.1)
    own = {**stored, "block_hashes": [3, 4, 5], "parent_block_hash": 2, "token_ids": path[4:]}
    stream.receive(3, decode_batch(batch(own)), now=5.2)
    assert stream.blocks.stores_after(path, after=4.0, beyond=4) == [2, 5]  # the late store, then its own
    removals, held = stream.at_match(path, sent=4.0, matched=4, wait=0.0)
    assert sorted(r.start for r in removals) == [4, 6] and held == Held(4, known=True)
    stream.missed = 1  # a stream that lost messages cannot check what was held: the first store past the match
    assert stream.at_match(path, sent=4.0, matched=4, wait=0.0)[1] == Held(6, known=True)


def test_without_a_store_of_its_own_a_request_is_matched_where_the_events_held_what_it_matched() -> None:
    """A request matched 4 tokens and stored no new block (vLLM: its new tokens filled none). The server evicted
    one of its blocks after it answered (vLLM frees a request's blocks, and may evict them, only then), and that
    removal arrived while the prediction waited: the request is matched at the first moment after it was sent when
    the events held the 4 it matched. Without the server's count, the events that arrived by its answer, where the
    server publishes before it answers; else all of them."""
    stream = KvEventStream("unused")  # not started: messages are given to it as they would arrive
    stored = {"type": "BlockStored", "parent_block_hash": None, "block_size": 2}
    path = [5, 6, 7, 8]
    stream.receive(0, decode_batch(batch({**stored, "block_hashes": [1, 2], "token_ids": path})), now=1.0)
    stream.receive(1, decode_batch(batch({"type": "BlockRemoved", "block_hashes": [2]})), now=3.5)
    for answered in (3.0, None):
        removals, held = stream.at_match(path, sent=2.0, matched=4, answered=answered, wait=0.0)
        assert removals == [] and held == Held(4, known=False)
    removals, held = stream.at_match(path, sent=2.0, answered=3.0, wait=0.0)
    assert removals == [] and held == Held(4, known=False)
    removals, held = stream.at_match(path, sent=2.0, wait=0.0)  # all events so far
    assert [r.start for r in removals] == [2] and held == Held(2, known=True)


def test_a_match_without_a_store_is_placed_by_what_the_events_held_however_late_they_were_read() -> None:
    """The previous turn stored a fourth block; its message, read behind the server, arrived only after the next
    turn was answered. That turn matched all 8 tokens and stored nothing: as of its answer the events held 6, but
    they held its 8 once the late store was read, which is when the server matched it."""
    stream = KvEventStream("unused")
    stored = {"type": "BlockStored", "parent_block_hash": None, "block_size": 2}
    path = [5, 6, 7, 8, 9, 10, 11, 12, 13]
    stream.receive(0, decode_batch(batch({**stored, "block_hashes": [1, 2, 3], "token_ids": path[:6]})), now=1.0)
    late = {**stored, "block_hashes": [4], "parent_block_hash": 3, "token_ids": path[6:8]}
    stream.receive(1, decode_batch(batch(late)), now=4.0)
    removals, held = stream.at_match(path, sent=2.0, matched=8, answered=3.0, wait=0.0)
    assert removals == [] and held == Held(8, known=False)
    assert stream.blocks.held_exactly(path, since=1, matched=2) is None  # never held just the first block


def test_a_store_the_request_must_have_made_is_waited_for_however_late_its_message_comes() -> None:
    """The server evicted the last two of a session's four blocks, then matched the next turn's first 4 tokens and
    stored the rest, the two blocks again and one new; on a loaded machine both messages come a second after the
    answer. The turn computed whole blocks past its match, on a path the events know, so its own store must come:
    it is waited for, and the removal before it is taken, rather than matching the turn against events that lag
    behind the server."""
    stream = KvEventStream("unused")  # not started: messages are given to it as they would arrive
    stored = {"type": "BlockStored", "parent_block_hash": None, "block_size": 2}
    path = [5, 6, 7, 8, 9, 10, 11, 12]
    stream.receive(0, decode_batch(batch({**stored, "block_hashes": [1, 2, 3, 4], "token_ids": path})), now=1.0)
    sent = time.monotonic()

    def late() -> None:
        time.sleep(STORE_WAIT * 2)
        stream.receive(1, decode_batch(batch({"type": "BlockRemoved", "block_hashes": [3, 4]})), time.monotonic())
        again = {**stored, "block_hashes": [3, 4, 5], "parent_block_hash": 2, "token_ids": [*path[4:], 13, 14]}
        stream.receive(2, decode_batch(batch(again)), time.monotonic())

    feeder = threading.Thread(target=late)
    feeder.start()
    removals, held = stream.at_match([*path, 13, 14], sent, matched=4)
    feeder.join()
    assert [(r.start, r.path) for r in removals] == [(4, tuple(path))] and held == Held(4, known=True)


def test_a_request_must_store_only_whole_blocks_past_its_match_on_a_path_the_events_know() -> None:
    blocks = ServerBlocks()
    stored = {"type": "BlockStored", "parent_block_hash": None, "block_size": 2}
    assert not blocks.must_store([5, 6, 7, 8], matched=0)  # no block size known yet
    blocks.apply(decode_batch(batch({**stored, "block_hashes": [1, 2], "token_ids": [5, 6, 7, 8]})), 0)
    assert blocks.must_store([5, 6, 7, 8, 9, 10], matched=4)
    assert not blocks.must_store([5, 6, 7, 8, 9], matched=4)  # one token past the match fills no block
    assert not blocks.must_store([1, 2, 3, 4], matched=0)  # tokens no event named: not the server's own
    assert not blocks.must_store([5, 6, 0, 0, 0, 0], matched=4)  # a match the events cannot place
    assert not blocks.must_store([5, 6, 7, 8], matched=2)  # sent before: all held, matched short of its end
    assert not blocks.must_store([5, 6, 7, 8, 9], matched=2)
    blocks.apply(decode_batch(batch({"type": "BlockRemoved", "block_hashes": [2]})), 1)
    assert blocks.must_store([5, 6, 7, 8], matched=2)  # its second block went: computed and stored again
