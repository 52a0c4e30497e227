"""Record the requests a transport sends as a trace (docs/trace-format.md), for ``agentcache explain`` later.

Headers are never recorded, so neither are ``Authorization``, ``x-api-key`` or any other header credential; a
credential in the body (an ``api_key`` field, a ``Bearer`` token in ``metadata``) is replaced by
:func:`agentcache.redact.redact` whatever ``record_content`` says. With ``record_content=False`` every text a
person or tool wrote (message contents, tool-call arguments, the system prompt) is replaced by a marker
(:func:`agentcache.redact.redact_conversation`): equal texts stay equal, a changed one shows as changed, and a
system prompt keeps where and what kind of value changed, so the drift analysis of the trace gives the causes the
live ledger gives while the trace holds no content.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from agentcache.redact import CONVERSATION, redact, redact_conversation
from agentcache.transport.call import Call, TurnListener
from agentcache.transport.ledger import Turn


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
        body = request if self.record_content else redact_conversation(request)
        line: dict[str, Any] = {"session": session, "request": body}
        if usage is not None:
            line["usage"] = usage
        line.update(ts=ts, **extra)
        data = orjson.dumps(redact(line, CONVERSATION)) + b"\n"
        with self._lock, self.path.open("a+b") as handle:  # "a+": writes still append, and the end can be read
            handle.write(_after_last_line(handle) + data)


def _after_last_line(handle: BinaryIO) -> bytes:
    """What to write before a new line: a newline when the file ends in part of a line, else nothing."""
    end = handle.seek(0, os.SEEK_END)
    if end == 0:
        return b""
    handle.seek(end - 1)
    return b"" if handle.read(1) == b"\n" else b"\n"
