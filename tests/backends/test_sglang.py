"""SGLangClient and its async twin against the real SGLang engine (launched with --enable-cache-report).

Every test uses a prompt no earlier run has sent (a fresh uuid in it), so the counts do not depend on what the
engine cached before. The cache figures asserted here are the ones measured and explained in docs/backends.md.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from agentcache.backends import AsyncSGLangClient, Generation, SGLangClient
from agentcache.errors import BackendError, InputError
from agentcache.tokens.hf import HFTokenizer, load_tokenizer_json
from agentcache.usage import CacheUsage
from tests.backends import stable_text
from tests.conftest import EngineInfo

GREEDY = {"max_new_tokens": 2, "temperature": 0, "ignore_eos": True}  # exactly 2 tokens, whatever the model says


def fresh(label: str) -> str:
    return f"{label} {uuid.uuid4().hex}: the quick brown fox jumps over the lazy dog"


@pytest.fixture(scope="module")
def tokenizer(model_dir: Path) -> HFTokenizer:
    return load_tokenizer_json(model_dir / "tokenizer.json")


@pytest.fixture
def client(sglang: EngineInfo) -> Iterator[SGLangClient]:
    with SGLangClient(sglang.url, model=sglang.model) as client:
        yield client


def test_generate_text_counts_the_prompt_and_caches_all_but_its_last_token(
    client: SGLangClient, tokenizer: HFTokenizer
) -> None:
    text = fresh("text")
    n = len(tokenizer.encode(text))
    first = client.generate(text, sampling_params=GREEDY)
    assert (first.prompt_tokens, first.cached_tokens) == (n, 0)
    assert first.usage == CacheUsage("sglang", n, 0)
    assert len(first.output_ids) == GREEDY["max_new_tokens"]
    assert first.finish_reason == "length"
    assert first.text.rstrip("\ufffd") == stable_text(tokenizer, first.output_ids)
    again = client.generate(text, sampling_params=GREEDY)
    assert again.cached_tokens == n - 1  # the last prompt token is computed again for its logits
    assert again.output_ids == first.output_ids


def test_generate_input_ids(client: SGLangClient, tokenizer: HFTokenizer) -> None:
    ids = tokenizer.encode(fresh("ids"))
    first = client.generate(input_ids=ids, sampling_params=GREEDY)
    assert (first.prompt_tokens, first.cached_tokens) == (len(ids), 0)
    assert client.generate(input_ids=ids, sampling_params=GREEDY).cached_tokens == len(ids) - 1


def test_cache_salt_and_extra_key_isolate_the_cache(client: SGLangClient, tokenizer: HFTokenizer) -> None:
    ids = tokenizer.encode(fresh("salt"))
    tenant_a, tenant_b = f"a-{uuid.uuid4().hex}", f"b-{uuid.uuid4().hex}"

    def cached(cache_salt: str | None = None, extra_key: str | None = None) -> int | None:
        return client.generate(
            input_ids=ids, sampling_params=GREEDY, cache_salt=cache_salt, extra_key=extra_key
        ).cached_tokens

    assert cached(cache_salt=tenant_a) == 0
    assert cached(cache_salt=tenant_a) == len(ids) - 1
    assert cached(cache_salt=tenant_b) == 0  # tenant B reuses nothing of tenant A's identical prompt
    assert cached() == 0  # nor does an unsalted request
    assert cached(extra_key=tenant_a) == 0  # extra_key is a key of its own, not the salt
    assert cached(extra_key=tenant_a) == len(ids) - 1


def test_priority_is_accepted(client: SGLangClient, tokenizer: HFTokenizer) -> None:
    ids = tokenizer.encode(fresh("priority"))
    plain = client.generate(input_ids=ids, sampling_params=GREEDY)
    prioritized = client.generate(input_ids=ids, sampling_params=GREEDY, priority=5)
    assert prioritized.output_ids == plain.output_ids
    assert prioritized.cached_tokens == len(ids) - 1


def test_prime_caches_the_whole_prefix(client: SGLangClient, tokenizer: HFTokenizer) -> None:
    prefix = tokenizer.encode(fresh("prime"))
    more = tokenizer.encode(" and then a question")
    primed = client.prime(prefix)
    assert (primed.output_ids, primed.text, primed.finish_reason) == ([], "", "length")
    assert (primed.prompt_tokens, primed.cached_tokens) == (len(prefix), 0)
    assert client.generate(input_ids=prefix + more, sampling_params=GREEDY).cached_tokens == len(prefix)


def test_prime_text_prefix(client: SGLangClient, tokenizer: HFTokenizer) -> None:
    prefix, more = fresh("prime text") + ".", " Then a question?"
    prefix_ids = tokenizer.encode(prefix)
    assert tokenizer.encode(prefix + more)[: len(prefix_ids)] == prefix_ids  # no token spans the seam
    assert client.prime(prefix).prompt_tokens == len(prefix_ids)
    assert client.generate(prefix + more, sampling_params=GREEDY).cached_tokens == len(prefix_ids)


def test_output_is_cached_but_its_last_token(client: SGLangClient, tokenizer: HFTokenizer) -> None:
    ids = tokenizer.encode(fresh("turns"))
    answer = client.generate(input_ids=ids, sampling_params={**GREEDY, "max_new_tokens": 4})  # 4, not ended early
    assert len(answer.output_ids) == 4
    next_turn = ids + answer.output_ids + tokenizer.encode(" next")
    cached = client.generate(input_ids=next_turn, sampling_params=GREEDY).cached_tokens
    assert cached == len(ids) + len(answer.output_ids) - 1  # the last output token was never run through the model


def test_flush_cache_empties_it(client: SGLangClient, tokenizer: HFTokenizer) -> None:
    ids = tokenizer.encode(fresh("flush"))
    client.prime(ids)
    assert client.generate(input_ids=ids, sampling_params=GREEDY).cached_tokens == len(ids) - 1
    client.flush_cache()
    assert client.generate(input_ids=ids, sampling_params=GREEDY).cached_tokens == 0


def test_flush_cache_waits_for_a_running_request_then_empties_it(
    client: SGLangClient, tokenizer: HFTokenizer, sglang: EngineInfo
) -> None:
    """SGLang refuses a flush while a request runs; the client's flush lets it finish first, then flushes."""
    ids = tokenizer.encode(fresh("busy"))
    long = {"max_new_tokens": 256, "temperature": 0, "ignore_eos": True}
    body = {"input_ids": ids, "sampling_params": long, "stream": True}
    with httpx.stream("POST", f"{sglang.url}/generate", json=body, timeout=120) as running:
        lines = running.iter_lines()
        assert next(line for line in lines if line.startswith("data:"))  # generating: 255 tokens still to come
        client.flush_cache()
        last = [line for line in lines if line.startswith("data:") and line != "data: [DONE]"][-1]
    assert len(orjson.loads(last.removeprefix("data:"))["output_ids"]) == 256  # the flush let it finish
    assert client.generate(input_ids=ids, sampling_params=GREEDY).cached_tokens == 0


