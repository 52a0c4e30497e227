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
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import httpx

SMG_WORKER_HEADER = "x-smg-routed-worker-id"
SMG_ROUTING_KEY_HEADER = "x-smg-routing-key"
SMG_WORKERS_PATH = "/workers"
MAX_ROUTING_KEY_BYTES = 128
"""SMG ignores longer routing keys."""


@dataclass(frozen=True)
class Cluster:
    """How a gateway tells the client its workers apart: the header naming the worker that served a response, and
    the header a routing key goes in (None for either turns it off). The defaults are SMG's."""

    worker_header: str | None = SMG_WORKER_HEADER
    routing_key_header: str | None = SMG_ROUTING_KEY_HEADER
    workers_path: str | None = SMG_WORKERS_PATH
    """Where the gateway lists its workers and their health: asked when a session's turn lands on another worker
    than its previous turn, to tell a worker that went away (``worker_lost``) from a routing choice."""

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
