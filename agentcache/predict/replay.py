"""Replay requests through a client-side cache model: the predicted cached tokens of each turn, and why.

One replay is one server: every session shares its cache, as sessions share a real server's. The live transport
and the offline explainer both run their turns through :meth:`Replay.diagnose_turn`, so they predict and
diagnose a turn the same way.
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentcache.cache.base import PrefixCacheModel
from agentcache.cache.blockhash import token_array
from agentcache.cache.hosted import MAX_BREAKPOINTS
from agentcache.cache.options import CacheOptions
from agentcache.canon import CanonicalPolicy, canonicalize
from agentcache.errors import RequestError
from agentcache.predict.diagnosis import Previous, diagnose
from agentcache.predict.diff import Divergence
from agentcache.predict.prompt import PromptTokenizer, Renderer, Segment
from agentcache.predict.served import Served
from agentcache.servers.prompt import ServerPrompt

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
        diagnosis = diagnose(previous, request, served, reported_cached, reported_prompt_tokens, minimum, worker, lost)
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
        )

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
        if self.canonical:
            with contextlib.suppress(RequestError):  # as the middleware would: send what it cannot canonicalize
                request = canonicalize(request, WHAT_IF_POLICY)
        segments, tokens, starts = self.prompt(request, session)
        self.clock = max(self.clock + 1.0 if ts is None else ts, self.clock)
        namespace = cache_namespace(request)
        model = self.model_of(worker)
        if self.server_prompt is not None:  # the server's own prompt: its chat template and tokenizer
            exact = token_array(self.server_prompt.tokens(request))
            cached = model.serve(exact, output, namespace, now=self.clock) if exact else 0
            served = Served(segments, tokens, starts, cached, len(exact), exact)
        else:
            cached = 0  # an empty prompt is never served: servers reject it
            if tokens:
                ends = [*starts[1:], len(tokens)]  # each segment ends where the next starts
                marks = [end for end, segment in zip(ends, segments, strict=True) if segment.breakpoint]
                marks = marks[-MAX_BREAKPOINTS:]  # the model takes at most the API's limit: the latest ones
                blocks = ends if marks else None  # no breakpoint: nothing is read or written
                cached = model.serve(tokens, (), namespace, now=self.clock, breakpoints=marks, blocks=blocks)
            served = Served(segments, tokens, starts, cached)
        self.last[session] = Previous(request, served, worker=worker)
        return served

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
