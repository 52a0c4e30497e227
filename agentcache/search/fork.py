"""Fork: run n continuations of one prompt prefix so that the server computes the prefix once and every branch
reuses it.

:func:`fork` works on SGLang's native ``/generate`` in token ids, where the guarantee is exact: the prefix is
primed into the radix cache first (``max_new_tokens=0``), then the n branches run concurrently and each reports
the whole prefix as cached. Branches are made distinct at temperature 0 by appending a short *branch marker* (a
few token ids, different in their first token) to the prefix; see :func:`branch_markers`. SGLang 0.5.23 honours
``sampling_params.sampling_seed`` only on a server started with ``--enable-deterministic-inference``, so seeds
cannot give reproducible distinct branches on an ordinary server; markers can. :func:`fork` is
:func:`prime_fork` then :func:`send_branch` for each branch; a framework that runs each branch as a task of its
own (a LangGraph ``Send``) calls the two itself.

:func:`fork_chat` is the same fan-out over ``/v1/chat/completions`` on vLLM, llama-server or SGLang, where there is
no prime endpoint and the server renders the prompt: the first branch is sent alone to warm the cache, then the
rest follow. Branches differ by their ``seed``. How much each later branch finds cached is up to the server
(vLLM: whole blocks; llama-server: only requests that land on the warm slot); docs/search.md has the measurements.

Every request is recorded as an :class:`Exchange`, which is what :mod:`agentcache.search.accounting` adds up.
Users import it as :mod:`agentcache.fork`, which re-exports the public names.
"""

from __future__ import annotations

import asyncio
import string
import uuid
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

import orjson

from agentcache.backends import AsyncOpenAICompatClient, AsyncSGLangClient, Generation
from agentcache.backends.call import is_token_ids
from agentcache.errors import InputError

T = TypeVar("T")

State = tuple[int, ...]
"""A search state: the token ids of a prompt prefix, exactly as the server's radix tree keys it."""

ExchangeKind = Literal["prime", "branch", "judge"]

DEFAULT_LABELS = tuple(f"{letter})" for letter in string.ascii_uppercase)
"""Branch marker texts: ``A)``, ``B)``, ... Each starts with its own token in o200k and most BPE vocabularies."""


@dataclass(frozen=True)
class Exchange:
    """One request the server answered, as prefill accounting needs it."""

    kind: ExchangeKind
    prompt: State
    output: State
    prompt_tokens: int
    """Prompt tokens as the server counted them (equal to ``len(prompt)`` on SGLang's ``/generate``)."""
    cached_tokens: int | None
    """Prompt tokens the server served from its cache; None when it did not say."""

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (lists, not tuples), for a checkpointer; :meth:`from_dict` reads it back."""
        return {
            "kind": self.kind,
            "prompt": list(self.prompt),
            "output": list(self.output),
            "prompt_tokens": self.prompt_tokens,
            "cached_tokens": self.cached_tokens,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Exchange:
        fields = _fields(data, "Exchange", ("kind", "prompt", "output", "prompt_tokens", "cached_tokens"))
        kind, prompt_tokens, cached = fields["kind"], fields["prompt_tokens"], fields["cached_tokens"]
        valid_cached = cached is None or _is_count(cached)
        if kind not in ("prime", "branch", "judge") or not _is_count(prompt_tokens) or not valid_cached:
            raise _not_plain("Exchange", "kind, prompt_tokens or cached_tokens out of range")
        if cached is not None and cached > prompt_tokens:
            raise _not_plain("Exchange", f"cached_tokens {cached} exceed prompt_tokens {prompt_tokens}")
        prompt, output = _state(fields["prompt"], "Exchange"), _state(fields["output"], "Exchange")
        return cls(kind, prompt, output, prompt_tokens, cached)

    @property
    def prefilled(self) -> int | None:
        """Prompt tokens the server computed: ``prompt_tokens - cached_tokens``; None when cache was not reported."""
        return None if self.cached_tokens is None else self.prompt_tokens - self.cached_tokens


def exchange(kind: ExchangeKind, prompt: Sequence[int], generation: Generation) -> Exchange:
    """The :class:`Exchange` of an SGLang ``/generate`` answer to ``prompt``."""
    return Exchange(
        kind, tuple(prompt), tuple(generation.output_ids), generation.prompt_tokens, generation.cached_tokens
    )


@dataclass(frozen=True)
class Branch:
    """One continuation of a fork: the prefix, its marker, and what the model wrote after them."""

    index: int
    marker: State
    text: str
    finish_reason: str | None
    exchange: Exchange

    @property
    def prompt(self) -> State:
        """What was sent: the prefix then the marker."""
        return self.exchange.prompt

    @property
    def output(self) -> State:
        return self.exchange.output

    @property
    def step(self) -> State:
        """What this branch adds to the prefix: marker then output."""
        return self.marker + self.output

    @property
    def state(self) -> State:
        """The prefix extended by this branch, the state a search continues from."""
        return self.prompt + self.output

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data, for a checkpointer or a ``Send`` payload; :meth:`from_dict` reads it back."""
        return {
            "index": self.index,
            "marker": list(self.marker),
            "text": self.text,
            "finish_reason": self.finish_reason,
            "exchange": self.exchange.to_dict(),
        }

    @classmethod
    def from_dict(cls, data: Any) -> Branch:
        fields = _fields(data, "Branch", ("index", "marker", "text", "finish_reason", "exchange"))
        index, text, reason = fields["index"], fields["text"], fields["finish_reason"]
        if not _is_count(index) or type(text) is not str or not (reason is None or type(reason) is str):
            raise _not_plain("Branch", "index, text or finish_reason of the wrong type")
        marker, sent = _state(fields["marker"], "Branch"), Exchange.from_dict(fields["exchange"])
        if sent.kind != "branch" or sent.prompt[len(sent.prompt) - len(marker) :] != marker:
            raise _not_plain("Branch", "its exchange is not a branch request ending in its marker")
        return cls(index, marker, text, reason, sent)


