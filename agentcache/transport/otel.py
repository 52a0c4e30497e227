"""OpenTelemetry spans for LLM calls, with the GenAI semantic-convention usage attributes and agentcache's own.

Optional: when ``opentelemetry-api`` is not installed nothing happens, and when it is installed but no tracer
provider is configured, the API's no-op tracer makes the spans free. Each handled request gets one CLIENT span
named ``chat {model}``, started when the request is sent (a child of whatever span is current then) and ended when
its response body is done, so the span covers the whole call, streams included.

Attributes (GenAI conventions): ``gen_ai.operation.name``, ``gen_ai.provider.name`` (the server profile),
``gen_ai.request.model``, ``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``,
``gen_ai.usage.cache_read.input_tokens``, ``gen_ai.usage.cache_creation.input_tokens`` (Anthropic), and
``agentcache.session``, ``agentcache.turn``, ``agentcache.predicted_cached_tokens``,
``agentcache.predicted_prompt_tokens``, ``agentcache.cause``, ``agentcache.divergence_token``,
``agentcache.wasted_tokens``, ``agentcache.canonicalized``, ``agentcache.passthrough``, ``agentcache.exact``.
A call that failed (an error, or an HTTP status of 400 or more) has the status ERROR. A response the caller closed
before its end (a stream it stopped reading) is its choice, not a failure: the status stays unset and
``agentcache.abandoned`` is true.
Every attribute and the status description go through :func:`agentcache.redact.redact`: an error message may
quote a URL with its key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentcache.redact import redact
from agentcache.transport.call import Call, TurnListener
from agentcache.transport.ledger import Turn
from agentcache.transport.tap import closed_by_caller
from agentcache.usage import CacheUsage

try:
    from opentelemetry import trace
except ImportError:  # the core does not require OpenTelemetry
    trace = None  # type: ignore[assignment]

TRACER_NAME = "agentcache"
_SPAN = "otel.span"


class SpanListener(TurnListener):
    """Starts a span when a call begins (in the caller's context, so it is a child of the current span) and ends
    it with the turn's numbers. ``provider`` None means the global tracer provider."""

    def __init__(self, provider: Any, server: str) -> None:
        self.provider = provider
        self.server = server

    def on_begin(self, call: Call) -> None:
        if trace is None:
            return
        tracer = trace.get_tracer(TRACER_NAME, tracer_provider=self.provider)
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": self.server}
        model = call.model
        if model:
            attributes["gen_ai.request.model"] = model
        name = f"chat {model}" if model else "chat"
        call.context[_SPAN] = tracer.start_span(name, kind=trace.SpanKind.CLIENT, attributes=redact(attributes))

    def on_turn(self, call: Call, turn: Turn) -> None:
        span = call.context.pop(_SPAN, None)
        if span is not None:
            _end_span(span, turn, call.usage)


def _end_span(span: Any, turn: Turn, usage: Mapping[str, Any] | None) -> None:
    """Put the turn's numbers on the span and end it."""
    reading = CacheUsage.from_usage(usage)
    values: dict[str, Any] = {
        "gen_ai.usage.input_tokens": turn.reported_prompt_tokens,
        "gen_ai.usage.output_tokens": _int((usage or {}).get("completion_tokens", (usage or {}).get("output_tokens"))),
        "gen_ai.usage.cache_read.input_tokens": turn.reported_cached,
        "gen_ai.usage.cache_creation.input_tokens": None if reading is None else reading.cache_write_tokens,
        "agentcache.session": turn.session,
        "agentcache.turn": turn.turn,
        "agentcache.predicted_cached_tokens": turn.predicted_cached,
        "agentcache.predicted_prompt_tokens": turn.predicted_prompt_tokens,
        "agentcache.cause": turn.cause,
        "agentcache.divergence_token": turn.divergence_token,
        "agentcache.wasted_tokens": turn.wasted_tokens,
        "agentcache.canonicalized": turn.canonicalized,
        "agentcache.passthrough": turn.passthrough,
        "agentcache.exact": turn.exact,
    }
    span.set_attributes(redact({k: v for k, v in values.items() if v is not None}))
    if turn.status is not None:
        span.set_attribute("http.response.status_code", turn.status)
    abandoned = closed_by_caller(turn.error)
    if abandoned:
        span.set_attribute("agentcache.abandoned", True)
    failed = (turn.error is not None and not abandoned) or (turn.status is not None and turn.status >= 400)
    if failed and trace is not None:
        span.set_status(trace.Status(trace.StatusCode.ERROR, redact(turn.error or f"HTTP {turn.status}")))
    span.end(end_time=round((turn.started + turn.seconds) * 1e9))  # when the call ended, not when it was recorded


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
