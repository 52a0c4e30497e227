"""The logic the sync and async transports share: decide, canonicalize, send, then account for the turn.

A request is handled when it is a POST whose path ends in ``/chat/completions`` or ``/v1/messages``. Its body is
canonicalized unless that is switched off or impossible; then it is sent. Anything the middleware cannot handle
(a body that is not JSON, not a chat request, or that canonicalization refuses) is sent byte-identical, and the
ledger says why. The response reaches the caller unchanged: the tap only reads it on the way.

Predictions run on the client-side model of the server (:class:`~agentcache.servers.ServerProfile`): with the
model folder the server loads (``model_dir``), the prompt is rendered with the server's own template and
tokenizer, so predicted and reported counts compare token for token; without it, agentcache's generic rendering
and o200k_base give an estimate (the only option for hosted APIs).
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson

from agentcache.cache.prefix import common_prefix
from agentcache.canon import CanonicalPolicy, canonical_json, canonicalize
from agentcache.drift import causes
from agentcache.drift.explain import diagnose
from agentcache.drift.prompt import PromptTokenizer
from agentcache.drift.replay import CacheOptions, Replay, Served
from agentcache.errors import AgentCacheError, InputError
from agentcache.servers import ServerProfile, ServerPrompt, get_profile
from agentcache.tokens import Tokenizer, get_tokenizer
from agentcache.transport.ledger import Ledger, Turn
from agentcache.transport.otel import end_span, start_span
from agentcache.transport.recorder import TraceRecorder
from agentcache.transport.session import SESSION_HEADER, Scope, current_scope, session_of
from agentcache.transport.tap import ResponseTap, TapResult

CHAT_PATHS = ("/chat/completions", "/v1/messages")
"""Path endings of OpenAI chat completions and Anthropic Messages (not ``/threads/{id}/messages``)."""


@dataclass
class Pending:
    """A request on its way: what the middleware knows before the response."""

    session: str
    source: str
    turn: int
    path: str
    original: dict[str, Any] | None
    """The body as the agent sent it (None when it is not a JSON object)."""
    sent: dict[str, Any] | None
    """The body as sent (canonical, or the original)."""
    passthrough: str | None
    stream: bool
    started: float
    scope: Scope | None = None
    """The :func:`session_scope` the request was sent in, which collects its turn."""
    span: Any = None
    """The OpenTelemetry span of the call, if OpenTelemetry is installed."""
    status: int | None = None


@dataclass
class _SessionState:
    request: dict[str, Any]
    served: Served
    relocated: str | None
    """JSON path of the message canonicalization appended to hold volatile lines, if it did."""


class CacheMiddleware:
    """Canonicalizes chat requests, and records each turn with its server-reported and predicted cache hits.

    ``server`` picks the client-side model (``sglang``, ``vllm``, ``llama.cpp``, ``openai``, ``anthropic`` or a
    :class:`ServerProfile`); ``cache`` overrides its cache options (e.g. vLLM's ``block_size``). ``model_dir``
    is the model folder the server loads, for exact predictions. ``ask_output_ids`` adds the server's own
    request field that makes it return the generated token ids (non-streamed requests only), so the model
    caches exactly what the server caches; the response then carries that extra field. With OpenTelemetry
    installed, each call is a span (``telemetry=False`` turns them off; ``tracer_provider`` overrides the global
    provider): see :mod:`agentcache.transport.otel`.
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
        session_header: str = SESSION_HEADER,
        ask_output_ids: bool = False,
        tokenizer: str | Tokenizer = "o200k_base",
        telemetry: bool = True,
        tracer_provider: Any = None,
    ) -> None:
        self.profile = get_profile(server)
        self.cache_options = cache or self.profile.cache
        if prompt is None and model_dir is not None:
            prompt = ServerPrompt.from_pretrained(model_dir, self.profile)
        if prompt is not None and self.cache_options.kind == "anthropic":
            raise InputError(
                "an Anthropic server has no local chat template: leave model_dir and prompt unset for it"
            )
        self.canonicalize = canonicalize
        self.policy = policy or CanonicalPolicy()
        self.ledger = ledger or Ledger()
        self.recorder = recorder
        self.session_header = session_header
        self.ask_output_ids = ask_output_ids
        self.telemetry = telemetry
        self.tracer_provider = tracer_provider
        encoder = get_tokenizer(tokenizer) if isinstance(tokenizer, str) else tokenizer
        self._drift = Replay(self.cache_options, PromptTokenizer(encoder), server_prompt=prompt)
        self.prompt = self._drift.server_prompt
        """The server's own prompt, given or from ``model_dir`` (here or in ``cache``): predictions are exact."""
        self._sessions: dict[str, _SessionState] = {}
        self._lock = threading.Lock()

    def handles(self, request: httpx.Request) -> bool:
        return request.method == "POST" and request.url.path.rstrip("/").endswith(CHAT_PATHS)

    def prepare(self, request: httpx.Request) -> tuple[httpx.Request, Pending]:
        """The request to send (a new one only when the body changed) and what to remember of it."""
        body = request.content
        started = time.time()
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            return request, self._pending(request, None, None, f"body is not JSON ({exc})", started)
        if not isinstance(parsed, dict) or not isinstance(parsed.get("messages"), list):
            return request, self._pending(request, None, None, "not a chat request (no messages array)", started)
        if not self.canonicalize:
            return request, self._pending(request, parsed, parsed, "canonicalization switched off", started)
        try:
            sent = canonicalize(parsed, self.policy)
            if self.ask_output_ids and not sent.get("stream"):
                sent = {**sent, **self.profile.output_ids_request}
            content = canonical_json(sent)
        except AgentCacheError as exc:
            return request, self._pending(request, parsed, parsed, f"not canonicalized: {exc}", started)
        pending = self._pending(request, parsed, sent, None, started)
        if content == body:
            return request, pending
        headers = httpx.Headers(request.headers)
        headers.pop("transfer-encoding", None)  # the new body has a length; never send both framings
        headers["content-length"] = str(len(content))
        rebuilt = httpx.Request(request.method, request.url, headers=headers, content=content)
        rebuilt.extensions = request.extensions
        return rebuilt, pending

    def _pending(
        self,
        request: httpx.Request,
        original: dict[str, Any] | None,
        sent: dict[str, Any] | None,
        passthrough: str | None,
        started: float,
    ) -> Pending:
        session, source = session_of(request.headers, original or {}, self.session_header)
        stream = bool(original and original.get("stream"))
        turn = self.ledger.next_turn(session)
        model = None if original is None else _str(original.get("model"))
        span = start_span(self.tracer_provider, model, self.profile.name) if self.telemetry else None
        path = request.url.path
        return Pending(
            session, source, turn, path, original, sent, passthrough, stream, started, current_scope(), span
        )

    def tap(self, pending: Pending, response: httpx.Response) -> ResponseTap | None:
        """A tap that records the turn when the response body is done; None when the wrapped transport returned
        a response it had already read (``content=``): then the turn is recorded from that body at once."""
        pending.status = response.status_code
        tap = ResponseTap(response, lambda result: self.finish(pending, result))
        if not response.is_closed:
            return tap
        tap.feed(response.content)
        tap.close()
        return None

    def failed(self, pending: Pending, error: BaseException) -> None:
        """The request raised before any response: record the turn with the error (never raising another)."""
        tap_result = TapResult(error=f"{type(error).__name__}: {error}".rstrip(": "))
        try:
            self.finish(pending, tap_result)
        except Exception as exc:
            warnings.warn(f"agentcache: a turn could not be recorded ({type(exc).__name__}: {exc})", stacklevel=2)

    def finish(self, pending: Pending, result: TapResult) -> Turn:
        """Predict, diagnose and record one turn. The server cached the prompt only if it answered 2xx."""
        served_ok = pending.status is not None and 200 <= pending.status < 300 and pending.sent is not None
        predicted_prompt = predicted = divergence_token = None
        cause = detail = None
        wasted = 0
        exact = self.prompt is not None
        if served_ok and pending.sent is not None:
            with self._lock:
                try:
                    predicted_prompt, predicted, cause, detail, divergence_token, wasted = self._predict(
                        pending, result
                    )
                except AgentCacheError as exc:
                    result.notes.append(f"no prediction: {exc}")
        usage = result.usage
        turn = Turn(
            session=pending.session,
            turn=pending.turn,
            session_source=pending.source,
            path=pending.path,
            model=None if pending.original is None else _str(pending.original.get("model")),
            stream=pending.stream,
            canonicalized=pending.passthrough is None,
            passthrough=pending.passthrough,
            status=pending.status,
            error=result.error,
            prompt_tokens=None if usage is None else usage.prompt_tokens,
            cached_tokens=None if usage is None else usage.cached_tokens,
            predicted_prompt_tokens=predicted_prompt,
            predicted_cached=predicted,
            exact=exact,
            output_ids_known=result.output_ids is not None,
            cause=cause,
            detail=detail,
            divergence_token=divergence_token,
            wasted_tokens=wasted,
            started=pending.started,
            seconds=time.time() - pending.started,
        )
        self.ledger.record(turn)
        if pending.scope is not None:
            pending.scope.turns.append(turn)
        if pending.span is not None:
            end_span(pending.span, turn, result.raw_usage, None if usage is None else usage.cache_write_tokens)
        if self.recorder is not None and pending.original is not None:
            try:
                self.recorder.write(
                    pending.session,
                    pending.original,
                    result.raw_usage,
                    pending.started,
                    turn=pending.turn,
                    canonicalized=turn.canonicalized,
                )
            except OSError as exc:  # a full disk must not fail the agent's request
                warnings.warn(f"agentcache: trace {self.recorder.path} not written: {exc}", stacklevel=2)
        return turn

    def _predict(
        self, pending: Pending, result: TapResult
    ) -> tuple[int, int, str, str, int | None, int]:
        sent = pending.sent
        assert sent is not None
        output: Sequence[int] = ()  # what the server generated, in its tokens, is cached after the prompt
        if result.output_ids is not None:
            output = result.output_ids
        elif self.prompt is not None and result.text:
            output = self.prompt.tokenizer.encode(result.text)
        served = self._drift.serve(sent, pending.started, pending.session, output)
        state = self._sessions.get(pending.session)
        cause, detail, divergence, wasted = diagnose(
            None if state is None else (state.request, state.served), sent, served
        )
        if state is not None and state.relocated and divergence and divergence.path.startswith(state.relocated):
            cause = causes.VOLATILE_VALUE
            detail = "volatile lines changed; relocated to the last message, so only the tail is prefilled again"
        if served.exact is None:  # agentcache's rendering: the divergence is in its tokens
            divergence_token = None if divergence is None else divergence.token_index
        else:  # the server's own tokens: where they first differ from the previous request's
            before = None if state is None else state.served.exact
            divergence_token = None if before is None or cause == causes.NONE else common_prefix(before, served.exact)
        self._sessions[pending.session] = _SessionState(sent, served, _appended_message(sent, pending.original))
        return served.prompt_tokens, served.cached, cause, detail, divergence_token, wasted


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None



def _appended_message(sent: dict[str, Any], original: dict[str, Any] | None) -> str | None:
    """Path of the message canonicalization appended (``relocate_volatile``), when the sent body has one more."""
    after, before = sent.get("messages"), (original or {}).get("messages")
    if isinstance(after, list) and isinstance(before, list) and len(after) > len(before):
        return f"$.messages[{len(after) - 1}]"
    return None
