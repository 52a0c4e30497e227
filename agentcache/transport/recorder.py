"""Record the requests a transport sends as a trace (docs/trace-format.md), for ``agentcache explain`` later.

Headers are never recorded, so neither are ``Authorization``, ``x-api-key`` or any other header credential; a
credential in the body (an ``api_key`` field, a ``Bearer`` token in ``metadata``) is replaced by
:func:`agentcache.redact.redact` whatever ``record_content`` says. With ``record_content=False`` every text a
person or tool wrote (message contents, tool-call arguments, the system prompt) is replaced by a marker
(:func:`agentcache.redact.redact_conversation`): equal texts stay equal, a changed one shows as changed, and a
system prompt keeps where and what kind of value changed, so the drift analysis of the trace gives the causes the
live ledger gives while the trace holds no content.

A trace holds what was sent: a body the middleware passed through because its parse would change it keeps its
numbers as written, and one that repeats a key (which no line can hold twice) is an ``unrecorded`` line saying
why (docs/trace-format.md).
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from agentcache.canon.lossless import check_parse, exact_loads
from agentcache.errors import RequestError
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
        request, unkept = _as_sent(call)
        try:
            if request is None:
                self._append({"session": call.session, "unrecorded": unkept, "ts": call.started, "turn": turn.turn})
            else:
                extra: dict[str, Any] = {} if call.diagnosis is None else {"diagnosis": call.diagnosis}
                if call.worker is not None:
                    extra["worker"] = call.worker
                if not call.evaluated:
                    extra["evaluated"] = False
                self.write(
                    call.session,
                    request,
                    call.usage,
                    call.started,
                    turn=turn.turn,
                    canonicalized=turn.canonicalized,
                    **extra,
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
        self._append(line)

    def _append(self, line: dict[str, Any]) -> None:
        data = orjson.dumps(redact(line, CONVERSATION)) + b"\n"
        with self._lock, self.path.open("a+b") as handle:  # "a+": writes still append, and the end can be read
            handle.write(_after_last_line(handle) + data)


def _as_sent(call: Call) -> tuple[dict[str, Any] | None, str | None]:
    """The body to record as the agent sent it, or None and why it cannot be.

    Its parse says what was sent, unless the middleware passed the body through because the parse changes it (a
    number beyond a double or 64 bits, a repeated key): the trace must hold what was sent. Numbers are then kept
    as written; a repeated key cannot be, since a trace line is one JSON object whose credentials are found in
    its parse."""
    if call.passthrough is None:
        return call.original, None
    raw = call.request.content
    try:
        check_parse(raw, call.original)
        return call.original, None
    except RequestError:
        pass
    try:
        return exact_loads(raw), None
    except RequestError as exc:
        return None, f"the body as sent has no faithful record ({exc})"


def _after_last_line(handle: BinaryIO) -> bytes:
    """What to write before a new line: a newline when the file ends in part of a line, else nothing."""
    end = handle.seek(0, os.SEEK_END)
    if end == 0:
        return b""
    handle.seek(end - 1)
    return b"" if handle.read(1) == b"\n" else b"\n"