def test_token_ids_logprob_scores_the_asked_ids_at_each_output_position(
    client: SGLangClient, tokenizer: HFTokenizer, sglang: EngineInfo
) -> None:
    ids = tokenizer.encode(fresh("logprob"))
    asked = tokenizer.encode(" Yes") + tokenizer.encode(" No")
    assert len(asked) == 2
    client.prime(ids)
    params = {**GREEDY, "ignore_eos": True}
    answer = client.generate(input_ids=ids, sampling_params=params, token_ids_logprob=asked)
    assert answer.cached_tokens == len(ids) - 1  # as without logprobs: asking costs no cached tokens
    assert len(answer.token_logprobs) == len(answer.output_ids) == GREEDY["max_new_tokens"]
    sampled = [logprob for logprob, _, *_ in answer.meta_info["output_token_logprobs"]]
    for position, best in zip(answer.token_logprobs, sampled, strict=True):
        assert set(position) == set(asked)
        assert all(logprob <= best + 1e-6 for logprob in position.values())  # greedy took the likeliest token
    # The same figure by another road: the asked token appended to the prompt, scored as an input token.
    for token in asked:
        body = {"input_ids": [*ids, token], "sampling_params": {"max_new_tokens": 0}, "return_logprob": True}
        body["logprob_start_len"] = len(ids) - 1
        scored = httpx.post(f"{sglang.url}/generate", json=body, timeout=60).raise_for_status().json()
        as_input = scored["meta_info"]["input_token_logprobs"][-1]
        assert as_input[1] == token
        assert as_input[0] == pytest.approx(answer.token_logprobs[0][token], abs=1e-4)
    assert client.generate(input_ids=ids, sampling_params=GREEDY).token_logprobs == []  # not asked for


@pytest.mark.parametrize("asked", [[], [-1], ["7"]])
def test_token_ids_logprob_refuses_what_is_not_token_ids(asked: list[object]) -> None:
    with SGLangClient("http://127.0.0.1:9") as client, pytest.raises(InputError, match="token_ids_logprob"):
        client.generate("hi", token_ids_logprob=asked)  # type: ignore[arg-type]  # raised before anything is sent


@pytest.mark.parametrize(
    "text",
    [
        "plain words, numbers 12345 and punctuation!?",
        "<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n",
        "naïve café 東京 🙂 \t tabs  and   spaces\n\n",
    ],
)
def test_tokenize_matches_the_model_tokenizer(client: SGLangClient, tokenizer: HFTokenizer, text: str) -> None:
    assert client.tokenize(text) == tokenizer.encode(text)


def test_server_info(client: SGLangClient, sglang: EngineInfo) -> None:
    info = client.server_info()
    assert info["enable_cache_report"] is True  # scripts/engines launches SGLang with --enable-cache-report
    assert info["served_model_name"] == sglang.model


def test_async_twin(sglang: EngineInfo, tokenizer: HFTokenizer) -> None:
    text = fresh("async")

    async def main() -> tuple[list[int], Generation, Generation, Generation]:
        async with AsyncSGLangClient(sglang.url) as client:
            ids = await client.tokenize(text)
            primed = await client.prime(ids)
            first, again = await asyncio.gather(
                client.generate(input_ids=ids, sampling_params=GREEDY),
                client.generate(input_ids=ids, sampling_params=GREEDY),
            )
            return ids, primed, first, again

    ids, primed, first, again = asyncio.run(main())
    assert ids == tokenizer.encode(text)
    assert (primed.prompt_tokens, primed.output_ids) == (len(ids), [])
    assert first.cached_tokens == again.cached_tokens == len(ids) - 1
    assert first.output_ids == again.output_ids


def test_engine_rejection_is_a_backend_error(client: SGLangClient) -> None:
    with pytest.raises(BackendError, match=r"HTTP 400.*max_new_tokens") as caught:
        client.generate("hello", sampling_params={"max_new_tokens": -1})
    assert caught.value.status == 400


@pytest.mark.parametrize("inputs", [{}, {"text": "a", "input_ids": [1]}])
def test_generate_needs_exactly_one_input(inputs: dict[str, object]) -> None:
    with SGLangClient("http://127.0.0.1:9") as client, pytest.raises(InputError, match="exactly one"):
        client.generate(**inputs)  # type: ignore[arg-type]  # raised before anything is sent
