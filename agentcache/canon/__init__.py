"""Canonical requests: the same meaning always gives the same bytes, so the server's prefix cache can hit."""

from __future__ import annotations

from typing import Any

from agentcache.canon.jsonvalue import canonical_json
from agentcache.canon.policy import CanonicalPolicy
from agentcache.canon.request import Canonicalizer
from agentcache.canon.text import normalize_prose
from agentcache.canon.volatile import VolatileSpan, find_volatile

__all__ = ["CanonicalPolicy", "VolatileSpan", "canonical_json", "canonicalize", "find_volatile", "normalize_prose"]

_DEFAULT = CanonicalPolicy()
_canonicalizers: dict[CanonicalPolicy, Canonicalizer] = {}


def canonicalizer(policy: CanonicalPolicy | None = None) -> Canonicalizer:
    """The canonicalizer :func:`canonicalize` uses for ``policy``, memos and all: a caller that canonicalizes at
    every request (the transport) keeps it rather than hash the policy each time."""
    policy = policy or _DEFAULT
    found = _canonicalizers.get(policy)
    if found is None:
        if len(_canonicalizers) >= 16:
            _canonicalizers.clear()
        found = _canonicalizers[policy] = Canonicalizer(policy)
    return found


def canonicalize(request: Any, policy: CanonicalPolicy | None = None) -> dict[str, Any]:
    """The canonical form of an OpenAI chat-completions or Anthropic Messages request body.

    Deterministic across processes, a fixed point (canonicalizing twice changes nothing more), and
    meaning-preserving under the default policy. The result is a new top-level dict whose nested values may be
    shared with the input and with agentcache's memo: treat it as read-only (``copy.deepcopy`` it to edit).
    Raises a :class:`~agentcache.errors.RequestError` subclass, naming the JSON path, on input it cannot handle.
    """
    return canonicalizer(policy).canonicalize(request)
