"""Several workers behind one gateway: which worker served each turn, and the routing key that keeps a session on one.

A prefix is cached on the worker that computed it, so behind a gateway (SMG, the Shepherd Model Gateway, in front
of SGLang or vLLM workers) the client keeps one model per worker and must know where each turn ran:

- **Told:** the gateway names the worker in a response header (SMG: ``x-smg-routed-worker-id``, the worker's URL).
  The turn is served on that worker's model (``worker_source`` ``header``).
- **Pinned:** when no header names it, the request's routing key does: a gateway that hashes keys (SMG's
  ``consistent_hashing``, or ``manual``) sends every request with one key to one worker, so the key stands for that
  worker (``worker_source`` ``routing_key``). Keys that share a worker share its cache, which this cannot see:
  predictions are then a lower bound, and the ledger says so by the source.
- **Unknown:** neither: the turn runs on the single-server model (``worker_source`` ``unknown``).

A worker went away when a request to it got a gateway error (502, 503, 504 naming it), or when a session's turn
moved off it and the gateway's worker list (SMG: ``GET /workers``) says it is unhealthy or gone: the turn is then
``worker_lost``, not ``worker_changed``, and the worker's model is dropped (should it come back, it is empty).

Each request gets a routing key unless it carries one already: the session's id (or its digest when it is not a
short printable ASCII string), so a session's turns stay on one worker. A fork family shares a key: send the prime
and its siblings with one routing key header (or in one session), and they land where the parent is cached.

What a worker renders is the body the gateway forwards. SMG forwards the bytes sent under ``round_robin`` and
``consistent_hashing``, but under ``cache_aware`` it reads a chat request into its own request type (to route it by
its text) and forwards that type's serialization: each tool's function then has its keys in the type's order (name,
description, parameters, strict), and SGLang renders them in the order it receives them. ``Cluster(retypes=True)``
predicts from that body: without it, past the first tool the worker's tokens are not the ones the client's model
renders, the worker's KV events never name the model's paths, and the worker's evictions never reach the model.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import httpx

SMG_WORKER_HEADER = "x-smg-routed-worker-id"
SMG_ROUTING_KEY_HEADER = "x-smg-routing-key"
SMG_WORKERS_PATH = "/workers"
MAX_ROUTING_KEY_BYTES = 128
"""SMG ignores longer routing keys."""
SMG_RETYPING_POLICIES = ("cache_aware",)
"""SMG's policies under which it forwards its own serialization of a chat request, not the bytes sent (measured on
SMG 1.13.0 for ``cache_aware``, ``round_robin`` and ``consistent_hashing``)."""
SMG_FUNCTION_KEYS = ("name", "description", "parameters", "strict")
"""A tool's function keys in the order SMG's request type writes them."""


@dataclass(frozen=True)
class Cluster:
    """How a gateway tells the client its workers apart: the header naming the worker that served a response, and
    the header a routing key goes in (None for either turns it off). The defaults are SMG's."""

    worker_header: str | None = SMG_WORKER_HEADER
    routing_key_header: str | None = SMG_ROUTING_KEY_HEADER
    workers_path: str | None = SMG_WORKERS_PATH
    """Where the gateway lists its workers and their health: asked when a session's turn lands on another worker
    than its previous turn, to tell a worker that went away (``worker_lost``) from a routing choice."""
    retypes: bool = False
    """Whether the gateway forwards its own serialization of a chat request (SMG under ``cache_aware``,
    :data:`SMG_RETYPING_POLICIES`): the turns are predicted from the body as :func:`retyped` writes it."""

    def routing_key(self, request: httpx.Request, session: str) -> str | None:
        """The request's own routing key, else the session's (None when routing keys are off)."""
        if self.routing_key_header is None:
            return None
        return request.headers.get(self.routing_key_header) or session_key(session)

    def worker(self, response_headers: httpx.Headers, routing_key: str | None) -> tuple[str | None, str]:
        """``(worker, source)`` of a response: the worker the gateway names, else the routing key's, else None."""
        told = response_headers.get(self.worker_header) if self.worker_header else None
        if told:
            return told, "header"
        if routing_key is not None:
            return f"routing-key:{routing_key}", "routing_key"
        return None, "unknown"

    def gone(self, gateway: httpx.URL, worker: str) -> bool:
        """Whether the gateway at ``gateway`` lists ``worker`` as unhealthy, or no longer lists it (False when it
        cannot say: no list, or the list cannot be read)."""
        if self.workers_path is None:
            return False
        try:
            listing = httpx.get(gateway.copy_with(path=self.workers_path, query=None), timeout=5).json()
            health = {str(entry["url"]): bool(entry.get("is_healthy", True)) for entry in listing["workers"]}
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            return False
        return not health.get(worker.partition("@")[0], False)  # SMG names a data-parallel rank as URL@rank


def session_key(session: str) -> str:
    """A stable routing key for ``session``: itself when it is short printable ASCII, else its digest."""
    if session.isascii() and session.isprintable() and len(session) <= MAX_ROUTING_KEY_BYTES:
        return session
    return "sha256-" + hashlib.sha256(session.encode()).hexdigest()[:40]


def retyped(request: dict[str, Any]) -> dict[str, Any]:
    """``request`` as SMG forwards it when it re-serializes it, in what SGLang renders of it: each tool's function
    with its keys in SMG's order (:data:`SMG_FUNCTION_KEYS`, those sent), any others after them. That is the one
    difference measured in the prompts of tool-using agent sessions (``bench/cluster.py``); the nested parameters
    keep the order sent."""
    tools = request.get("tools")
    if not isinstance(tools, list):
        return request
    return {**request, "tools": [_retyped_tool(tool) for tool in tools]}


def _retyped_tool(tool: Any) -> Any:
    function = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(function, dict):
        return tool
    ordered = {key: function[key] for key in SMG_FUNCTION_KEYS if key in function}
    return {**tool, "function": {**ordered, **{k: v for k, v in function.items() if k not in ordered}}}
