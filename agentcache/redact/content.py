"""The conversation out of a trace recorded with ``record_content=False``, and what the drift analysis needs kept.

Each text a person, a tool or the model wrote becomes a marker (docs/trace-format.md)::

    [redacted 43 chars sha256:<16> canonical:<16> lines:text=<8>,timestamp=<8>,text=<8>/text=<8>]

- ``sha256``: a digest of the text. Equal texts give equal markers and a changed text a changed one, so
  ``explain`` still finds where each turn diverged.
- ``canonical``, when canonicalization changes the text: a digest of the canonical text, so that a change of line
  endings or Unicode form is still a ``whitespace`` cause, not an edit.
- ``lines``, for a system prompt only: each line (``/`` between lines) cut into pieces, each named by its kind: a
  volatile value (:func:`~agentcache.canon.find_volatile`: ``timestamp``, ``uuid``, ...), a ``number``, or the
  ``text`` between them. Each piece's digest is chained from the start of the text, so the first changed piece,
  its kind and its line are known, and with them the cause the real text gives, while a short piece (a number)
  cannot be guessed without all the text before it.

Digests are the first bits of SHA-256 in base32 (``a``-``z``, ``2``-``7``), a form no volatile-value pattern
matches: neither the drift classifier nor ``relocate_volatile`` takes a marker for an id or a timestamp. The
drift classifier reads markers back with :func:`comparable` and :func:`redacted_change`.
"""

from __future__ import annotations

import base64
import bisect
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from agentcache.canon import canonicalize, find_volatile
from agentcache.errors import AgentCacheError

TEXT_KEYS = frozenset(
    {"content", "text", "arguments", "system", "thinking", "reasoning", "reasoning_content", "refusal", "data", "url"}
)
"""Keys whose string values are what a person, a tool or the model wrote (``data`` and ``url``: images)."""
STRUCTURED_KEYS = frozenset({"input", "arguments"})
"""Keys whose object values were written by the model: Anthropic's tool input, parsed tool-call arguments."""
CONVERSATION = TEXT_KEYS | STRUCTURED_KEYS
"""Every key the conversation is under."""
NUMBER = re.compile(r"\d+")
"""A number, as the drift classifier reads a counter."""

_MARKER = re.compile(
    r"\[redacted (?P<chars>\d+) chars sha256:(?P<sha>[0-9a-z]+)(?: canonical:(?P<canonical>[0-9a-z]+))?"
    r"(?: lines:(?P<lines>[0-9a-z_=,/]*))?\]"
)
_TEXT, _NUMBER = "text", "number"
_LINE = re.compile(r"[^\n]*\n|[^\n]+")


def redact_conversation(request: Mapping[str, Any]) -> dict[str, Any]:
    """The request with its conversation (``messages``, ``system``) turned into markers; the rest kept as it is."""
    canonical = _canonical(request)
    out = dict(request)
    if "system" in request:
        out["system"] = _redact(request["system"], "system", canonical.get("system"), system=True)
    messages = request.get("messages")
    if isinstance(messages, list):
        canonical_messages = canonical.get("messages")
        out["messages"] = [
            _redact(message, None, _item(canonical_messages, index), system=index == 0 and _is_system(message))
            for index, message in enumerate(messages)
        ]
    return out


def _canonical(request: Mapping[str, Any]) -> dict[str, Any]:
    """The canonical form of the conversation, to walk beside it; empty when it cannot be canonicalized."""
    conversation = {key: request[key] for key in ("messages", "system") if key in request}
    try:
        return canonicalize(conversation)
    except AgentCacheError:
        return {}


def _is_system(message: Any) -> bool:
    return isinstance(message, Mapping) and message.get("role") in ("system", "developer")


def _item(values: Any, index: int) -> Any:
    return values[index] if isinstance(values, list) and index < len(values) else None


def _redact(value: Any, key: str | None, canonical: Any, system: bool) -> Any:
    """``value`` with its texts as markers; ``canonical`` is the same place in the canonical conversation."""
    if key in TEXT_KEYS and isinstance(value, str):
        return _marker(value, canonical if isinstance(canonical, str) else value, system)
    if key in STRUCTURED_KEYS and isinstance(value, (dict, list)):
        same = canonical if isinstance(canonical, type(value)) else value
        return _marker(orjson.dumps(value).decode(), orjson.dumps(same, option=orjson.OPT_SORT_KEYS).decode(), False)
    if isinstance(value, Mapping):
        within = canonical if isinstance(canonical, Mapping) else {}
        return {k: _redact(v, k, within.get(k), system) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact(v, key, _item(canonical, i), system) for i, v in enumerate(value)]
    return value


