"""The transport against the real engines: an agent session with realistic drift, sent raw and canonicalized.

On every turn the client-side prediction must equal what the server reports (the model folder gives the
server's own template and tokenizer, and the server returns its output token ids). Canonicalized, each turn must
reuse everything the session sent before (the ideal); raw, the drift costs cache hits, measured here.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from itertools import pairwise
from typing import Any

import httpx
import openai
import pytest

from agentcache import CanonicalPolicy
from agentcache.backends import output_token_ids
from agentcache.cache.blockhash import token_array
from agentcache.cache.prefix import common_prefix
from agentcache.httpx import SESSION_HEADER, AsyncCacheAwareTransport, CacheAwareTransport, Turn, session_scope
from agentcache.predict import causes
from agentcache.servers import ServerPrompt, get_profile
from tests.conftest import EngineInfo
from tests.servers.realtemplates import Wire

ENGINES = ["llama_server", "sglang", "vllm"]
POLICY = CanonicalPolicy(relocate_volatile=True)
TURNS = 4


def _engine(request: pytest.FixtureRequest, fixture: str) -> EngineInfo:
    engine: EngineInfo = request.getfixturevalue(fixture)
    return engine


def _transport(engine: EngineInfo, **options: Any) -> CacheAwareTransport:
    # the model folder carried by the cache options (with vLLM's block size), as `agentcache explain` takes it
    return CacheAwareTransport(server=engine.profile, cache=engine.cache_options, **options)


def _tools(rng: random.Random, shuffle: bool) -> list[dict[str, Any]]:
    """Five tools as an agent framework builds them; with ``shuffle`` in set order and with keys reordered."""
    tools = []
    for name in ("search_docs", "read_file", "write_file", "run_tests", "open_issue"):
        properties = {"path": {"type": "string", "description": f"Where {name} acts."}, "limit": {"type": "integer"}}
        function = {"name": name, "description": f"{name.replace('_', ' ').capitalize()}.", "parameters": {
            "type": "object", "properties": properties, "required": ["path", "limit"]}}
        if shuffle:
            keys = list(function)
            rng.shuffle(keys)
            function = {k: function[k] for k in keys}
            function["parameters"]["required"] = rng.sample(["path", "limit"], 2)
        tools.append({"type": "function", "function": function})
    if shuffle:
        rng.shuffle(tools)
    return tools


def _system(turn: int, timestamp: bool) -> dict[str, Any]:
    lines = ["You are a coding agent working in a repository.", "Use the tools; answer briefly."]
    if timestamp:
        lines.insert(1, f"Current time: 2026-11-30T09:{10 + turn:02d}:05Z")
    return {"role": "system", "content": "\n".join(lines)}


def _answer(turn: int) -> dict[str, Any]:
    """The assistant message a test sends back after ``turn``: fixed text, not what the random model wrote.

    The model's text, re-sent, is tokenized again by the server; llama-server's own pre-tokenizer splits some
    strings a random model writes (runs of unusual Unicode) otherwise than tokenizer.json does, and the prediction
    would then miss by what the two tokenizers disagree on, which is not agentcache's. The server still holds the
    ids it generated: the next prompt diverges from them where this text starts, which the prediction must follow."""
    return {"role": "assistant", "content": f"Module {turn} looks fine; moving on."}


def _session(
    engine: EngineInfo, drift: str, canonical: bool
) -> tuple[list[Turn], list[dict[str, Any]], list[list[int]]]:
    """Run one agent session; returns its ledger turns, the bodies sent, and each turn's output ids."""
    engine.empty_cache()
    network = Wire()
    transport = _transport(engine, canonicalize=canonical, policy=POLICY, ask_output_ids=True, transport=network)
    rng = random.Random(7)
    history: list[dict[str, Any]] = []
    outputs: list[list[int]] = []
    with httpx.Client(transport=transport, base_url=engine.url, timeout=300) as http:
        for turn in range(TURNS):
            history.append({"role": "user", "content": f"Step {turn}: look at module {turn} and report."})
            body = {
                "model": engine.model,
                "messages": [_system(turn, drift == "timestamp"), *history],
                "tools": _tools(rng, drift == "tools"),
                "max_tokens": 3,
                "temperature": 0,
            }
            if not canonical:  # sent as it is: the agent asks for output ids itself (the transport adds them otherwise)
                body.update(get_profile(engine.profile).output_ids_request)
            response = http.post("/v1/chat/completions", json=body)
            assert response.status_code == 200, response.text
            reply = response.json()
            ids = output_token_ids(reply)
            assert ids is not None, "asked for output ids, the server must return them"
            outputs.append(ids)
            history.append(_answer(turn))  # not the random model's text: see _answer
    return transport.ledger.turns(), network.bodies, outputs


