"""Which agent session a request belongs to, so each session's turns are compared with their own history.

Looked up in this order, first found wins (the source is recorded with each turn):

1. the ``X-Agentcache-Session`` header (``SESSION_HEADER``; set it with the SDK's ``default_headers`` or
   ``extra_headers``);
2. ``prompt_cache_key`` (OpenAI's cache routing key, which agents already set per conversation);
3. ``user``;
4. ``metadata.session_id``, ``metadata.thread_id``, then ``metadata.user_id`` (Anthropic's metadata field);
5. otherwise the session ``default``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentcache.drift.trace import DEFAULT_SESSION

SESSION_HEADER = "x-agentcache-session"
_BODY_KEYS = ("prompt_cache_key", "user")
_METADATA_KEYS = ("session_id", "thread_id", "user_id")


def session_of(headers: Mapping[str, str], body: Mapping[str, Any], header: str = SESSION_HEADER) -> tuple[str, str]:
    """``(session, source)`` of a request; ``source`` names where the session id was found."""
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