@dataclass(frozen=True)
class ForkResult:
    """What :func:`fork` did: the priming request (if any) and the branches in order."""

    prefix: State
    primed: Exchange | None
    branches: tuple[Branch, ...]

    @property
    def exchanges(self) -> tuple[Exchange, ...]:
        """Every request of the fork, priming first."""
        head = () if self.primed is None else (self.primed,)
        return head + tuple(branch.exchange for branch in self.branches)


async def gather_all(awaitables: Iterable[Awaitable[T]]) -> list[T]:
    """``asyncio.gather`` that cancels the remaining awaitables when one fails, so a failed fork leaves no request
    running behind the caller's back (Python 3.10 has no TaskGroup)."""
    tasks = [asyncio.ensure_future(a) for a in awaitables]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def branch_markers(client: AsyncSGLangClient, n: int, labels: Sequence[str] = DEFAULT_LABELS) -> list[State]:
    """The token ids of the first ``n`` labels, in the server's own tokenization, checked for use as markers."""
    if not 1 <= n <= len(labels):
        raise InputError(f"branch_markers() needs 1 <= n <= {len(labels)} (one label per branch), got n={n}")
    markers = [tuple(ids) for ids in await gather_all(client.tokenize(label) for label in labels[:n])]
    check_markers(markers, n)
    return markers


def check_markers(markers: Sequence[Sequence[int]], n: int) -> list[State]:
    """The first ``n`` markers, refused unless each is non-empty and each starts with a token of its own.

    Distinct first tokens keep the branches from sharing anything past the prefix, so each branch reports exactly
    the prefix as cached however the server interleaves them."""
    if len(markers) < n:
        raise InputError(f"fork() of {n} branches got {len(markers)} markers; pass one marker per branch")
    chosen = [tuple(marker) for marker in markers[:n]]
    firsts = [marker[0] for marker in chosen if marker]
    if len(firsts) < n or len(set(firsts)) < n:
        raise InputError(
            f"branch markers must be non-empty and start with distinct tokens, got {chosen}; choose labels that "
            "differ in their first token (A), B), ...), not ones sharing a prefix such as a newline"
        )
    return chosen


