"""Record the requests a transport sends as a trace (docs/trace-format.md), for ``agentcache explain`` later.

Headers are never recorded, so neither are ``Authorization``, ``x-api-key`` or any other header credential; a
credential in the body (an ``api_key`` field, a ``Bearer`` token in ``metadata``) is replaced by
:func:`agentcache.redact.redact` whatever ``record_content`` says. With
``record_content=False`` every text a person or tool wrote (message contents, tool-call arguments, the system
prompt) is replaced by a digest of the same text: equal texts stay equal and a changed one still shows as
changed, so the drift analysis of the trace keeps its causes while the trace holds no content.
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from agentcache.redact import redact
from agentcache.transport.call import Call, TurnListener
from agentcache.transport.ledger import Turn

_CONTENT_KEYS = frozenset(
    {"content", "text", "arguments", "system", "thinking", "reasoning", "reasoning_content", "refusal", "data", "url"}
)
"""Keys whose string values are what a person, a tool or the model wrote (``data`` and ``url``: images)."""
_STRUCTURED_KEYS = frozenset({"input", "arguments"})
_CONVERSATION = _CONTENT_KEYS | _STRUCTURED_KEYS
"""What ``record_content=True`` keeps verbatim: no credential-shaped value is searched for in it (credential-shaped
fields are still replaced)."""


class TraceRecorder(TurnListener):
    """Appends one JSON line per request to ``path`` (thread-safe; the file is opened per write). As a listener
    of the middleware, it writes each turn whose body was JSON, as the agent sent it.

    A file that ends in part of a line (a crash or a full disk mid-write) gets a newline first, so that one
    broken line never swallows the next record: each write looks at the file's last byte, under the lock."""

    def __init__(self, path: str | Path, *, record_content: bool = True) -> None:
        self.path = Path(path)
        self.record_content = record_content
        self._lock = threading.Lock()

    def on_turn(self, call: Call, turn: Turn) -> None:
        if call.original is None:
            return
        try:
            self.write(
                call.session, call.original, call.usage, call.started, turn=turn.turn, canonicalized=turn.canonicalized
            )
        except OSError as exc:  # a full disk must not fail the agent's request
            warnings.warn(f"agentcache: trace {self.path} not written: {exc}", stacklevel=2)

    def write(
        self,
        session: str,
        request: Mapping[str, Any],
        usage: Mapping[str, Any] | None,
        ts: float,
        **extra: Any,
    ) -> None:
        line: dict[str, Any] = {"session": session, "request": request if self.record_content else _redact(request)}
        if usage is not None:
            line["usage"] = usage
        line.update(ts=ts, **extra)
        data = orjson.dumps(redact(line, _CONVERSATION)) + b"\n"
        with self._lock, self.path.open("a+b") as handle:  # "a+": writes still append, and the end can be read
            handle.write(_after_last_line(handle) + data)


def _after_last_line(handle: BinaryIO) -> bytes:
    """What to write before a new line: a newline when the file ends in part of a line, else nothing."""
    end = handle.seek(0, os.SEEK_END)
    if end == 0:
        return b""
    handle.seek(end - 1)
    return b"" if handle.read(1) == b"\n" else b"\n"


def _redact(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request with its conversation (``messages``, ``system``) redacted; tools and parameters kept."""
    return {k: _redact_value(v, k) if k in ("messages", "system") else v for k, v in request.items()}


def _redact_value(value: Any, key: str | None) -> Any:
    if key in _CONTENT_KEYS and isinstance(value, str):
        return _digest(value)
    if key in _STRUCTURED_KEYS and isinstance(value, (dict, list)):  # Anthropic tool_use input, parsed arguments
        return _digest(orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode())
    if isinstance(value, Mapping):
        return {k: _redact_value(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_value(v, key) for v in value]
    return value


def _digest(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"[redacted {len(text)} chars sha256:{digest}]"
