"""Model-judged ``evaluate(node)`` for the search drivers: the node's state, which the fork left cached, then a
question; so a judgement prefills little more than the question, and its request is accounted with the rest.

- :class:`ModelJudge` reads the first number of a short answer ("Rate this plan from 0 to 10:");
- :class:`ProbabilityJudge` reads the model's probability of a yes token against a no token, from one output
  position's logprobs, which is smoother than a parsed number and never fails to parse.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from agentcache.backends import AsyncSGLangClient, Generation
from agentcache.backends.call import is_token_ids
from agentcache.errors import BackendError, InputError
from agentcache.search.fork import State, exchange, fresh_salt
from agentcache.search.tree import Judgement, SearchNode

_NUMBER = re.compile(r"\d+(?:\.\d+)?")


class _Judge:
    """Sends ``node.state + question``; ``naive`` isolates each request like :class:`ForkProposer`'s naive mode."""

    def __init__(
        self, client: AsyncSGLangClient, question: Sequence[int], *, naive: bool, cache_salt: str | None
    ) -> None:
        if not question:
            raise InputError(f"{type(self).__name__} needs a non-empty question (token ids)")
        self.client = client
        self.question = tuple(question)
        self.naive = naive
        self.cache_salt = cache_salt

    async def ask(
        self, node: SearchNode, sampling_params: Mapping[str, Any], **options: Any
    ) -> tuple[State, Generation]:
        """The prompt sent for ``node`` and the server's answer."""
        prompt = node.state + self.question
        salt = fresh_salt(self.cache_salt) if self.naive else self.cache_salt
        answer = await self.client.generate(
            input_ids=prompt, sampling_params=sampling_params, cache_salt=salt, **options
        )
        return prompt, answer


class ModelJudge(_Judge):
    """The first number in the model's answer divided by ``scale`` (clamped to [0, 1]); 0 when it holds none."""

    def __init__(
        self,
        client: AsyncSGLangClient,
        question: Sequence[int],
        *,
        scale: float = 10.0,
        sampling_params: Mapping[str, Any] | None = None,
        naive: bool = False,
        cache_salt: str | None = None,
    ) -> None:
        super().__init__(client, question, naive=naive, cache_salt=cache_salt)
        if scale <= 0:
            raise InputError(f"ModelJudge needs a positive scale, got {scale}")
        self.scale = scale
        self.sampling_params = dict(sampling_params or {"max_new_tokens": 4, "temperature": 0})

    async def __call__(self, node: SearchNode) -> Judgement:
        prompt, answer = await self.ask(node, self.sampling_params)
        number = _NUMBER.search(answer.text)
        value = 0.0 if number is None else min(max(float(number.group()) / self.scale, 0.0), 1.0)
        return Judgement(value, exchange("judge", prompt, answer))


class ProbabilityJudge(_Judge):
    """P(yes) / (P(yes) + P(no)) for the model's next token after the question, from SGLang's
    ``token_ids_logprob``; with no ``no`` ids, P(yes) itself (its share of the whole vocabulary).

    ``yes`` and ``no`` are token ids, each a set of alternatives (``" Yes"``, ``"Yes"``, ``" yes"``...) whose
    probabilities add up. End the question where the answer's first token starts: after ``"Answer Yes or No:"``
    the answer token is ``" Yes"``, with its space.
    """

    def __init__(
        self,
        client: AsyncSGLangClient,
        question: Sequence[int],
        yes: Collection[int],
        no: Collection[int] = (),
        *,
        naive: bool = False,
        cache_salt: str | None = None,
    ) -> None:
        super().__init__(client, question, naive=naive, cache_salt=cache_salt)
        yes_ids, no_ids = list(yes), list(no)
        if not is_token_ids(yes_ids + no_ids):
            raise InputError(f"ProbabilityJudge's yes and no must be token ids, got yes={yes_ids!r}, no={no_ids!r}")
        if not yes_ids or set(yes_ids) & set(no_ids):
            raise InputError(
                f"ProbabilityJudge needs at least one yes id, and no id both yes and no; got yes={sorted(yes_ids)}, "
                f"no={sorted(no_ids)}"
            )
        self.yes = tuple(sorted(set(yes_ids)))
        self.no = tuple(sorted(set(no_ids)))

    async def __call__(self, node: SearchNode) -> Judgement:
        prompt, answer = await self.ask(
            node, {"max_new_tokens": 1, "temperature": 0}, token_ids_logprob=[*self.yes, *self.no]
        )
        logprobs = answer.token_logprobs[0] if answer.token_logprobs else {}
        missing = [token for token in (*self.yes, *self.no) if token not in logprobs]
        if missing:
            raise BackendError(
                f"SGLang returned no logprob for token ids {missing} (output_token_ids_logprobs; the answer finished "
                f"with {answer.finish_reason!r}); the server must support token_ids_logprob"
            )
        yes = _logsumexp([logprobs[token] for token in self.yes])
        judged = exchange("judge", prompt, answer)
        if not self.no:
            return Judgement(math.exp(yes), judged)
        no = _logsumexp([logprobs[token] for token in self.no])
        if yes == no == -math.inf:
            raise BackendError(f"the model gives neither yes {list(self.yes)} nor no {list(self.no)} any probability")
        return Judgement(math.exp(yes - _logsumexp([yes, no])), judged)  # P(yes) / (P(yes) + P(no)), in logs


def _logsumexp(values: Sequence[float]) -> float:
    """log(sum(exp(v))) without underflow: logprobs of rare tokens are far below exp's range."""
    top = max(values)
    if top == -math.inf:
        return top
    return top + math.log(sum(math.exp(v - top) for v in values))