def fresh_salt(base: str | None) -> str:
    """A cache salt no other request has used, so the request shares nothing: the naive baseline's isolation."""
    return f"{base or 'isolated'}-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class ForkPlan:
    """A fork ready for its branches, which go all at once (:func:`fork`) or one task each (:func:`send_branch`,
    e.g. one LangGraph ``Send`` per branch). Its prefix is in the cache when it was primed (``primed``)."""

    prefix: State
    suffixes: tuple[State, ...]
    """Branch i's marker, appended to the prefix; ``()`` for every branch when the fork has no markers."""
    sampling_params: Mapping[str, Any]
    primed: Exchange | None
    isolate: bool
    cache_salt: str | None

    @property
    def n(self) -> int:
        return len(self.suffixes)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data, so a plan can travel in a LangGraph ``Send`` and sit in checkpointed state (tuples and
        dataclasses do not survive a checkpointer's round trip); :meth:`from_dict` reads it back."""
        return {
            "prefix": list(self.prefix),
            "suffixes": [list(suffix) for suffix in self.suffixes],
            "sampling_params": _plain_params(self.sampling_params, "ForkPlan"),
            "primed": None if self.primed is None else self.primed.to_dict(),
            "isolate": self.isolate,
            "cache_salt": self.cache_salt,
        }

    @classmethod
    def from_dict(cls, data: Any) -> ForkPlan:
        names = ("prefix", "suffixes", "sampling_params", "primed", "isolate", "cache_salt")
        fields = _fields(data, "ForkPlan", names)
        suffixes, params, salt = fields["suffixes"], fields["sampling_params"], fields["cache_salt"]
        if not isinstance(suffixes, list) or not isinstance(params, dict) or type(fields["isolate"]) is not bool:
            raise _not_plain("ForkPlan", "suffixes, sampling_params or isolate of the wrong type")
        if not (salt is None or type(salt) is str):
            raise _not_plain("ForkPlan", "cache_salt is neither null nor a string")
        prefix = _state(fields["prefix"], "ForkPlan")
        primed = None if fields["primed"] is None else Exchange.from_dict(fields["primed"])
        if primed is not None and (primed.kind != "prime" or primed.prompt != prefix):
            raise _not_plain("ForkPlan", "primed is not the priming of this prefix")
        markers = [_state(suffix, "ForkPlan") for suffix in suffixes]
        try:  # the checks prime_fork made on the plan it wrote
            checked = _check_fork(
                prefix, len(markers), markers if any(markers) else None, primed is not None, fields["isolate"]
            )
        except InputError as exc:
            raise _not_plain("ForkPlan", str(exc)) from None
        return cls(prefix, checked, _plain_params(params, "ForkPlan"), primed, fields["isolate"], salt)


async def prime_fork(
    client: AsyncSGLangClient,
    prefix: Sequence[int],
    n: int,
    sampling_params: Mapping[str, Any] | None = None,
    *,
    markers: Sequence[Sequence[int]] | None = None,
    prime: bool = True,
    isolate: bool = False,
    cache_salt: str | None = None,
) -> ForkPlan:
    """Check a fork's arguments and, with ``prime``, put ``prefix`` into the radix cache (see :func:`fork`)."""
    state = tuple(prefix)
    suffixes = _check_fork(state, n, markers, prime, isolate)
    primed = None
    if prime:
        primed = exchange("prime", state, await client.prime(state, cache_salt=cache_salt))
    return ForkPlan(state, suffixes, dict(sampling_params or {}), primed, isolate, cache_salt)


def _check_fork(
    prefix: State, n: int, markers: Sequence[Sequence[int]] | None, prime: bool, isolate: bool
) -> tuple[State, ...]:
    """The branches' suffixes, once the fork's arguments are checked: what :class:`ForkPlan` may hold."""
    if n < 1:
        raise InputError(f"fork() needs at least one branch, got n={n}")
    if not prefix:
        raise InputError("fork() needs a non-empty prefix; a search state always holds at least the root prompt")
    if isolate and prime:
        raise InputError(
            "fork(isolate=True) measures the unshared baseline; priming shares the prefix, pass prime=False"
        )
    return tuple(check_markers(markers, n)) if markers is not None else ((),) * n


async def send_branch(client: AsyncSGLangClient, plan: ForkPlan, index: int) -> Branch:
    """Run branch ``index`` of a primed fork: ``plan.prefix + plan.suffixes[index]``, continued by the model."""
    if not 0 <= index < plan.n:
        raise InputError(f"this fork has branches 0 to {plan.n - 1}, got branch {index}")
    marker = plan.suffixes[index]
    prompt = plan.prefix + marker
    salt = fresh_salt(plan.cache_salt) if plan.isolate else plan.cache_salt
    generation = await client.generate(input_ids=prompt, sampling_params=plan.sampling_params, cache_salt=salt)
    return Branch(index, marker, generation.text, generation.finish_reason, exchange("branch", prompt, generation))


async def fork(
    client: AsyncSGLangClient,
    prefix: Sequence[int],
    n: int,
    sampling_params: Mapping[str, Any] | None = None,
    *,
    markers: Sequence[Sequence[int]] | None = None,
    prime: bool = True,
    isolate: bool = False,
    cache_salt: str | None = None,
) -> ForkResult:
    """Run ``n`` continuations of ``prefix`` (token ids) concurrently on SGLang, computing the prefix once.

    With ``prime`` the prefix is put into the radix cache before the branches are sent, so every branch reports
    ``cached_tokens == len(prefix)`` (when its marker is new) instead of racing the others to prefill it. Branch
    i's prompt is ``prefix + markers[i]``; without ``markers`` all branches send the prefix alone and differ only
    if ``sampling_params`` sample. ``isolate`` sends every branch under a cache salt of its own and skips the
    priming: nothing is shared, which is the naive baseline accounting compares against.
    """
    plan = await prime_fork(
        client, prefix, n, sampling_params, markers=markers, prime=prime, isolate=isolate, cache_salt=cache_salt
    )
    branches = await gather_all(send_branch(client, plan, i) for i in range(plan.n))
    return ForkResult(plan.prefix, plan.primed, tuple(branches))


@dataclass(frozen=True)
class ChatBranch:
    """One continuation of a :func:`fork_chat`."""

    index: int
    seed: int | None
    text: str
    output: State | None
    """Generated ids when the body asked for them (see ``agentcache.backends.output_token_ids``)."""
    prompt_tokens: int | None
    cached_tokens: int | None

    @property
    def prefilled(self) -> int | None:
        if self.prompt_tokens is None or self.cached_tokens is None:
            return None
        return self.prompt_tokens - self.cached_tokens


@dataclass(frozen=True)
class ChatFork:
    """The branches of a :func:`fork_chat`, in order; branch 0 warmed the cache when ``warm`` was set."""

    branches: tuple[ChatBranch, ...]

    @property
    def prefilled(self) -> int | None:
        """Prompt tokens the server computed over every branch; None when one was not reported."""
        counts = [branch.prefilled for branch in self.branches]
        return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


async def fork_chat(
    client: AsyncOpenAICompatClient,
    body: Mapping[str, Any],
    n: int,
    *,
    seeds: Sequence[int] | None = None,
    warm: bool = True,
    concurrency: int | None = None,
) -> ChatFork:
    """Send the chat ``body`` ``n`` times, branch i with ``seed = seeds[i]``, reusing the server's prompt cache.

    OpenAI-compatible servers have no prime endpoint, so with ``warm`` branch 0 runs alone first and the others
    find its prompt cached, as far as the server shares: vLLM reuses whole KV blocks across concurrent requests;
    llama-server gives concurrent requests different slots, so only one lands on the warm slot unless
    ``concurrency=1`` sends them one at a time. Distinct branches need ``temperature > 0`` in ``body`` and seeds.
    """
    if n < 1:
        raise InputError(f"fork_chat() needs at least one branch, got n={n}")
    if seeds is not None and len(seeds) < n:
        raise InputError(f"fork_chat() of {n} branches got {len(seeds)} seeds; pass one seed per branch")
    if concurrency is not None and concurrency < 1:
        raise InputError(f"fork_chat() concurrency must be at least 1 (or None for all at once), got {concurrency}")
    limit = asyncio.Semaphore(concurrency or n)

    async def branch(index: int) -> ChatBranch:
        seed = None if seeds is None else seeds[index]
        request = dict(body) if seed is None else {**body, "seed": seed}
        async with limit:
            result = await client.chat(request)
        usage = result.usage
        return ChatBranch(
            index,
            seed,
            result.text,
            None if result.output_ids is None else tuple(result.output_ids),
            None if usage is None else usage.prompt_tokens,
            None if usage is None else usage.cached_tokens,
        )

    first = [await branch(0)] if warm else []
    rest = await gather_all(branch(i) for i in range(len(first), n))
    return ChatFork(tuple(first + rest))


def _fields(data: Any, kind: str, names: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(data, Mapping) or set(data) != set(names):
        got = sorted(map(repr, data)) if isinstance(data, Mapping) else type(data).__name__
        raise _not_plain(kind, f"expected the keys {list(names)}, got {got}")
    return dict(data)


def _plain_params(params: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """A deep copy of sampling parameters as JSON gives them back (tuples become lists), so a plan neither shares
    them with its caller nor changes in a checkpointer's round trip."""
    try:
        copy: dict[str, Any] = orjson.loads(orjson.dumps(dict(params)))
    except TypeError as exc:
        raise _not_plain(kind, f"sampling_params that are not JSON ({exc})") from None
    return copy


def _state(value: Any, kind: str) -> State:
    tokens = list(value) if isinstance(value, (list, tuple)) else None
    if not is_token_ids(tokens):
        raise _not_plain(kind, "a token list holds something other than non-negative integers")
    return tuple(tokens)


def _is_count(value: Any) -> bool:
    """A non-negative int (not a bool)."""
    return type(value) is int and value >= 0


def _not_plain(kind: str, what: str) -> InputError:
    return InputError(f"this is not the plain form of a {kind}: {what}; pass what {kind}.to_dict() returned")
