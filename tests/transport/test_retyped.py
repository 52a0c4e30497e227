"""A gateway that forwards its own serialization of a request (SMG under ``cache_aware``) puts each tool's function
keys in its type's order, and SGLang renders them in the order it receives them: the worker's tokens are not the
ones rendered from the body the client sent. Its KV events then name paths the client's model never holds, so the
worker's evictions never reach the model, which predicts more cached than the worker reports once it evicts.
``Cluster(retypes=True)`` predicts from the body as the gateway writes it."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import orjson

from agentcache.cache.options import CacheOptions
from agentcache.servers import ChatTemplate, ServerPrompt
from agentcache.servers.kv_events import REMOVED, STORED, Event, KvEventStream
from agentcache.tokens import get_tokenizer
from agentcache.transport.cluster import retyped
from agentcache.transport.predictor import PredictJob, Predictor

TEMPLATE = (
    "{% if tools %}{{ tools | tojson }}\n{% endif %}"
    "{% for m in messages %}<{{ m.role }}>\n{{ m.content }}\n{% endfor %}<assistant>\n"
)
WORKER = "http://worker-0"
EVICTED = 40
"""Tokens at the end of the first turn's path the worker evicts before the second turn."""
TOOL = {
    "type": "function",
    # sent as canonicalized, keys sorted: SMG writes name, description, parameters
    "function": {
        "description": "Read a file.",
        "name": "read_file",
        "parameters": {"properties": {"path": {"type": "string"}}, "type": "object"},
    },
}


def turn(extra: int) -> dict[str, Any]:
    text = " ".join(f"line{i}" for i in range(300))
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]
    for index in range(extra):
        messages += [{"role": "assistant", "content": f"Done {index}."}, {"role": "user", "content": "Go on."}]
    return {"model": "m", "messages": messages, "tools": [TOOL]}


def block(tokens: Sequence[int], end: int) -> Hashable:
    """The worker's hash of the page ending at ``end``: position-aware, as SGLang's are."""
    return hash(tuple(tokens[:end]))


def stored(tokens: Sequence[int], start: int) -> Event:
    """SGLang's store of ``tokens[start:]``, one token a page, onto the page before ``start``."""
    parent = block(tokens, start) if start else None
    hashes = tuple(block(tokens, end) for end in range(start + 1, len(tokens) + 1))
    return Event(STORED, hashes, parent, tuple(tokens[start:]), 1)


def job(request: dict[str, Any], prompt: int, cached: int, sent_at: float) -> PredictJob:
    return PredictJob(
        orjson.dumps(request), sent_at, "s", [], "", prompt, cached, None, WORKER, sent_at=sent_at, answered_at=None
    )


def predicted(retypes: bool) -> tuple[int, int]:
    """The second turn's prediction and report: the worker (behind a retyping gateway) evicted the end of the
    first turn's path before matching the second."""
    server = ServerPrompt("sglang", ChatTemplate(TEMPLATE, name="test template"), get_tokenizer("o200k_base"))
    first, second = turn(0), turn(1)
    worker_first, worker_second = server.tokens(retyped(first)), server.tokens(retyped(second))
    assert server.tokens(first) != worker_first  # the gateway's key order reaches the prompt
    shared = next(i for i, (a, b) in enumerate(zip(worker_first, worker_second, strict=False)) if a != b)
    matched = shared - EVICTED
    predictor = Predictor(CacheOptions("sglang"), get_tokenizer("o200k_base"), server, retyped=retypes)
    stream = predictor.streams[WORKER] = KvEventStream("tcp://127.0.0.1:1")  # fed here, never started
    stream.receive(0, [stored(worker_first, 0)], 10.1)  # the first turn's prefill
    first_turn = predictor.predict(job(first, len(worker_first), 0, 10.0))
    assert not isinstance(first_turn, str) and first_turn.predicted_cached == 0
    evicted = tuple(block(worker_first, end) for end in range(matched + 1, len(worker_first) + 1))
    stream.receive(1, [Event(REMOVED, evicted)], 11.0)  # other sessions' prefills push its end out
    stream.receive(2, [stored(worker_second, matched)], 12.1)  # the second turn matched what was left, stored the rest
    second_turn = predictor.predict(job(second, len(worker_second), matched, 12.0))
    assert not isinstance(second_turn, str)
    return second_turn.predicted_cached, matched


def test_a_retyping_gateway_s_key_order_is_what_the_worker_renders() -> None:
    other = {"type": "function", "function": {"strict": True, "name": "x"}}
    sent = {"model": "m", "messages": [], "tools": [TOOL, other]}
    forwarded = retyped(sent)
    keys = [list(tool["function"]) for tool in forwarded["tools"]]
    assert keys == [["name", "description", "parameters"], ["name", "strict"]]
    assert forwarded["messages"] == sent["messages"]
    assert next(iter(TOOL["function"])) == "description"  # the body sent is left as it was
    assert retyped({"model": "m", "messages": []}) == {"model": "m", "messages": []}


def test_the_worker_s_evictions_reach_the_model_when_the_gateway_s_body_is_predicted() -> None:
    cached, reported = predicted(retypes=False)
    assert cached > reported  # the events named the worker's paths, never the model's: the eviction was missed
    cached, reported = predicted(retypes=True)
    assert cached == reported
