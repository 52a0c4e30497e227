"""A handled call, as the middleware hands it to its listeners, and the listener interface itself."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

from agentcache.transport.session import Scope

if TYPE_CHECKING:
    from agentcache.transport.ledger import Turn


@dataclass
class Call:
    """One handled request on its way: what the middleware knows of it before its turn is recorded."""

    request: httpx.Request
    """The request to send: the canonical body, or the original request when it was passed through."""
    session: str
    source: str
    """Where the session id came from (see :mod:`agentcache.transport.session`)."""
    turn: int
    original: dict[str, Any] | None
    """The body as the agent sent it (None when it is not a JSON object)."""
    sent: dict[str, Any] | None
    """The body as sent (canonical, or the original)."""
    passthrough: str | None
    """Why the body was sent as it came, or None."""
    started: float
    scope: Scope | None = None
    """The :func:`~agentcache.transport.session.session_scope` that collects the call's turn, if any."""
    routing_key: str | None = None
    """The routing key sent to a cluster's gateway (see :mod:`agentcache.transport.cluster`), or None."""
    worker: str | None = None
    """The cluster's worker that served the call, as far as the client can tell; None for a single server."""
    worker_source: str | None = None
    """How the worker is known: ``header``, ``routing_key`` or ``unknown`` (None for a single server)."""
    status: int | None = None
    usage: dict[str, Any] | None = None
    """The ``usage`` object the server returned, as it was (set when the turn is recorded)."""
    context: dict[str, Any] = field(default_factory=dict)
    """Room for listeners to keep their own state of the call (the OpenTelemetry span)."""

    @property
    def model(self) -> str | None:
        value = None if self.original is None else self.original.get("model")
        return value if isinstance(value, str) else None

    @property
    def stream(self) -> bool:
        return bool(self.original and self.original.get("stream"))


class TurnListener:
    """Hears each handled call begin and each turn recorded. Override either. ``on_begin`` runs in the caller's
    thread; ``on_turn`` on agentcache's background thread after the response reached the caller, in a copy of the
    caller's context (:mod:`agentcache.transport.background`). An exception they raise is turned into a warning,
    never into a failed request."""

    def on_begin(self, call: Call) -> None:
        """The request is about to be sent."""

    def on_turn(self, call: Call, turn: Turn) -> None:
        """The call's turn was recorded (response done, cut, or never received)."""
