"""agentcache.fork on the real engines: SGLang's primed fork in token ids, and the chat fork on vLLM and llama-server.

Every test works under a cache salt or a prompt no earlier run has used, so the counts do not depend on what the
shared engine cached before. The cache figures asserted are those explained in docs/backends.md and docs/search.md.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import orjson
import pytest

from agentcache.backends import AsyncOpenAICompatClient, AsyncSGLangClient
from agentcache.errors import BackendError, InputError
from agentcache.search.fork import (
    Branch,
    ChatFork,
    Exchange,
    ForkPlan,
    ForkResult,
    branch_markers,
    fork,
    fork_chat,
    prime_fork,
    send_branch,
)
from tests.conftest import EngineInfo
from tests.search import GREEDY, run


def puzzle(label: str) -> str:
    return f"{label} {uuid.uuid4().hex}: move the three disks from peg A to peg C, one at a time. " * 3


async def sglang_fork(engine: EngineInfo, n: int = 3, **options: Any) -> tuple[list[int], ForkResult]:
    async with AsyncSGLangClient(engine.url) as client:
        prefix = await client.tokenize(puzzle("fork"))
        markers = await branch_markers(client, n)
        return prefix, await fork(client, prefix, n, GREEDY, markers=markers, **options)


def test_primed_fork_serves_every_branch_its_whole_prefix_from_cache(sglang: EngineInfo) -> None:
    prefix, result = run(sglang_fork(sglang, cache_salt=f"fork-{uuid.uuid4().hex}"))
    assert result.prefix == tuple(prefix)
    assert result.primed is not None
    assert (result.primed.prompt_tokens, result.primed.cached_tokens, result.primed.output) == (len(prefix), 0, ())
    assert [b.index for b in result.branches] == [0, 1, 2]
    for branch in result.branches:
        assert branch.prompt == tuple(prefix) + branch.marker
        assert branch.exchange.prompt_tokens == len(branch.prompt)
        assert branch.exchange.cached_tokens == len(prefix)  # the whole prefix, computed once by the priming
        assert branch.exchange.prefilled == len(branch.marker)
        assert len(branch.output) == GREEDY["max_new_tokens"]
        assert branch.state == branch.prompt + branch.output == tuple(prefix) + branch.step
    assert len({b.state for b in result.branches}) == 3
    assert result.exchanges == (result.primed, *(b.exchange for b in result.branches))


def test_isolated_fork_shares_nothing_and_sends_the_same_prompts(sglang: EngineInfo) -> None:
    salt = f"fork-{uuid.uuid4().hex}"

    async def both() -> tuple[ForkResult, ForkResult]:
        async with AsyncSGLangClient(sglang.url) as client:
            prefix = await client.tokenize(puzzle("isolate"))
            markers = await branch_markers(client, 3)
            shared = await fork(client, prefix, 3, GREEDY, markers=markers, cache_salt=salt)
            alone = await fork(client, prefix, 3, GREEDY, markers=markers, prime=False, isolate=True, cache_salt=salt)
            return shared, alone

    shared, alone = run(both())
    assert alone.primed is None
    assert [b.exchange.cached_tokens for b in alone.branches] == [0, 0, 0]  # its own fresh salt each: nothing shared
    assert [b.exchange.prefilled for b in alone.branches] == [len(b.prompt) for b in alone.branches]
    # The same prompts, whether they share a primed prefix or not. Not the same outputs: a shared branch reads the
    # prefix's KV from the cache, an isolated one computes it again, and float rounding between the two can flip a
    # near-tied greedy token of the random model; the lengths cannot differ (ignore_eos).
    assert [b.prompt for b in alone.branches] == [b.prompt for b in shared.branches]
    steps = [GREEDY["max_new_tokens"]] * 3
    assert [len(b.output) for b in alone.branches] == [len(b.output) for b in shared.branches] == steps


def test_fork_without_markers_sends_the_prefix_itself(sglang: EngineInfo) -> None:
    async def unmarked() -> tuple[list[int], ForkResult]:
        async with AsyncSGLangClient(sglang.url) as client:
            prefix = await client.tokenize(puzzle("unmarked"))
            return prefix, await fork(client, prefix, 2, GREEDY, cache_salt=f"fork-{uuid.uuid4().hex}")

    prefix, result = run(unmarked())
    for branch in result.branches:
        assert branch.marker == ()
        assert branch.exchange.cached_tokens == len(prefix) - 1  # a repeated prompt: its last token is run again
    assert result.branches[0].output == result.branches[1].output  # temperature 0 and nothing to tell them apart


def test_branch_markers_start_with_distinct_tokens(sglang: EngineInfo) -> None:
    async def markers(labels: list[str] | None = None) -> list[tuple[int, ...]]:
        async with AsyncSGLangClient(sglang.url) as client:
            if labels is None:
                return await branch_markers(client, 5)
            return await branch_markers(client, len(labels), labels)

    got = run(markers())
    assert len(got) == 5 and len({m[0] for m in got}) == 5
    with pytest.raises(InputError, match="distinct tokens"):
        run(markers(["\nA)", "\nB)"]))  # both start with the newline token


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"n": 0}, "at least one branch"),
        ({"prefix": []}, "non-empty prefix"),
        ({"isolate": True}, "pass prime=False"),
        ({"markers": [[1], [2]]}, "one marker per branch"),
        ({"markers": [[1], [], [3]]}, "non-empty"),
        ({"markers": [[7, 1], [7, 2], [8]]}, "distinct tokens"),
    ],
)
def test_fork_refuses_bad_arguments_before_sending(sglang: EngineInfo, options: dict[str, Any], match: str) -> None:
    arguments: dict[str, Any] = {"prefix": [1, 2, 3], "n": 3, **options}

    async def attempt() -> ForkResult:
        async with AsyncSGLangClient(sglang.url) as client:
            return await fork(client, arguments.pop("prefix"), arguments.pop("n"), GREEDY, **arguments)

    with pytest.raises(InputError, match=match):
        run(attempt())


def test_a_failed_branch_fails_the_fork_and_cancels_the_others() -> None:
    """Fault injection: one branch gets HTTP 500 while the others hang; fork must not wait for them."""
    cancelled: list[int] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        marker = httpx.Response(200, content=request.content).json()["input_ids"][-1]
        if marker == 2:
            return httpx.Response(500, text="out of memory")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(marker)
            raise
        raise AssertionError("a hanging branch was never cancelled")

    async def attempt() -> ForkResult:
        async with AsyncSGLangClient("http://engine", transport=httpx.MockTransport(handler)) as client:
            return await asyncio.wait_for(fork(client, [9, 9], 3, GREEDY, markers=[[1], [2], [3]], prime=False), 10)

    with pytest.raises(BackendError, match="500"):
        run(attempt())
    assert sorted(cancelled) == [1, 3]


async def chat_fork(engine: EngineInfo, **options: Any) -> ChatFork:
    body = {
        "messages": [{"role": "system", "content": puzzle("chat")}, {"role": "user", "content": "First move?"}],
        "max_tokens": 4,
        "temperature": 1.0,
    }
    async with AsyncOpenAICompatClient(engine.url, model=engine.model) as client:
        return await fork_chat(client, body, 3, seeds=[11, 12, 13], **options)


def test_chat_fork_on_vllm_hits_whole_blocks_of_the_warm_prompt(vllm: EngineInfo) -> None:
    result = run(chat_fork(vllm))
    first, *rest = result.branches
    assert first.prompt_tokens is not None and first.cached_tokens == 0
    assert [b.seed for b in result.branches] == [11, 12, 13]
    for branch in rest:
        assert branch.prompt_tokens == first.prompt_tokens
        assert branch.cached_tokens == vllm.reusable(first.prompt_tokens)
    assert result.prefilled == sum(b.prefilled or 0 for b in result.branches)
    assert result.prefilled == first.prompt_tokens + 2 * (first.prompt_tokens - (rest[0].cached_tokens or 0))


def test_chat_fork_on_llama_server_one_at_a_time_finds_the_warm_slot(llama_server: EngineInfo) -> None:
    result = run(chat_fork(llama_server, concurrency=1))
    first, *rest = result.branches
    assert first.prompt_tokens is not None and first.cached_tokens is not None
    assert first.cached_tokens < first.prompt_tokens // 2  # at most the chat template's opening, never the puzzle
    assert [b.cached_tokens for b in rest] == [first.prompt_tokens - 1] * 2  # the same prompt: all but its last token


def test_fork_chat_refuses_bad_arguments() -> None:
    async def attempt(n: int, **options: Any) -> ChatFork:
        async with AsyncOpenAICompatClient("http://127.0.0.1:9") as client:
            return await fork_chat(client, {"messages": []}, n, **options)

    with pytest.raises(InputError, match="at least one branch"):
        run(attempt(0))
    with pytest.raises(InputError, match="one seed per branch"):
        run(attempt(3, seeds=[1]))
    with pytest.raises(InputError, match="concurrency"):
        run(attempt(2, concurrency=0))


def test_plan_and_branch_survive_a_json_round_trip(sglang: EngineInfo) -> None:
    """What a checkpointer does to a LangGraph state: plain JSON out, the same plan and branch back."""

    async def planned() -> tuple[ForkPlan, Branch, Branch]:
        async with AsyncSGLangClient(sglang.url) as client:
            prefix = await client.tokenize(puzzle("plain"))
            plan = await prime_fork(client, prefix, 2, GREEDY, markers=await branch_markers(client, 2))
            restored = ForkPlan.from_dict(orjson.loads(orjson.dumps(plan.to_dict())))
            assert restored == plan
            return plan, await send_branch(client, plan, 0), await send_branch(client, restored, 1)

    plan, branch, from_restored = run(planned())
    assert plan.primed is not None and plan.primed.kind == "prime"
    assert Branch.from_dict(orjson.loads(orjson.dumps(branch.to_dict()))) == branch
    for sent in (branch, from_restored):  # the restored plan continues the primed prefix like the original
        assert sent.exchange.cached_tokens == len(plan.prefix)


EXCHANGE = Exchange("branch", (1, 2), (3,), 2, 1).to_dict()
PLAN = {
    "prefix": [1],
    "suffixes": [[2]],
    "sampling_params": {},
    "primed": Exchange("prime", (1,), (), 1, 0).to_dict(),
    "isolate": False,
    "cache_salt": None,
}


def test_plan_params_are_copied_as_json_gives_them_back() -> None:
    params = {"stop": ("\n",), "logit_bias": {"5": -1.0}}
    plan = ForkPlan((1,), ((2,),), params, None, False, None)
    plain = plan.to_dict()
    plain["sampling_params"]["logit_bias"]["5"] = 9.0  # the caller's copy, not the plan's
    assert plan.sampling_params["logit_bias"] == {"5": -1.0}
    assert plain["sampling_params"]["stop"] == ["\n"]
    restored = ForkPlan.from_dict(orjson.loads(orjson.dumps(plan.to_dict())))
    assert restored.to_dict() == plan.to_dict()


@pytest.mark.parametrize(
    ("kind", "data", "what"),
    [
        (Exchange, [1, 2], "expected the keys"),
        (Exchange, {**EXCHANGE, "extra": 1}, "expected the keys"),
        (Exchange, {**EXCHANGE, "kind": "other"}, "kind, prompt_tokens or cached_tokens"),
        (Exchange, {**EXCHANGE, "cached_tokens": True}, "kind, prompt_tokens or cached_tokens"),
        (Exchange, {**EXCHANGE, "prompt": [1, -2]}, "non-negative integers"),
        (Branch, {"index": 0, "marker": [5], "text": 7, "finish_reason": None, "exchange": EXCHANGE}, "text"),
        (Branch, {"index": 0, "marker": "5", "text": "", "finish_reason": None, "exchange": EXCHANGE}, "integers"),
        (Exchange, {**EXCHANGE, "cached_tokens": 3}, "exceed prompt_tokens"),
        (Branch, {"index": 0, "marker": [9], "text": "", "finish_reason": None, "exchange": EXCHANGE}, "marker"),
        (ForkPlan, {**PLAN, "isolate": 0}, "isolate"),
        (ForkPlan, {**PLAN, "suffixes": []}, "at least one branch"),
        (ForkPlan, {**PLAN, "prefix": [], "primed": None}, "non-empty prefix"),
        (ForkPlan, {**PLAN, "suffixes": [[2], [2, 3]]}, "distinct tokens"),
        (ForkPlan, {**PLAN, "isolate": True}, "isolate=True"),
        (ForkPlan, {**PLAN, "primed": {**EXCHANGE, "kind": "prime"}}, "priming of this prefix"),
        (ForkPlan, {**PLAN, "sampling_params": {"stop": {1, 2}}}, "not JSON"),
    ],
)
def test_from_dict_refuses_what_to_dict_did_not_write(kind: Any, data: object, what: str) -> None:
    with pytest.raises(InputError, match=f"not the plain form of a {kind.__name__}: .*{what}"):
        kind.from_dict(data)