def _marker(text: str, canonical: str, lines: bool) -> str:
    parts = [f"[redacted {len(text)} chars sha256:{_digest(text)}"]
    if canonical != text:
        parts.append(f"canonical:{_digest(canonical)}")
    if lines:
        parts.append("lines:" + "/".join(",".join(f"{kind}={code}" for kind, code in line) for line in _pieces(text)))
    return " ".join(parts) + "]"


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _digest(text: str) -> str:
    """The first 80 bits of the text's SHA-256, in base32."""
    return _base32(hashlib.sha256(_bytes(text)).digest()[:10])


def _base32(data: bytes) -> str:
    """Lowercase base32 of ``data`` (a multiple of 5 bytes: no padding): letters and 2-7, never volatile-shaped."""
    return base64.b32encode(data).decode().lower()


def _pieces(text: str) -> list[list[tuple[str, str]]]:
    """Each line's pieces as (kind, chained digest): volatile values, numbers outside them, and the text between."""
    values = [(span.start, span.end, span.kind) for span in find_volatile(text)]
    starts = [start for start, _, _ in values]
    for match in NUMBER.finditer(text):
        at = bisect.bisect_right(starts, match.start()) - 1
        if at < 0 or values[at][1] <= match.start():  # not inside a volatile value
            values.append((match.start(), match.end(), _NUMBER))
    lines: list[list[tuple[str, str]]] = [[]]
    chain = b""

    def add(kind: str, piece: str) -> None:
        nonlocal chain
        chain = hashlib.sha256(chain + kind.encode() + b"\0" + _bytes(piece)).digest()
        lines[-1].append((kind, _base32(chain[:5])))

    position = 0
    for start, end, kind in [*sorted(values), (len(text), len(text), "")]:  # the last: the text after them
        for line in _LINE.findall(text, position, start):
            add(_TEXT, line)
            if line.endswith("\n"):
                lines.append([])
        if kind:
            add(kind, text[start:end])
        position = end
    return [line for line in lines if line]


def comparable(value: Any) -> Any:
    """``value`` with each marker reduced to the digest of its canonical text: two values equal after
    canonicalization stay equal, redacted or not, so a whitespace change is told from an edit."""
    if isinstance(value, str):
        match = _MARKER.fullmatch(value)
        return value if match is None else f"[redacted sha256:{match['canonical'] or match['sha']}]"
    if isinstance(value, Mapping):
        return {k: comparable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [comparable(v) for v in value]
    return value


@dataclass(frozen=True)
class RedactedChange:
    """Where two redacted system prompts first differ, as far as their markers tell."""

    kind: str | None
    """What the first changed piece is: a volatile kind (``timestamp``, ``uuid``, ...), ``counter`` (a number
    before and after), or None (text, or markers without pieces)."""
    line: int | None
    """Its 1-based line in the prompt, when known."""


def redacted_change(old: str, new: str, offset: int) -> RedactedChange | None:
    """What changed at ``offset``, the first differing character of two rendered texts, when it lies in a marker
    of either; None when it does not (the texts are read as they are)."""
    before, after = _marker_at(old, offset), _marker_at(new, offset)
    if before is None and after is None:
        return None
    if before is None or after is None or before["lines"] is None or after["lines"] is None:
        return RedactedChange(None, None)
    was, now = _flat(before["lines"]), _flat(after["lines"])
    index = next((i for i, (a, b) in enumerate(zip(was, now, strict=False)) if a.digest != b.digest), None)
    if index is None:  # one is the other with pieces added at its end
        index = min(len(was), len(now))
    old_piece, new_piece = _item(was, index), _item(now, index)
    piece = new_piece or old_piece
    if piece is None:
        return RedactedChange(None, None)
    # As the classifier reads the real texts: a volatile value on either side names the change, a number on both.
    volatile = [p.kind for p in (new_piece, old_piece) if p is not None and p.kind not in (_TEXT, _NUMBER)]
    numbers = old_piece is not None and new_piece is not None and old_piece.kind == new_piece.kind == _NUMBER
    return RedactedChange(volatile[0] if volatile else "counter" if numbers else None, piece.line)


def _marker_at(text: str, offset: int) -> re.Match[str] | None:
    return next((m for m in _MARKER.finditer(text) if m.start() <= offset < m.end()), None)


class _Piece(NamedTuple):
    line: int
    kind: str
    digest: str


def _flat(lines: str) -> list[_Piece]:
    """Each piece of a marker's ``lines``, in order."""
    return [
        _Piece(number, kind, digest)
        for number, line in enumerate(lines.split("/"), start=1)
        for kind, _, digest in (piece.partition("=") for piece in line.split(",") if piece)
    ]
