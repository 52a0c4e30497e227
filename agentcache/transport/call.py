"""A handled call, as the middleware hands it to its listeners, and the listener interface itself."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import httpx
import orjson

from agentcache.breakpoints import Placements
from agentcache.transport.session import Scope

if TYPE_CHECKING:
    from agentcache.transport.ledger import Turn


@dataclass
class Call:
    """One handled request on its way: what the middleware knows of it before its turn is recorded.

    While the call is in flight it holds the bodies as bytes only, and parses them when :attr:`original` or
    :attr:`sent` is first read (after the call, by a listener or the prediction). A parsed 60 kB body is a few
    thousand objects; kept for the second a call takes, 64 concurrent calls pushed them into the garbage
    collector's oldest generation, and its full collections cost the caller more CPU than agentcache's own work.
    """

    request: httpx.Request
    """The request to send: the canonical body, or the original request when it was passed through."""
    session: str
    source: str
    """Where the session id came from (see :mod:`agentcache.transport.session`)."""
    turn: int
    received: bytes | None
    """The body as the agent sent it, when it is a chat request (a JSON object with a messages array)."""
    passthrough: str | None
    """Why the body was sent as it came, or None."""
    started: float
    model: str | None = None
    """The request's ``model``, when it names one."""
    stream: bool = False
    relocated: str | None = None
    """JSON path of the message that holds the volatile lines canonicalization moved, or None."""
    scope: Scope | None = None
    """The :func:`~agentcache.transport.session.session_scope` that collects the call's turn, if any."""
    routing_key: str | None = None
    """The routing key sent to a cluster's gateway (see :mod:`agentcache.transport.cluster`), or None."""
    worker: str | None = None
    """The cluster's worker that served the call, as far as the client can tell; None for a single server."""
    worker_source: str | None = None
    """How the worker is known: ``header``, ``routing_key`` or ``unknown`` (None for a single server)."""
    placements: Placements | None = None
    """The breakpoints placed on the body, and those not placed and why (None: placement not asked for)."""
    status: int | None = None
    evaluated: bool = True
    """Whether the server evaluated the prompt, so that it is in its cache: False for a call without an answer or
    with an error given before evaluating (set when the call ends, by the server's profile)."""
    usage: dict[str, Any] | None = None
    """The ``usage`` object the server returned, as it was (set when the turn is recorded)."""
    diagnosis: dict[str, Any] | None = None
    """The provider's cache diagnosis as the response carried it (set when the turn is recorded)."""
    context: dict[str, Any] = field(default_factory=dict)
    """Room for listeners to keep their own state of the call (the OpenTelemetry span)."""
    begun: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` as the call was made, before its request went out: the server's KV events for the
    request arrive after it. Not derived from :attr:`started`, since the wall clock can be stepped meanwhile."""

    @cached_property
    def original(self) -> dict[str, Any] | None:
        """The body as the agent sent it, parsed (None when it is not a chat request)."""
        return None if self.received is None else orjson.loads(self.received)

    @cached_property
    def sent(self) -> dict[str, Any] | None:
        """The body as sent, parsed: the canonical body, or the original (None when it is not a chat request).
        Parsed from the bytes on the wire, so it is what the server parses."""
        if self.received is None or self.request.content is self.received:
            return self.original
        sent: dict[str, Any] = orjson.loads(self.request.content)
        return sent


class TurnListener:
    """Hears each handled call begin and each turn recorded. Override either. ``on_begin`` runs in the caller's
    thread; ``on_turn`` on agentcache's background thread after the response reached the caller, in a copy of the
    caller's context (:mod:`agentcache.transport.background`). An exception they raise is turned into a warning,
    never into a failed request."""

    def on_begin(self, call: Call) -> None:
        """The request is about to be sent."""

    def on_turn(self, call: Call, turn: Turn) -> None:
        """The call's turn was recorded (response done, cut, or never received)."""
