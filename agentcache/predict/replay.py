"""Replay requests through a client-side cache model: the predicted cached tokens of each turn, and why.

One replay is one server: every session shares its cache, as sessions share a real server's. The live transport
and the offline explainer both run their turns through :meth:`Replay.diagnose_turn`, so they predict and
diagnose a turn the same way.
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from agentcache.cache.base import PrefixCacheModel, ServerEvictions
from agentcache.cache.blockhash import BlockHashCache, token_array
from agentcache.cache.hosted import AnthropicPromptCache, HostedPromptCache, OpenAIPromptCache, lookback_positions
from agentcache.cache.options import CacheOptions
from agentcache.cache.radix import RadixCache
from agentcache.cache.rules import MAX_BREAKPOINTS
from agentcache.canon import CanonicalPolicy, canonicalize
from agentcache.errors import InputError, RequestError, TokenizerError
from agentcache.predict import causes
from agentcache.predict.diagnosis import Diagnosis, Previous, diagnose
from agentcache.predict.diff import Divergence
from agentcache.predict.prompt import PromptTokenizer, Renderer, Segment
from agentcache.predict.served import Served
from agentcache.predict.template_drift import template_drift
from agentcache.servers.kv_events import Held
from agentcache.servers.prompt import ServerPrompt
from agentcache.servers.template import fixed_clock

#: The what-if of "canonicalized": the default policy plus moving volatile lines out of the system prompt.
WHAT_IF_POLICY = CanonicalPolicy(relocate_volatile=True)


def cache_namespace(request: dict[str, Any]) -> tuple[str, str]:
    """What separates caches: KV computed by one model never serves another, and a ``cache_salt`` (SGLang,
    vLLM) or ``prompt_cache_key`` (OpenAI routing) keeps tenants apart."""
    salt = request.get("cache_salt") or request.get("prompt_cache_key") or ""
    return str(request.get("model", "")), str(salt)


@dataclass(frozen=True)
class Prediction:
    """One turn as the model predicts it, beside what the server reported, and the diagnosis of the difference
    from the session's previous turn. ``predicted_*`` counts are the model's, ``reported_*`` the server's."""

    predicted_prompt_tokens: int
    """Prompt tokens as the modelled server counts them (exactly its own when ``exact``)."""
    predicted_cached: int
    reported_prompt_tokens: int | None
    reported_cached: int | None
    exact: bool
    """Whether the prediction used the server's own chat template and tokenizer."""
    cause: str
    detail: str
    divergence: Divergence | None
    divergence_token: int | None
    wasted_tokens: int
    predicted_written: int = 0
    """Cache writes the hosted API would bill (0 for the engines)."""
    predicted_cost: float | None = None
    """The prompt's price in uncached-input-token equivalents (hosted APIs only)."""


def breakpoints(request: dict[str, Any], segments: list[Segment], ends: list[int], model: object) -> list[int]:
    """Where a request's breakpoints end, as the hosted API places them: the marked blocks, plus Anthropic's
    automatic one (top-level ``cache_control``) or OpenAI's implicit one (end of the latest non-assistant message,
    GPT-5.6+, unless ``prompt_cache_options.mode`` is ``explicit``). At most the API's limit: the implicit or
    automatic one and the latest marked ones."""
    marks = [end for end, segment in zip(ends, segments, strict=True) if segment.breakpoint]
    rule = model.rule if isinstance(model, HostedPromptCache) else None
    extra: int | None = None
    if rule is not None and rule.provider == "anthropic" and isinstance(request.get("cache_control"), dict):
        extra = ends[-1]  # automatic caching: the last cacheable block
    elif rule is not None and rule.implicit == "latest_message":
        options = request.get("prompt_cache_options")
        if not (isinstance(options, dict) and options.get("mode") == "explicit"):
            eligible = [end for end, s in zip(ends, segments, strict=True) if s.part == "messages" and _asks(s.value)]
            extra = eligible[-1] if eligible else None
    if extra is None:
        return marks[-MAX_BREAKPOINTS:]  # the model takes at most the API's limit: the latest ones
    return sorted({*[mark for mark in marks if mark != extra][-(MAX_BREAKPOINTS - 1) :], extra})


