"""Model-judged evaluations on the real SGLang engine: each judgement reads the node's state from the cache the fork
left, and ProbabilityJudge's score is the server's own logprobs of the yes and no ids."""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Awaitable, Callable

import httpx
import pytest

from agentcache.backends import AsyncSGLangClient
from agentcache.errors import BackendError, InputError
from agentcache.search import MCTS, Evaluate, ForkProposer, ModelJudge, ProbabilityJudge, SearchNode, SearchTree
from agentcache.search.fork import branch_markers
from tests.conftest import EngineInfo
from tests.search import GREEDY, puzzle, run

MakeJudge = Callable[[AsyncSGLangClient, str], Awaitable[Evaluate]]


async def judged_search(engine: EngineInfo, make_judge: MakeJudge) -> SearchTree:
    """MCTS, branching 2 and depth 2, whose every child is scored by ``make_judge(client, salt)``."""
    async with AsyncSGLangClient(engine.url) as client:
        salt = f"judge-{uuid.uuid4().hex}"
        root = await client.tokenize(puzzle())
        proposer = ForkProposer(client, await branch_markers(client, 2), GREEDY, cache_salt=salt)
        tree: SearchTree = await MCTS(proposer, await make_judge(client, salt), branching=2, max_depth=2).run(root)
        return tree


def assert_judged_from_the_cached_state(tree: SearchTree, answer_tokens: int) -> None:
    judged = tree.nodes[1:]
    assert len(judged) == 2 + 4
    for node in judged:
        assert node.judge is not None and node.score is not None and 0.0 <= node.score <= 1.0
        assert node.judge.prompt[: len(node.state)] == node.state
        assert node.judge.cached_tokens == len(node.state) - 1  # all but the last output token, never run before
        assert len(node.judge.output) == answer_tokens
    assert sum(ex.kind == "judge" for ex in tree.exchanges) == len(judged)
    account = tree.account()
    re_primed = sum(1 for n in tree.nodes if n.primed is not None and n.parent is not None)
    assert account.server_prefill == account.lower_bound + re_primed  # the judge ran the state's last token already


def test_model_judge_scores_from_the_cached_state(sglang: EngineInfo) -> None:
    tokens = 4
    answer = {**GREEDY, "max_new_tokens": tokens}  # with ignore_eos: exactly this many, however the model would end

    async def judge(client: AsyncSGLangClient, salt: str) -> Evaluate:
        question = await client.tokenize("\nRate this plan from 0 to 10:")
        return ModelJudge(client, question, sampling_params=answer, cache_salt=salt)

    assert_judged_from_the_cached_state(run(judged_search(sglang, judge)), answer_tokens=tokens)


YES_NO = "\nIs this move legal? Answer Yes or No:"


async def yes_no_ids(client: AsyncSGLangClient) -> tuple[list[int], list[int]]:
    return await client.tokenize(" Yes"), await client.tokenize(" No")


async def logprobs_of(engine: EngineInfo, prompt: tuple[int, ...], ids: list[int]) -> dict[int, float]:
    """The server's logprobs of ``ids`` after ``prompt``, asked again under a fresh salt (prefilled whole)."""
    async with AsyncSGLangClient(engine.url) as client:
        answer = await client.generate(
            input_ids=prompt, sampling_params={"max_new_tokens": 1}, cache_salt=uuid.uuid4().hex, token_ids_logprob=ids
        )
        return answer.token_logprobs[0]


@pytest.mark.parametrize("with_no", [True, False], ids=["yes-vs-no", "yes-alone"])
def test_probability_judge_scores_the_servers_yes_probability(sglang: EngineInfo, with_no: bool) -> None:
    ids: dict[str, list[int]] = {}

    async def judge(client: AsyncSGLangClient, salt: str) -> Evaluate:
        ids["yes"], ids["no"] = await yes_no_ids(client)
        question = await client.tokenize(YES_NO)
        return ProbabilityJudge(client, question, ids["yes"], ids["no"] if with_no else (), cache_salt=salt)

    tree = run(judged_search(sglang, judge))
    assert_judged_from_the_cached_state(tree, answer_tokens=1)
    (yes,), (no,) = ids["yes"], ids["no"]
    for node in tree.nodes[1:]:
        assert node.judge is not None and node.score is not None
        logprobs = run(logprobs_of(sglang, node.judge.prompt, [yes, no]))
        p_yes, p_no = math.exp(logprobs[yes]), math.exp(logprobs[no])
        expected = p_yes / (p_yes + p_no) if with_no else p_yes
        assert node.score == pytest.approx(expected, rel=1e-3), node.id
    scores = {node.score for node in tree.nodes[1:]}
    assert len(scores) > 1  # the states differ, and so do their judgements