def _ideal(engine: EngineInfo, sent: list[dict[str, Any]], outputs: list[list[int]]) -> list[int]:
    """Cached tokens if every turn reused all the server already holds of the previous one."""
    prompt = ServerPrompt.from_pretrained(engine.model_dir, engine.profile)
    tokens = [prompt.tokens(body) for body in sent]
    ideal = [0]
    for before, output, now in zip(tokens, outputs, tokens[1:], strict=False):
        held = token_array(before + output[:-1])
        shared = min(common_prefix(held, token_array(now)), len(now) - 1)
        ideal.append(shared // engine.block * engine.block)
    return ideal


@pytest.mark.parametrize("fixture", ENGINES)
@pytest.mark.parametrize("drift", ["tools", "timestamp"])
def test_canonicalized_session_reaches_the_ideal_and_predictions_are_exact(
    request: pytest.FixtureRequest, fixture: str, drift: str
) -> None:
    engine = _engine(request, fixture)
    raw, _, _ = _session(engine, drift, canonical=False)
    canonical, sent, outputs = _session(engine, drift, canonical=True)
    ideal = _ideal(engine, sent, outputs)

    for turns in (raw, canonical):
        assert [t.turn for t in turns] == list(range(1, TURNS + 1))
        for turn in turns:
            assert turn.exact and turn.output_ids_known and turn.status == 200
            assert turn.predicted_prompt_tokens == turn.reported_prompt_tokens, turn
            assert turn.predicted_cached == turn.reported_cached, turn
    assert [t.reported_cached for t in canonical] == ideal
    assert all(t.canonicalized for t in canonical) and not any(t.canonicalized for t in raw)

    raw_cached = sum(t.reported_cached or 0 for t in raw)
    canonical_cached = sum(t.reported_cached or 0 for t in canonical)
    assert raw_cached < canonical_cached
    expected = {causes.TOOL_ORDER, causes.SCHEMA_KEY_ORDER} if drift == "tools" else {causes.VOLATILE_VALUE}
    assert {t.cause for t in raw[1:]} <= expected
    assert all(t.divergence_token is not None and t.wasted_tokens > 0 for t in raw[1:])
    # Each body sent extends the last (every message is fixed by the test, the tools are in order, and the
    # relocated clock lines of earlier turns stay where they were sent), so no turn has a cause.
    assert all(now["messages"][: len(before["messages"])] == before["messages"] for before, now in pairwise(sent))
    assert {t.cause for t in canonical[1:]} == {causes.NONE}


@pytest.mark.parametrize("fixture", ENGINES)
def test_openai_sdk_streams_through_unbuffered_and_usage_comes_from_the_last_chunk(
    request: pytest.FixtureRequest, fixture: str
) -> None:
    engine = _engine(request, fixture)
    engine.empty_cache()
    transport = _transport(engine)
    http = httpx.Client(transport=transport)
    client = openai.OpenAI(base_url=f"{engine.url}/v1", api_key="sk-test", http_client=http)
    messages = [{"role": "system", "content": "Be brief. " * 40}, {"role": "user", "content": "Say something."}]
    for attempt in range(2):  # the same request twice: the second is served from cache
        stream = client.chat.completions.create(
            model=engine.model, messages=messages, max_tokens=6, temperature=0, stream=True,  # type: ignore[arg-type]
            stream_options={"include_usage": True},
            extra_body={"ignore_eos": True},  # six tokens, so several chunks, however the random model would end
        )
        chunks = 0
        for chunk in stream:
            if chunks == 0:  # the caller has data while the body is still arriving: nothing recorded yet
                assert len(transport.ledger.turns()) == attempt
            chunks += 1
            if chunk.usage is not None:
                usage = chunk.usage
        assert chunks > 2
    first, second = transport.ledger.turns()
    for turn in (first, second):
        assert turn.stream and turn.reported_prompt_tokens == turn.predicted_prompt_tokens == usage.prompt_tokens
        assert not turn.output_ids_known  # streamed: the output was re-tokenized from its text
    assert first.reported_cached == first.predicted_cached == 0
    assert second.reported_cached == second.predicted_cached == engine.reusable(usage.prompt_tokens)


def test_cache_salt_isolates_tenants_on_sglang(sglang: EngineInfo) -> None:
    sglang.empty_cache()
    transport = _transport(sglang)
    messages = [{"role": "system", "content": "Shared tenant prompt. " * 30}, {"role": "user", "content": "Hi"}]
    with httpx.Client(transport=transport, base_url=sglang.url, timeout=300) as http:
        for tenant in ("tenant-a", "tenant-a", "tenant-b"):
            body = {"model": sglang.model, "messages": messages, "max_tokens": 1, "cache_salt": tenant}
            response = http.post("/v1/chat/completions", json=body, headers={SESSION_HEADER: tenant})
            assert response.status_code == 200, response.text
    a1, a2 = transport.ledger.turns("tenant-a")
    (b,) = transport.ledger.turns("tenant-b")
    assert a2.reported_cached == a2.predicted_cached == (a2.reported_prompt_tokens or 0) - 1 > 0
    assert b.reported_cached == b.predicted_cached == 0  # tenant B gets nothing of tenant A's prefix
    assert a1.reported_cached == 0


def test_64_concurrent_async_sessions_lose_no_turn_and_mix_no_sessions(llama_server: EngineInfo) -> None:
    sessions, turns = 64, 2
    transport = AsyncCacheAwareTransport(server="llama.cpp", model_dir=llama_server.model_dir)

    async def one_session(index: int, http: httpx.AsyncClient) -> list[int]:
        history: list[dict[str, Any]] = [{"role": "system", "content": "Agent " + "x" * index}]
        prompts = []
        for turn in range(turns):
            history.append({"role": "user", "content": f"session {index} turn {turn} " + "y " * (index % 7)})
            body = {"model": llama_server.model, "messages": history, "max_tokens": 2, "temperature": 0}
            response = await http.post("/v1/chat/completions", json=body, headers={SESSION_HEADER: f"s{index}"})
            assert response.status_code == 200, response.text
            reply = response.json()
            prompts.append(reply["usage"]["prompt_tokens"])
            history.append(_answer(turn))
        return prompts

    async def main() -> list[list[int]]:
        async with httpx.AsyncClient(transport=transport, base_url=llama_server.url, timeout=600) as http:
            return await asyncio.gather(*(one_session(i, http) for i in range(sessions)))

    reported = asyncio.run(main())
    ledger = transport.ledger
    assert len(ledger.turns()) == sessions * turns
    assert ledger.sessions() == sorted(f"s{i}" for i in range(sessions))
    for index in range(sessions):
        recorded = ledger.turns(f"s{index}")
        assert [t.turn for t in recorded] == list(range(1, turns + 1))
        # Each turn's own body, rendered on the client, has the prompt length the server reported for it.
        assert [t.reported_prompt_tokens for t in recorded] == reported[index]
        assert [t.predicted_prompt_tokens for t in recorded] == reported[index]
        assert all(t.session_source == "header" and t.status == 200 for t in recorded)


def test_requests_it_cannot_handle_reach_the_engine_byte_identical(llama_server: EngineInfo) -> None:
    """Real server, real answers: what the caller gets through the transport is what it gets without it."""
    seen: list[bytes] = []

    class Recording(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request.read())
            return super().handle_request(request)

    transport = CacheAwareTransport(Recording(), server="llama.cpp", model_dir=llama_server.model_dir)
    bodies: list[tuple[bytes, Callable[[Turn], bool]]] = [
        (b"{not json", lambda t: "not JSON" in (t.passthrough or "")),
        (json.dumps({"model": "m", "prompt": "hi"}).encode(), lambda t: "no messages" in (t.passthrough or "")),
    ]
    with httpx.Client(transport=transport, base_url=llama_server.url, timeout=60) as wrapped, httpx.Client(
        base_url=llama_server.url, timeout=60
    ) as bare:
        for content, reason in bodies:
            headers = {"content-type": "application/json"}
            through = wrapped.post("/v1/chat/completions", content=content, headers=headers)
            direct = bare.post("/v1/chat/completions", content=content, headers=headers)
            assert seen[-1] == content
            assert through.status_code == direct.status_code >= 400
            assert through.json()["error"]["type"] == direct.json()["error"]["type"]
            assert reason(transport.ledger.turns()[-1])


def test_session_scope_names_the_session_and_collects_its_turns(llama_server: EngineInfo) -> None:
    """What framework integrations rely on: a thread id passed down without touching the request."""
    transport = AsyncCacheAwareTransport(server="llama.cpp", model_dir=llama_server.model_dir)
    body = {"model": llama_server.model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}

    async def in_scope(session: str, http: httpx.AsyncClient) -> list[Turn]:
        with session_scope(session) as scope:
            for _ in range(2):
                response = await http.post("/v1/chat/completions", json=body, headers={SESSION_HEADER: "ignored"})
                assert response.status_code == 200
        return scope.turns

    async def main() -> list[list[Turn]]:
        async with httpx.AsyncClient(transport=transport, base_url=llama_server.url, timeout=120) as http:
            return await asyncio.gather(in_scope("thread-a", http), in_scope("thread-b", http))

    a, b = asyncio.run(main())
    assert [(t.session, t.turn, t.session_source) for t in a] == [("thread-a", 1, "scope"), ("thread-a", 2, "scope")]
    assert [(t.session, t.turn) for t in b] == [("thread-b", 1), ("thread-b", 2)]
    assert all(t.reported_prompt_tokens == t.predicted_prompt_tokens for t in a + b)


class AnswerInReverse(httpx.AsyncBaseTransport):
    """The engine's transport, holding each answer until all ``n`` requests are answered, then handing them back
    last-started first: the order in which the engine itself finished them is the engine's, this one is the test's.
    An answer is read whole before it is handed back, so the transport records it as it returns."""

    def __init__(self, n: int) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.n = n
        self.started = self.read = self.answered = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        index = self.started  # the transport began this call just now: start order
        self.started += 1
        response = await self.inner.handle_async_request(request)
        raw = b"".join([chunk async for chunk in response.aiter_raw()])
        await response.aclose()
        self.read += 1
        while self.read < self.n or self.answered < self.n - 1 - index:
            await asyncio.sleep(0.01)
        self.answered += 1
        return httpx.Response(response.status_code, headers=response.headers, content=raw, request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def test_predictions_survive_requests_finishing_out_of_start_order(llama_server: EngineInfo) -> None:
    """The hosted-API cache model keeps a clock that must not go backwards. Concurrent requests finish in another
    order than they started (here the reverse one, forced); each is still predicted, timed no earlier than the one
    recorded before it."""
    requests = 8
    transport = AsyncCacheAwareTransport(AnswerInReverse(requests), server="openai", model_dir=llama_server.model_dir)

    async def one(index: int, http: httpx.AsyncClient) -> None:
        body = {
            "model": llama_server.model,
            "messages": [{"role": "user", "content": f"request {index} " + "word " * (400 * (8 - index))}],
            "max_tokens": 2,
            "temperature": 0,
        }
        response = await http.post("/v1/chat/completions", json=body, headers={SESSION_HEADER: f"s{index}"})
        assert response.status_code == 200, response.text

    async def main() -> None:
        async with httpx.AsyncClient(transport=transport, base_url=llama_server.url, timeout=600) as http:
            await asyncio.gather(*(one(i, http) for i in range(requests)))

    asyncio.run(main())
    turns = transport.ledger.turns()
    assert len(turns) == requests
    by_start = sorted(turns, key=lambda t: t.started)
    assert sorted(turns, key=lambda t: t.started + t.seconds) == by_start[::-1]  # the last started finished first
    for turn in turns:
        assert turn.exact and turn.predicted_cached is not None, turn
        assert turn.predicted_prompt_tokens == turn.reported_prompt_tokens, turn