def _asks(message: Any) -> bool:
    """Whether a message can carry OpenAI's implicit breakpoint: any but the assistant's own output."""
    return isinstance(message, dict) and message.get("role") != "assistant"


def _hold(model: PrefixCacheModel, tokens: Sequence[int], held: Held, namespace: Hashable) -> None:
    """Bring the model's hold on ``tokens``' path to what the server's KV events say it held when it matched them.
    What the server held and the model lacks is added: under concurrency the model learns a request's tokens when
    its turn is recorded, in the order responses ended, while the server stored them when it prefilled the request,
    and a request that ended later may already have matched them. What the events know the server no longer held
    is dropped. A path that runs into blocks no event named is left to the model. Both engines' models do this
    (SGLang's radix tree, vLLM's block hashes), in the whole blocks the events name."""
    if not isinstance(model, ServerEvictions):
        return
    has = model.peek(tokens, namespace)
    if has < held.tokens:
        model.insert(tokens[: held.tokens], namespace)
    elif has > held.tokens and held.known:
        model.drop(tokens, held.tokens, namespace)


class Replay:
    """A cache model plus the tokenizer that turns requests into its tokens.

    The server's own prompt (``server_prompt``, or loaded from ``options.model_dir`` for the engines) makes the
    predictions count its tokens exactly; without it they count agentcache's rendering. Behind a gateway, each
    worker has a model of its own (``worker=`` names it), while a session's drift is still diagnosed against its
    previous turn wherever that ran."""

    def __init__(
        self,
        options: CacheOptions,
        prompts: PromptTokenizer,
        canonical: bool = False,
        renderer: Renderer | None = None,
        server_prompt: ServerPrompt | None = None,
    ) -> None:
        self.options = options
        self.model = options.build()
        self.workers: dict[str, PrefixCacheModel] = {}
        """The model of each worker of a cluster, by the worker's name (the single server's is ``model``)."""
        self.lost: set[str] = set()
        """Workers that went away: a session's next turn elsewhere is ``worker_lost``."""
        self.before_serve: Callable[[Sequence[int]], Held | None] | None = None
        """Called with a request's prompt in the server's own tokens just before the model serves it: the KV events
        drop what the server evicted before matching it, and say what it held of the prompt then, which the
        model's hold on that path is brought to (:class:`~agentcache.transport.predictor.Predictor`)."""
        self.server_evicted: dict[str | None, int] = {}
        """Tokens each server (worker, or None for the single server) said it evicted, which the model dropped."""
        if server_prompt is None and options.model_dir is not None and options.renders_template:
            server_prompt = ServerPrompt.from_pretrained(options.model_dir, options.kind)
        self.server_prompt = server_prompt
        self.prompts = prompts
        self.renderer = renderer or Renderer()
        self.canonical = canonical
        self.clock = 0.0
        self.last: dict[str | None, Previous] = {}
        """The last turn of each session: the next one is tokenized from where it differs, and compared with it."""

    def diagnose_turn(
        self,
        request: dict[str, Any],
        ts: float | None = None,
        session: str | None = None,
        output: Sequence[int] = (),
        *,
        reported_prompt_tokens: int | None = None,
        reported_cached: int | None = None,
        relocated: str | None = None,
        worker: str | None = None,
    ) -> Prediction:
        """Serve one turn and diagnose it against the session's previous turn and the server's report.

        ``relocated`` is the JSON path of a message canonicalization appended to this request to hold its
        volatile lines: a change there on the next turn is a volatile value, not an edit."""
        previous = self.last.get(session)
        served = self.serve(request, ts, session, output, worker)
        if relocated is not None:
            self.last[session] = replace(self.last[session], relocated=relocated)
        minimum = self.model.minimum_tokens()
        lost = frozenset(self.lost)
        evicted = self.server_evicted.get(worker, 0)
        since = previous is not None and previous.worker == worker and evicted > previous.server_evicted
        diagnosis = diagnose(
            previous, request, served, reported_cached, reported_prompt_tokens, minimum, worker, lost, since
        )
        if diagnosis.cause == causes.NONE and previous is not None:
            diagnosis = self._template_made(previous, request, served, self.last[session].rendered_at) or diagnosis
        return Prediction(
            predicted_prompt_tokens=served.prompt_tokens,
            predicted_cached=served.cached,
            reported_prompt_tokens=reported_prompt_tokens,
            reported_cached=reported_cached,
            exact=served.exact is not None,
            cause=diagnosis.cause,
            detail=diagnosis.detail,
            divergence=diagnosis.divergence,
            divergence_token=diagnosis.divergence_token,
            wasted_tokens=diagnosis.wasted_tokens,
            predicted_written=served.written,
            predicted_cost=served.cost,
        )

    def _template_made(
        self, previous: Previous, request: dict[str, Any], served: Served, at: datetime | None
    ) -> Diagnosis | None:
        """The diagnosis of a turn that extends the previous request but whose prompt, rendered by the server's
        template, does not extend the previous prompt: the template rewrote the history (:mod:`.template_drift`)."""
        before, after = previous.served.exact, served.exact
        if self.server_prompt is None or before is None or after is None:
            return None
        times = None if previous.rendered_at is None or at is None else (previous.rendered_at, at)
        with contextlib.suppress(TokenizerError):  # a varied rendering the template refuses tells nothing
            drift = template_drift(self.server_prompt, previous.request, request, times, before, after)
            if drift is not None:
                return Diagnosis(drift.cause, drift.detail, None, drift.token, drift.lost)
        return None

    def serve(
        self,
        request: dict[str, Any],
        ts: float | None = None,
        session: str | None = None,
        output: Sequence[int] = (),
        worker: str | None = None,
    ) -> Served:
        """Serve one request of ``session`` (on ``worker`` of a cluster). Without a timestamp, requests are taken to
        come one second apart.

        ``output``, the token ids the server generated for the request, is cached after the prompt as the server
        caches it; it counts only with the server's own prompt, whose tokens are the server's."""
        request = self._as_sent(request)
        segments, tokens, starts = self.prompt(request, session)
        self.clock = max(self.clock + 1.0 if ts is None else ts, self.clock)
        namespace = cache_namespace(request)
        model = self.model_of(worker)
        rendered_at = None if ts is None else datetime.fromtimestamp(ts)
        if self.server_prompt is not None:  # the server's own prompt: its chat template and tokenizer
            exact = self._server_tokens(self.server_prompt, request, rendered_at)
            if self.before_serve is not None:
                held = self.before_serve(exact)
                model = self.model_of(worker)  # a cleared server's model is a new one
                if held is not None:
                    _hold(model, exact, held, namespace)
            cached = model.serve(exact, output, namespace, now=self.clock) if exact else 0
            served = Served(segments, tokens, starts, cached, len(exact), exact)
        elif not tokens:  # an empty prompt is never served: servers reject it
            served = Served(segments, tokens, starts, 0)
        else:
            ends = [*starts[1:], len(tokens)]  # each segment ends where the next starts
            marks = breakpoints(request, segments, ends, model)
            blocks = ends if marks else None  # no breakpoint: nothing is read or written
            if isinstance(model, (AnthropicPromptCache, OpenAIPromptCache)):
                usage = (
                    model.serve_usage(
                        tokens,
                        (),
                        namespace,
                        now=self.clock,
                        breakpoints=marks,
                        blocks=blocks,
                        positions=lookback_positions([s.value for s in segments]) if blocks else None,
                    )
                    if isinstance(model, AnthropicPromptCache)
                    else model.serve_usage(tokens, namespace, now=self.clock, breakpoints=marks)
                )
                cost = model.rule.turn_cost(len(tokens), usage.cached, usage.written)
                served = Served(segments, tokens, starts, usage.cached, written=usage.written, cost=cost)
            else:
                cached = model.serve(tokens, (), namespace, now=self.clock, breakpoints=marks, blocks=blocks)
                served = Served(segments, tokens, starts, cached)
        evicted = self.server_evicted.get(worker, 0)
        self.last[session] = Previous(request, served, worker=worker, rendered_at=rendered_at, server_evicted=evicted)
        return served

    def _as_sent(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request as this replay sends it: canonicalized for the what-if, unless it cannot be (as the
        middleware would, it then goes as it is)."""
        if self.canonical:
            with contextlib.suppress(RequestError):
                return canonicalize(request, WHAT_IF_POLICY)
        return request

    @staticmethod
    def _server_tokens(prompt: ServerPrompt, request: dict[str, Any], rendered_at: datetime | None) -> array[int]:
        """The request's prompt in the server's own tokens, rendered as the server rendered it at that time."""
        with fixed_clock(rendered_at):
            return token_array(prompt.tokens(request))

    def held(
        self, request: dict[str, Any], session: str | None, workers: Sequence[str], ts: float | None = None
    ) -> tuple[dict[str, int], int]:
        """Of ``request``'s prompt, the tokens each of ``workers``' models holds now, and the prompt's length,
        looking only: what a cache-aware router asks of every worker before it sends the request to one. The
        prompt is rendered once for all of them. Engine models only (SGLang's radix tree, vLLM's blocks), which is
        what a gateway fronts."""
        models: dict[str, RadixCache | BlockHashCache] = {}
        for worker in workers:
            model = self.model_of(worker)
            if not isinstance(model, (RadixCache, BlockHashCache)):
                raise InputError(f"routing over workers models SGLang and vLLM workers, not {self.options.kind}")
            models[worker] = model
        request = self._as_sent(request)
        if self.server_prompt is not None:
            rendered_at = None if ts is None else datetime.fromtimestamp(ts)
            tokens: Sequence[int] = self._server_tokens(self.server_prompt, request, rendered_at)
        else:
            tokens = self.prompt(request, session)[1]
        namespace = cache_namespace(request)
        return {worker: model.peek(tokens, namespace) for worker, model in models.items()}, len(tokens)

    def model_of(self, worker: str | None) -> PrefixCacheModel:
        """The model of ``worker`` (a new, empty one on first sight), or of the single server for None."""
        if worker is None:
            return self.model
        if worker not in self.workers:
            self.workers[worker] = self.options.build()
        return self.workers[worker]

    def previous_worker(self, session: str | None) -> str | None:
        """The worker that served the session's last turn (None: none yet, or a single server)."""
        last = self.last.get(session)
        return None if last is None else last.worker

    def server_removed(self, worker: str | None, path: Sequence[int], start: int, salt: str = "") -> int:
        """The server (``worker`` of a cluster, or the single server) evicted ``path`` from token ``start`` on (its
        KV events say so, :mod:`agentcache.servers.kv_events`): drop it from the model, in every namespace of that
        ``cache_salt``; an empty ``path`` is the whole cache. Returns the tokens the model dropped. Counts only on
        a model that takes evictions (SGLang's, vLLM's) of the server's own tokens, which is what the events name."""
        model = self.model_of(worker)
        if not isinstance(model, ServerEvictions):
            return 0
        if not path:  # everything went: a worker's next turn builds it an empty model (model_of)
            dropped = model.stats()["stored_tokens"]
            if worker is None:
                self.model = self.options.build()
            else:
                del self.workers[worker]
        else:
            dropped = sum(
                model.drop(path, start, namespace)
                for namespace in model.namespaces()
                if not isinstance(namespace, tuple) or namespace[-1:] == (salt,)
            )
        self.server_evicted[worker] = self.server_evicted.get(worker, 0) + dropped
        return dropped

    def worker_lost(self, worker: str) -> None:
        """``worker`` went away: its cache with it. Should it come back, it starts from an empty model."""
        self.lost.add(worker)
        self.workers.pop(worker, None)

    def prompt(
        self, request: dict[str, Any], session: str | None = None
    ) -> tuple[list[Segment], array[int], list[int]]:
        """The request's segments, tokens and segment starts, tokenized from where it differs from the session's
        last request. Does not serve it: callers that only need the drift (not the prediction) stop here."""
        segments = self.renderer.render(request)
        last = self.last.get(session)
        before = None if last is None else (last.served.segments, last.served.tokens, last.served.starts)
        tokens, starts = self.prompts.prompt(segments, before)
        return segments, tokens, starts
