"""Which agent session a request belongs to, so each session's turns are compared with their own history.

Looked up in this order, first found wins (the source is recorded with each turn):

0. the session of the enclosing :func:`session_scope` (how framework integrations pass a thread id down to
   the transport without touching the request);
1. the ``X-Agentcache-Session`` header (``SESSION_HEADER``; set it with the SDK's ``default_headers`` or
   ``extra_headers``);
2. ``prompt_cache_key`` (OpenAI's cache routing key, which agents already set per conversation);
3. ``user``;
4. ``metadata.session_id``, ``metadata.thread_id``, then ``metadata.user_id`` (Anthropic's metadata field);
5. otherwise the session ``default``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agentcache.drift.trace import DEFAULT_SESSION
from agentcache.transport.background import Pending

if TYPE_CHECKING:
    from agentcache.transport.ledger import Turn

SESSION_HEADER = "x-agentcache-session"
_BODY_KEYS = ("prompt_cache_key", "user")
_METADATA_KEYS = ("session_id", "thread_id", "user_id")


@dataclass
class Scope:
    """What a :func:`session_scope` hands to the transport, and the turns the transport recorded inside it."""

    session: str | None = None
    pending: Pending = field(default_factory=Pending, repr=False, compare=False)
    """The turns of the scope's calls that ended, not recorded yet."""
    _turns: list[Turn] = field(default_factory=list, repr=False)

    @property
    def turns(self) -> list[Turn]:
        """The turns recorded in the scope, once those of its calls that ended are in."""
        self.pending.wait()
        return list(self._turns)

    def add(self, turn: Turn) -> None:
        self._turns.append(turn)


_SCOPE: ContextVar[Scope | None] = ContextVar("agentcache_scope", default=None)


@contextmanager
def session_scope(session: str | None = None) -> Iterator[Scope]:
    """Requests sent inside belong to ``session`` (when given), and their turns are collected on the scope.

    A context variable, so it follows the code into the SDK and down to the transport, in threads and asyncio
    tasks alike; the turn of a request is added when its response body is done.
    """
    scope = Scope(session)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)


def current_scope() -> Scope | None:
    return _SCOPE.get()


def session_of(headers: Mapping[str, str], body: Mapping[str, Any], header: str = SESSION_HEADER) -> tuple[str, str]:
    """``(session, source)`` of a request; ``source`` names where the session id was found."""
    scope = _SCOPE.get()
    if scope is not None and scope.session:
        return scope.session, "scope"
    value = headers.get(header)
    if value:
        return value, "header"
    for key in _BODY_KEYS:
        if isinstance(body.get(key), str) and body[key]:
            return str(body[key]), key
    metadata = body.get("metadata")
    if isinstance(metadata, Mapping):
        for key in _METADATA_KEYS:
            if isinstance(metadata.get(key), str) and metadata[key]:
                return str(metadata[key]), f"metadata.{key}"
    return DEFAULT_SESSION, "default"