def test_probability_judge_adds_up_alternative_spellings(sglang: EngineInfo) -> None:
    async def both() -> tuple[float, float, dict[int, float], tuple[int, int, int]]:
        async with AsyncSGLangClient(sglang.url) as client:
            state = tuple(await client.tokenize(puzzle()))
            question = await client.tokenize(YES_NO)
            (yes,), (no,) = await yes_no_ids(client)
            (bare_yes,) = await client.tokenize("Yes")
            node = SearchNode(1, None, state, 1)
            one = await ProbabilityJudge(client, question, [yes], [no])(node)
            two = await ProbabilityJudge(client, question, [yes, bare_yes], [no])(node)
            logprobs = await logprobs_of(sglang, state + tuple(question), [yes, bare_yes, no])
            return one.value, two.value, logprobs, (yes, bare_yes, no)

    one, two, logprobs, (yes, bare_yes, no) = run(both())
    p = {token: math.exp(logprob) for token, logprob in logprobs.items()}
    assert two == pytest.approx((p[yes] + p[bare_yes]) / (p[yes] + p[bare_yes] + p[no]), rel=1e-3)
    assert two > one  # one more way to say yes


def judge_answering(meta: dict[str, object]) -> float:
    """Fault injection: ProbabilityJudge's score when the server answers with this ``meta_info``."""
    body = {"text": " Yes", "output_ids": [11377], "meta_info": {"prompt_tokens": 4, "cached_tokens": 3, **meta}}

    async def judge() -> float:
        transport = httpx.MockTransport(lambda request: httpx.Response(200, json=body))
        async with AsyncSGLangClient("http://engine", transport=transport) as client:
            judged = await ProbabilityJudge(client, [1, 2], [11377], [3004])(SearchNode(1, None, (5, 6), 1))
            return judged.value

    return asyncio.run(judge())


def test_probability_judge_names_a_server_without_token_logprobs() -> None:
    """A server that ignores token_ids_logprob (an older SGLang) answers without them, or with a null position."""
    for meta in ({}, {"output_token_ids_logprobs": [None]}):
        with pytest.raises(BackendError, match=r"no logprob for token ids \[11377, 3004\]"):
            judge_answering(meta)


def test_probability_judge_reads_a_null_logprob_as_impossible() -> None:
    """SGLang's JSON writes a -inf logprob as null: that answer has probability 0, and the other one wins."""
    assert judge_answering({"output_token_ids_logprobs": [[[None, 11377, None], [-2.0, 3004, None]]]}) == 0.0
    assert judge_answering({"output_token_ids_logprobs": [[[-2.0, 11377, None], [None, 3004, None]]]}) == 1.0
    with pytest.raises(BackendError, match="neither yes"):
        judge_answering({"output_token_ids_logprobs": [[[None, 11377, None], [None, 3004, None]]]})


def test_judges_refuse_bad_settings() -> None:
    client = AsyncSGLangClient("http://127.0.0.1:9")
    with pytest.raises(InputError, match="non-empty question"):
        ModelJudge(client, [])
    with pytest.raises(InputError, match="positive scale"):
        ModelJudge(client, [1], scale=0)
    with pytest.raises(InputError, match="non-empty question"):
        ProbabilityJudge(client, [], [1])
    with pytest.raises(InputError, match="at least one yes id"):
        ProbabilityJudge(client, [1], [])
    with pytest.raises(InputError, match="both yes and no"):
        ProbabilityJudge(client, [1], [5, 6], [6])
    with pytest.raises(InputError, match="must be token ids"):
        ProbabilityJudge(client, [1], [True], [6])
    with pytest.raises(InputError, match="must be token ids"):
        ProbabilityJudge(client, [1], [5], [-1])
