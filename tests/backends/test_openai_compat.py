"""OpenAICompatClient and its async twin on the real engines' /v1/chat/completions, plus the SSE parser.

Each engine serves the same model, so the same checks run everywhere; what differs is where a server puts the
generated ids when asked (see ``output_token_ids``) and how much of a repeated prompt it reports cached:
SGLang and llama-server every token but the last (n - 1), vLLM only whole blocks of those (block size 32).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agentcache.backends import AsyncOpenAICompatClient, ChatResult, OpenAICompatClient, output_token_ids
from agentcache.backends.openai_compat import SSEParser
from agentcache.errors import InputError
from agentcache.tokens.hf import HFTokenizer, load_tokenizer_json
from agentcache.usage import CacheUsage
from tests.backends import stable_text
from tests.conftest import EngineInfo, engine_script

MAX_TOKENS = 4


def fresh_body(**extra: Any) -> dict[str, Any]:
    """A greedy request whose prompt no earlier run sent, long enough for a few vLLM blocks; ``ignore_eos`` (which
    every engine here honours) makes each answer exactly ``MAX_TOKENS`` tokens, however the random model would end."""
    system = f"You are test {uuid.uuid4().hex}. " + "Answer briefly and stay on topic. " * 12
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Say something."}]
    return {"messages": messages, "max_tokens": MAX_TOKENS, "temperature": 0, "ignore_eos": True, **extra}


@pytest.fixture(scope="module")
def tokenizer(model_dir: Path) -> HFTokenizer:
    return load_tokenizer_json(model_dir / "tokenizer.json")


def check_engine(engine: EngineInfo, tokenizer: HFTokenizer, ask_ids: Mapping[str, Any]) -> None:
    """chat twice (usage, cache, output ids), then stream the same request (chunks, text, usage)."""
    body = fresh_body()
    with OpenAICompatClient(engine.url, model=engine.model) as client:
        first = client.chat({**body, **ask_ids})
        again = client.chat({**body, **ask_ids})
        plain = client.chat(body)
        stream = client.stream_chat(body)
        chunks = list(stream)
    assert first.usage is not None and again.usage is not None and first.usage.cached_tokens is not None
    n = first.usage.prompt_tokens
    assert n is not None and n > 2 * engine_script.VLLM_BLOCK
    assert again.usage.cached_tokens == engine.reusable(n) > first.usage.cached_tokens
    # The three answers from the cache take one numeric path; the first, prefilled whole, another, and on vLLM's
    # bfloat16 the two can differ in a near-tied greedy token. So the first is compared with its own ids only.
    # What the random model writes (it may be nothing but ids the server does not print) is not checked.
    assert again.text == plain.text == stream.text
    completion = first.body["usage"]["completion_tokens"]
    assert completion == again.body["usage"]["completion_tokens"] == MAX_TOKENS  # ignore_eos honoured
    for answer in (first, again):
        assert answer.output_ids is not None and len(answer.output_ids) == completion
        assert stable_text(tokenizer, answer.output_ids) == answer.text.rstrip("\ufffd")
    assert plain.output_ids is None  # not asked for
    assert len(chunks) > completion // 2  # one chunk per token or so, not one buffered answer
    assert stream.usage is not None and stream.usage.prompt_tokens == n
    assert stream.usage.cached_tokens == engine.reusable(n)
    assert stream.usage == plain.usage


def test_llama_server(llama_server: EngineInfo, tokenizer: HFTokenizer) -> None:
    check_engine(llama_server, tokenizer, {"return_tokens": True, "verbose": True})


def test_sglang(sglang: EngineInfo, tokenizer: HFTokenizer) -> None:
    check_engine(sglang, tokenizer, {"return_token_ids": True})


def test_vllm(vllm: EngineInfo, tokenizer: HFTokenizer) -> None:
    check_engine(vllm, tokenizer, {"return_token_ids": True})


def test_llama_server_verbose_alone_gives_no_ids(llama_server: EngineInfo) -> None:
    with OpenAICompatClient(llama_server.url + "/v1", model=llama_server.model) as client:
        result = client.chat(fresh_body(verbose=True))
    assert result.body["__verbose"]["tokens"] == []  # an empty list that would read as "generated nothing"
    assert result.output_ids is None


def test_async_twin(sglang: EngineInfo) -> None:
    body = fresh_body()

    async def main() -> tuple[ChatResult, ChatResult, list[dict[str, Any]], str, CacheUsage | None]:
        async with AsyncOpenAICompatClient(sglang.url, model=sglang.model) as client:
            first = await client.chat({**body, "return_token_ids": True})  # SGLang refuses it when streaming
            again = await client.chat({**body, "return_token_ids": True})
            async with client.stream_chat(body) as stream:
                chunks = [chunk async for chunk in stream]
            return first, again, chunks, stream.text, stream.usage

    first, again, chunks, streamed_text, streamed_usage = asyncio.run(main())
    assert first.usage is not None and again.usage is not None and first.usage.prompt_tokens is not None
    assert streamed_usage is not None
    assert again.usage.cached_tokens == streamed_usage.cached_tokens == first.usage.prompt_tokens - 1
    # The first answer was prefilled whole, the others served from the cache: only these two are compared.
    assert first.output_ids is not None and len(first.output_ids) == MAX_TOKENS
    assert again.output_ids is not None and len(again.output_ids) == MAX_TOKENS
    assert chunks and streamed_text == again.text


def test_chat_refuses_a_stream_body() -> None:
    with OpenAICompatClient("http://127.0.0.1:9") as client, pytest.raises(InputError, match="stream_chat"):
        client.chat({"messages": [], "stream": True})  # raised before anything is sent


def test_output_token_ids_places() -> None:
    assert output_token_ids({"choices": [{"response_token_ids": [1, 2]}]}) == [1, 2]
    assert output_token_ids({"choices": [{"token_ids": [3]}]}) == [3]
    assert output_token_ids({"choices": [{"token_ids": None}]}) is None
    assert output_token_ids({"__verbose": {"tokens": [4], "tokens_predicted": 1}}) == [4]
    assert output_token_ids({"__verbose": {"tokens": [], "tokens_predicted": 0}}) == []
    assert output_token_ids({"choices": [{"token_ids": [True]}]}) is None
    assert output_token_ids(["not", "a", "body"]) is None


STREAM = (
    b": comment\r\n"
    b'data: {"a": "caf\xc3\xa9"}\r\n\r\n'
    b"event: message\n"
    b"data: first line\n"
    b"data:second line\n\n"
    b"data: [DONE]\r\r"
    b"data: unfinished"
)
EVENTS = ['{"a": "café"}', "first line\nsecond line", "[DONE]"]


@pytest.mark.parametrize("size", [1, 2, 3, 7, len(STREAM)])
def test_sse_parser_any_chunking(size: int) -> None:
    parser = SSEParser()
    events = [event for i in range(0, len(STREAM), size) for event in parser.feed(STREAM[i : i + size])]
    assert events == EVENTS
