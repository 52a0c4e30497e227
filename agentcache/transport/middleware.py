"""The middleware the transports and integrations are built on: begin a call, wrap its response, record its turn.

A request is handled when it is a POST whose path ends in ``/chat/completions`` or ``/v1/messages``. Its body is
canonicalized unless that is switched off or impossible; then it is sent. Anything the middleware cannot handle
(a body that is not JSON, not a chat request, that canonicalization refuses, or that repeats a key or holds a
number its parse would change) is sent byte-identical, and the ledger says why. The response reaches the caller
unchanged: the tap only reads it on the way.

The hook API, which the httpx transports and the CrewAI interceptor use and nothing else is needed for:

- :meth:`CacheMiddleware.begin` takes the request (body read), returns a :class:`Call` whose ``request`` is what
  to send;
- :meth:`CacheMiddleware.wrap` (:meth:`~CacheMiddleware.wrap_async` for an async client) takes the response and
  returns it with its body tapped: the turn is recorded when the body is done (at once for a body already read);
- :meth:`CacheMiddleware.fail` records a call that got no response;
- :class:`TurnListener` objects hear each call begin and each turn recorded (the trace recorder and the
  OpenTelemetry spans are listeners).

A turn's response is read, and the turn predicted and recorded, after the response has reached the caller, on
agentcache's background thread (:mod:`agentcache.transport.background`), the prediction itself in agentcache's
prediction process unless ``predict_in="thread"`` (:mod:`agentcache.transport.process`): reading the ledger or a
scope's turns waits for the turns still being recorded, and :func:`~agentcache.transport.background.settle` waits
for all.

Predictions run on the client-side model of the server (:class:`~agentcache.servers.ServerProfile`): with the
model folder the server loads (``model_dir``), the prompt is rendered with the server's own template and
tokenizer, so predicted and reported counts compare token for token; without it, agentcache's generic rendering
and o200k_base give an estimate (the only option for hosted APIs).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

import httpx
import orjson

from agentcache.breakpoints import Placements, Shape, place
from agentcache.cache.options import CacheOptions
from agentcache.cache.rules import Provider, lookup
from agentcache.canon import CanonicalPolicy, canonicalizer
from agentcache.canon.jsonvalue import sourced_json
from agentcache.canon.lossless import check_parse
from agentcache.canon.request import TOOL_SET
from agentcache.errors import AgentCacheError, InputError, RequestError
from agentcache.predict.provider import ANTHROPIC_BETA
from agentcache.predict.replay import Prediction
from agentcache.redact import CREDENTIAL, names_credential
from agentcache.servers import ServerProfile, ServerPrompt, get_profile
from agentcache.servers.kv_events import PUBLISHERS
from agentcache.tokens import Tokenizer, get_tokenizer
from agentcache.transport.background import defer
from agentcache.transport.bodies import ToolListParses
from agentcache.transport.call import Call, TurnListener
from agentcache.transport.cluster import Cluster
from agentcache.transport.ledger import Ledger, Turn
from agentcache.transport.otel import SpanListener
from agentcache.transport.placement import place_volatile
from agentcache.transport.predictor import PredictJob, Predictor, PredictorSpec, prompt_source
from agentcache.transport.process import PredictIn, Predictions
from agentcache.transport.recorder import TraceRecorder
from agentcache.transport.session import SESSION_HEADER, current_scope, session_of
from agentcache.transport.sticky import RelocationMemory
from agentcache.transport.tap import AsyncTappedStream, ResponseTap, TappedStream, TapResult

GATEWAY_LOST_WORKER = (502, 503, 504)
"""Statuses a gateway answers when the worker it picked did not: that worker, and its cache, went away."""
CHAT_PATHS = ("/chat/completions", "/v1/messages")
"""Path endings of OpenAI chat completions and Anthropic Messages (not ``/threads/{id}/messages``)."""


class CacheSettings(TypedDict, total=False):
    """The options of :class:`CacheMiddleware`, which every entry point built on it takes as keywords (the
    transports, the CrewAI interceptor, the LangGraph wraps): typed, so a misspelt option fails type checking."""

    server: ServerProfile | str
    model_dir: str | Path | None
    prompt: ServerPrompt | None
    canonicalize: bool
    policy: CanonicalPolicy | None
    cache: CacheOptions | None
    ledger: Ledger | None
    recorder: TraceRecorder | None
    listeners: Sequence[TurnListener]
    session_header: str
    ask_output_ids: bool
    tokenizer: str | Tokenizer
    telemetry: bool
    tracer_provider: Any
    cluster: Cluster | None
    predict_in: PredictIn
    diagnostics: bool
    breakpoints: bool
    kv_events: str | Mapping[str, str] | None


class CacheMiddleware:
    """Canonicalizes chat requests, and records each turn with its server-reported and predicted cache hits.

    ``server`` picks the client-side model (``sglang``, ``vllm``, ``llama.cpp``, ``openai``, ``anthropic`` or a
    :class:`ServerProfile`); ``cache`` overrides its cache options (e.g. vLLM's ``block_size``). ``model_dir``
    is the model folder the server loads, for exact predictions. ``ask_output_ids`` adds the server's own
    request field that makes it return the generated token ids (non-streamed requests only), so the model
    caches exactly what the server caches; the response then carries that extra field. ``recorder`` (a
    :class:`~agentcache.transport.recorder.TraceRecorder`) and ``listeners`` hear every turn. With OpenTelemetry
    installed, each call is a span (``telemetry=False`` turns them off; ``tracer_provider`` overrides the global
    provider): see :mod:`agentcache.transport.otel`. ``predict_in`` says where turns are predicted: in agentcache's
    prediction process (``"process"``, the default: the caller's process keeps its core) or on the background
    thread of this one (``"thread"``); see :mod:`agentcache.transport.process` for when a process is not used.
    ``cluster`` (a :class:`~agentcache.transport.cluster.Cluster`) says the server is a gateway in front of
    several workers: each worker gets a model of its own, and each request a routing key header (see
    :mod:`agentcache.transport.cluster`).

    ``diagnostics=True`` asks the provider for its own cache-miss diagnosis: each canonicalized Anthropic Messages
    request gets ``diagnostics.previous_message_id`` (the session's previous response id, null on its first turn)
    and the ``anthropic-beta: cache-diagnosis-2026-04-07`` header. Whatever diagnosis a response carries (asked for
    here or by the caller) is recorded on the turn beside agentcache's cause: :mod:`agentcache.predict.provider`.

    ``kv_events`` (SGLang) is where the server publishes its KV cache events, ``tcp://host:port``, or for a
    cluster a mapping from each worker, as the gateway names it, to its endpoint: that server's model then takes
    its evictions from the server instead of simulating them, and a turn that lost part of its prefix to them is
    ``evicted`` (see :mod:`agentcache.servers.kv_events`). Without it, evictions are the model's own simulation
    (``cache.capacity``).

    ``breakpoints=True`` places cache breakpoints on each canonicalized request (:func:`agentcache.breakpoints.place`,
    given the session's previous request): Anthropic ``cache_control`` markers on Messages requests, OpenAI
    ``prompt_cache_breakpoint`` blocks on chat requests of a listed model that takes them (GPT-5.6+). The caller's
    own markers count against the API's 4. What was placed, and what was not and why, is the turn's
    ``breakpoints``; a body the placement cannot handle is sent as canonicalized, with the reason there.
    """

    def __init__(
        self,
        *,
        server: ServerProfile | str = "sglang",
        model_dir: str | Path | None = None,
        prompt: ServerPrompt | None = None,
        canonicalize: bool = True,
        policy: CanonicalPolicy | None = None,
        cache: CacheOptions | None = None,
        ledger: Ledger | None = None,
        recorder: TraceRecorder | None = None,
        listeners: Sequence[TurnListener] = (),
        session_header: str = SESSION_HEADER,
        ask_output_ids: bool = False,
        tokenizer: str | Tokenizer = "o200k_base",
        telemetry: bool = True,
        tracer_provider: Any = None,
        predict_in: PredictIn = "process",
        diagnostics: bool = False,
        cluster: Cluster | None = None,
        breakpoints: bool = False,
        kv_events: str | Mapping[str, str] | None = None,
    ) -> None:
        self.profile = get_profile(server)
        self.cluster = cluster
        self.cache_options = options = cache or self.profile.cache
        source = None if prompt is not None else prompt_source(model_dir, self.profile, options)
        events = {"": kv_events} if isinstance(kv_events, str) else dict(kv_events or {})
        if events and options.kind not in PUBLISHERS:
            raise InputError(f"kv_events are read for SGLang and vLLM servers; this middleware models {options.kind}")
        if events and source is None and prompt is None:
            raise InputError("kv_events name the server's own tokens: give model_dir (the folder the server loads)")
        if events:  # the server says what it evicted: the model simulates no pool of its own
            self.cache_options = options = dataclasses.replace(options, capacity=None)
        retypes = cluster is not None and cluster.retypes
        spec = None
        if isinstance(tokenizer, str) and prompt is None:
            prompt_dir, prompt_server = source or (None, self.profile)
            spec = PredictorSpec(options, tokenizer, prompt_dir, prompt_server, tuple(events.items()), retypes)
        if source is not None:
            prompt = ServerPrompt.from_pretrained(*source)
        if prompt is not None and options.kind == "anthropic":
            raise InputError("an Anthropic server has no local chat template: leave model_dir and prompt unset for it")
        self.canonicalize = canonicalize
        self.policy = policy or CanonicalPolicy()
        self._canonicalizer = canonicalizer(self.policy)
        self._relocations = RelocationMemory() if self.policy.relocate_volatile else None
        """Where each session's earlier turns had their volatile lines relocated: later turns keep them there."""
        self._bodies = ToolListParses()
        self.ledger = ledger or Ledger()
        self.session_header = session_header
        self.ask_output_ids = ask_output_ids
        self.listeners: list[TurnListener] = [*listeners]
        if recorder is not None:
            self.listeners.append(recorder)
        if telemetry:
            self.listeners.append(SpanListener(tracer_provider, self.profile.name))
        encoder = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
        self.prompt = prompt
        """The server's own prompt, given or from ``model_dir`` (here or in ``cache``): predictions are exact."""
        self.tokenizer = encoder
        self.predictions = Predictions(
            spec, lambda: Predictor(options, encoder, self.prompt, events, retypes), predict_in
        )
        """Where the turns are predicted (:attr:`~Predictions.where`), and why not in a process when asked to."""
        if events:  # subscribed before the first request, so its events are seen
            self.predictions.prepare()
        self.diagnostics = diagnostics
        self._previous_ids: dict[str, str] = {}
        """The last response id of each session, which its next diagnostics request names."""
        self.breakpoints = breakpoints
        self._shapes: dict[str, Shape] = {}
        """The shape of each session's last placed request, the ``previous`` of its next placement."""
        self._lock = threading.Lock()
        self._workers: dict[str, str] = {}
        """The cluster's worker each session's last predicted turn landed on."""
        self._lost: set[str] = set()
        """The cluster's workers known to have gone away."""
        self._newly_lost: list[str] = []
        """Workers found gone since the last prediction job, which the next one carries to the predictor."""
        self._ended: deque[_Ended] = deque()
        """The calls that ended and are not predicted yet, in the order they ended."""

    def add_listener(self, listener: TurnListener) -> None:
        self.listeners.append(listener)

    def handles(self, request: httpx.Request) -> bool:
        return request.method == "POST" and request.url.path.rstrip("/").endswith(CHAT_PATHS)

    def begin(self, request: httpx.Request) -> Call:
        """Start a handled call: the body (read already) is canonicalized when it can be, and the call's
        ``request`` is what to send (a new request only when the body changed). Only bytes outlive this method
        (see :class:`Call`): every dict it parses is garbage when it returns."""
        body = request.content
        started = time.time()
        try:
            parsed, checked, tools_json = self._bodies.loads(body)
        except orjson.JSONDecodeError as exc:
            who = session_of(request.headers, {}, self.session_header)
            return self._call(request, request, who, None, f"body is not JSON ({exc})", started)
        if not isinstance(parsed, dict) or not isinstance(parsed.get("messages"), list):
            who = session_of(request.headers, {}, self.session_header)
            return self._call(request, request, who, None, "not a chat request (no messages array)", started)
        who = session_of(request.headers, parsed, self.session_header)
        if not self.canonicalize:
            return self._call(request, request, who, parsed, "canonicalization switched off", started)
        try:
            if not checked:
                check_parse(body, parsed)  # a key the parse dropped, or a number it changed, is never sent so
            session = who[0]
            canonical, sources = self._canonicalizer.build(parsed, tools_json, session)
            placement = place_volatile(self.prompt, self._relocations, session, canonical, parsed)
            if placement.refused is not None:
                why = f"not canonicalized: {placement.refused}"
                return self._call(request, request, who, parsed, why, started)
            sent = placement.body
            account: Placements | None = None
            if self.breakpoints:
                sent, account = self._place(request, session, sent)
            if self.ask_output_ids and not sent.get("stream"):
                sent = {**sent, **self.profile.output_ids_request}
            headers: dict[str, str] = {}
            if self.diagnostics and request.url.path.rstrip("/").endswith("/v1/messages"):
                sent, headers = self._ask_diagnosis(request, session, sent)
            # canonical_json's bytes without its check: a parsed body holds no NaN for a null to hide, and the
            # check walks the whole body in Python whenever it holds a null (a tool call's "content": null). The
            # canonical body as built takes its tools' JSON as kept with their memo entry.
            if sent is canonical:
                content = sourced_json(sent, sources, TOOL_SET)
            else:
                content = orjson.dumps(sent, option=orjson.OPT_SORT_KEYS)
        except AgentCacheError as exc:
            return self._call(request, request, who, parsed, f"not canonicalized: {_refusal(exc)}", started)
        outgoing = _with_body(request, content, headers)
        return self._call(request, outgoing, who, parsed, None, started, placement.relocated_path, account)

    def _place(self, request: httpx.Request, session: str, sent: dict[str, Any]) -> tuple[dict[str, Any], Placements]:
        """The canonical body with breakpoints placed for the session, and the account of them; when placement
        cannot handle the body, the body as it was and the account says why."""
        provider: Provider = "anthropic" if request.url.path.rstrip("/").endswith("/v1/messages") else "openai"
        model = sent.get("model")
        if provider == "openai" and (not isinstance(model, str) or lookup("openai", model) is None):
            why = f"no OpenAI caching rule for model {model!r}: breakpoints are placed only for a listed model"
            return sent, Placements(refused=why)
        with self._lock:
            previous = self._shapes.get(session)
        try:
            plan = place(sent, provider, previous=previous, tokenizer=self.tokenizer)
        except Exception as exc:  # an optimisation must never cost the request: send the canonical body
            return sent, Placements(refused=f"placement failed ({type(exc).__name__}: {exc}); sent as canonicalized")
        if plan.shape is not None:
            with self._lock:
                self._shapes[session] = plan.shape
        return plan.request, plan.account()

    def _ask_diagnosis(
        self, request: httpx.Request, session: str, sent: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The body with Anthropic's diagnostics request chained to the session's previous response, and the beta
        header to add. A caller's own ``diagnostics`` object is left as it is."""
        headers: dict[str, str] = {}
        beta = [value.strip() for value in request.headers.get("anthropic-beta", "").split(",") if value.strip()]
        if ANTHROPIC_BETA not in beta:
            headers["anthropic-beta"] = ",".join([*beta, ANTHROPIC_BETA])
        if "diagnostics" in sent:
            return sent, headers
        with self._lock:
            previous = self._previous_ids.get(session)
        return {**sent, "diagnostics": {"previous_message_id": previous}}, headers

    def _call(
        self,
        received: httpx.Request,
        outgoing: httpx.Request,
        who: tuple[str, str],
        original: dict[str, Any] | None,
        passthrough: str | None,
        started: float,
        relocated: str | None = None,
        placements: Placements | None = None,
    ) -> Call:
        """The call of ``received``, to send as ``outgoing``; ``who`` is its ``(session, source)``."""
        session, source = who
        turn = self.ledger.next_turn(session)
        key = None if self.cluster is None else self.cluster.routing_key(received, session)
        if key is not None and self.cluster is not None and self.cluster.routing_key_header not in outgoing.headers:
            outgoing = _with_header(outgoing, str(self.cluster.routing_key_header), key)
        model = None if original is None else original.get("model")
        call = Call(
            outgoing,
            session,
            source,
            turn,
            None if original is None else received.content,
            passthrough,
            started,
            model if isinstance(model, str) else None,
            bool(original and original.get("stream")),
            relocated,
            current_scope(),
            key,
            placements=placements,
        )
        self._notify(lambda listener: listener.on_begin(call))
        return call

    def wrap(self, call: Call, response: httpx.Response) -> httpx.Response:
        """The response of a sync client, its body tapped so the turn is recorded when the body is done. A
        response the wrapped transport had already read (``content=``) is recorded at once."""
        tap = self._tap(call, response)
        if tap is not None:
            assert isinstance(response.stream, httpx.SyncByteStream)
            response.stream = TappedStream(response.stream, tap)
        return response

    def wrap_async(self, call: Call, response: httpx.Response) -> httpx.Response:
        """The async twin of :meth:`wrap`, for a response of an async client."""
        tap = self._tap(call, response)
        if tap is not None:
            assert isinstance(response.stream, httpx.AsyncByteStream)
            response.stream = AsyncTappedStream(response.stream, tap)
        return response

    def _tap(self, call: Call, response: httpx.Response) -> ResponseTap | None:
        call.status = response.status_code
        if self.cluster is not None:
            call.worker, call.worker_source = self.cluster.worker(response.headers, call.routing_key)
        tap = ResponseTap(response, lambda tap: self._finish_later(call, tap.read))
        if not response.is_closed:
            return tap
        tap.feed(response.content)
        tap.end()
        tap.close()
        return None

    def fail(self, call: Call, error: BaseException | str) -> None:
        """Record a call that got no response (never raising another error)."""
        message = error if isinstance(error, str) else f"{type(error).__name__}: {error}".rstrip(": ")
        result = TapResult(error=message)
        self._finish_later(call, lambda: result)

    def _finish_later(self, call: Call, read: Callable[[], TapResult]) -> None:
        """The call ended now: read its response (``read``), predict and record its turn on the background thread,
        so the caller waits for none of it. With ``diagnostics``, the response is read now: the session's next
        request names its id."""
        ending = _Ended(call, read, time.time(), time.monotonic())
        if self.diagnostics:
            response_id = read().response_id
            if response_id is not None:
                with self._lock:
                    self._previous_ids[call.session] = response_id
        waiters = [self.ledger.pending] if call.scope is None else [self.ledger.pending, call.scope.pending]
        self._ended.append(ending)  # before its job is deferred: whichever job runs first finds it
        defer(lambda: self._finish(ending), *waiters)

    def _job(self, ending: _Ended) -> PredictJob | None:
        """What predicting the call's turn takes, once its response is read; None when there is nothing to predict.
        The server cached the prompt if it answered 2xx, or with an error it gives only after evaluating the prompt:
        only then is there a prediction to make."""
        call, result = ending.call, ending.read()
        call.evaluated = self.profile.cached(call.status, result.server_error)
        if not call.evaluated or call.received is None:
            return None
        usage = result.usage
        return PredictJob(
            call.request.content,
            call.started,
            call.session,
            result.output_ids,
            result.text,
            None if usage is None else usage.prompt_tokens,
            None if usage is None else usage.cached_tokens,
            call.relocated,
            sent_at=call.begun,
            answered_at=ending.answered,
        )

    def _finish(self, ending: _Ended) -> Turn:
        """Predict the turn, with every other that ended before (:meth:`_predict_ended`), record it, tell
        listeners."""
        if not ending.predicted:
            self._predict_ended()
        call, prediction = ending.call, ending.prediction
        if isinstance(prediction, Exception):
            raise prediction
        result = ending.read()
        call.usage = result.raw_usage
        call.diagnosis = result.raw_diagnosis
        if isinstance(prediction, str):
            result.notes.append(prediction)
            prediction = None
        turn = _turn(call, result, prediction, self.prompt is not None, ended=ending.ended)
        self.ledger.record(turn)
        if call.scope is not None:
            call.scope.add(turn)
        self._notify(lambda listener: listener.on_turn(call, turn))
        return turn

    def _predict_ended(self) -> None:
        """Predict, in order, every turn that ended and is not predicted yet, in one batch (wherever
        :attr:`predictions` runs: one message to the prediction process and one answer). The worker runs the
        turns' jobs one after another; the first takes them all, the others find theirs done. An error is kept
        for its own turn, whose job raises it."""
        batch: list[_Ended] = []
        while self._ended:
            batch.append(self._ended.popleft())
        jobs: list[PredictJob] = []
        for ending in batch:
            ending.predicted = True
            try:
                ending.job = self._job(ending)
                if ending.call.worker is not None:
                    ending.job = self._cluster_job(ending.call, ending.job)
            except Exception as exc:
                ending.job, ending.prediction = None, exc
            if ending.job is not None:
                jobs.append(ending.job)
        if not jobs:
            return
        try:
            predictions: Iterator[Prediction | str | Exception] = iter(self.predictions.predict(jobs))
        except Exception as exc:
            predictions = itertools.repeat(exc)
        for ending in batch:
            if ending.job is not None:
                ending.prediction = next(predictions)

    def _cluster_job(self, call: Call, job: PredictJob | None) -> PredictJob | None:
        """``job`` with the cluster's worker that served it and the workers lost since the last job; a lost worker
        is noted even from a call with nothing to predict (a gateway error)."""
        assert call.worker is not None
        lost = self._lost_worker(call)
        with self._lock:
            if lost is not None:
                self._lost.add(lost)
                self._newly_lost.append(lost)
            if job is None:
                return None
            self._workers[call.session] = call.worker
            newly, self._newly_lost = tuple(self._newly_lost), []
        return job._replace(worker=call.worker, lost=newly)

    def _lost_worker(self, call: Call) -> str | None:
        """The worker a gateway error names, or the one the call's session moved off, when the gateway says it is
        unhealthy or gone (asked only on such a move)."""
        assert self.cluster is not None
        if call.status in GATEWAY_LOST_WORKER:
            return call.worker
        with self._lock:
            previous = self._workers.get(call.session)
            if previous is None or previous == call.worker or previous in self._lost:
                return None
        return previous if self.cluster.gone(call.request.url, previous) else None

    def _notify(self, hear: Callable[[TurnListener], object]) -> None:
        for listener in self.listeners:
            try:
                hear(listener)
            except Exception as exc:  # a listener must never fail the agent's request
                warnings.warn(f"agentcache: listener {listener!r} failed ({type(exc).__name__}: {exc})", stacklevel=3)


@dataclasses.dataclass(slots=True)
class _Ended:
    """A call that ended, on its way to the ledger: what its turn is recorded from."""

    call: Call
    read: Callable[[], TapResult]
    """What its response said (read at the first call, on the background thread but with ``diagnostics``)."""
    ended: float
    """``time.time()`` as it ended."""
    answered: float
    """``time.monotonic()`` as it ended (:attr:`PredictJob.answered_at`)."""
    job: PredictJob | None = None
    """What its prediction is made from; None when there is none to make (set by :meth:`CacheMiddleware._job`)."""
    predicted: bool = False
    """Whether :meth:`CacheMiddleware._predict_ended` has taken it (``prediction`` is then final)."""
    prediction: Prediction | str | Exception | None = None
    """Its prediction, why there is none, or the error its job raises."""


def _turn(call: Call, result: TapResult, prediction: Prediction | None, exact: bool, ended: float) -> Turn:
    """The ledger's record of a call: the one place a :class:`Turn` is built."""
    usage = result.usage
    diagnosis = result.diagnosis
    return Turn(
        session=call.session,
        turn=call.turn,
        session_source=call.source,
        path=call.request.url.path,
        model=call.model,
        stream=call.stream,
        canonicalized=call.passthrough is None,
        passthrough=call.passthrough,
        status=call.status,
        error=result.error,
        reported_prompt_tokens=None if usage is None else usage.prompt_tokens,
        reported_cached=None if usage is None else usage.cached_tokens,
        predicted_prompt_tokens=None if prediction is None else prediction.predicted_prompt_tokens,
        predicted_cached=None if prediction is None else prediction.predicted_cached,
        exact=exact,
        output_ids_known=result.output_ids is not None,
        cause=None if prediction is None else prediction.cause,
        detail=None if prediction is None else prediction.detail,
        divergence_token=None if prediction is None else prediction.divergence_token,
        divergence=None if prediction is None else prediction.divergence,
        wasted_tokens=0 if prediction is None else prediction.wasted_tokens,
        started=call.started,
        seconds=ended - call.started,
        prediction_error=next((n for n in result.notes if n.startswith("no prediction")), None),
        worker=call.worker,
        worker_source=call.worker_source,
        routing_key=call.routing_key,
        breakpoints=call.placements,
        provider_verdict=None if diagnosis is None else diagnosis.verdict,
        provider_missed_tokens=None if diagnosis is None else diagnosis.missed_tokens,
        provider_agrees=None
        if diagnosis is None or prediction is None
        else diagnosis.agrees(prediction.cause, prediction.divergence, first=call.turn == 1),
    )


_PATH_KEYS = re.compile(r'\.([^.\[]+)|\[("(?:[^"\\]|\\.)*")\]')


def _refusal(exc: AgentCacheError) -> str:
    """Why a body was refused, as the ledger, the trace and the span keep it: an error about a value under a
    credential-shaped key (a 30-digit ``pin_password``) names its place, not the value."""
    if isinstance(exc, RequestError):
        keys = [dotted or orjson.loads(quoted) for dotted, quoted in _PATH_KEYS.findall(exc.path)]
        if any(map(names_credential, keys)):
            return f"{exc.path}: {CREDENTIAL}; {exc.hint}"
    return str(exc)


def _with_header(request: httpx.Request, name: str, value: str) -> httpx.Request:
    """``request`` with one header added (the body and every other header as they were)."""
    rebuilt = httpx.Request(
        request.method,
        request.url,
        headers=[*request.headers.raw, (name.encode(), value.encode())],
        content=request.content,
    )
    rebuilt.extensions = request.extensions
    return rebuilt


def _with_body(request: httpx.Request, content: bytes, extra: dict[str, str] | None = None) -> httpx.Request:
    """``request`` with ``content`` as its body and ``extra`` headers (itself when neither changes it).

    Built from a stream, as httpx copies a request: built from ``content=``, httpx would look its headers up and
    build them again twice over, three times this method's time on the event loop."""
    if content == request.content and not extra:
        return request
    headers = request.headers.copy()
    if extra:
        headers.update(extra)
    if "transfer-encoding" in headers:  # the new body has a length; never send both framings (``pop`` costs a
        del headers["transfer-encoding"]  # KeyError raised and caught inside httpx, on the event loop)
    headers["content-length"] = str(len(content))
    rebuilt = httpx.Request(request.method, request.url, headers=headers, stream=httpx.ByteStream(content))
    rebuilt.read()  # ``content`` itself: a stream of one chunk is read as that chunk
    rebuilt.extensions = request.extensions
    return rebuilt
