"""Parse request bodies without parsing again the tool list an agent re-sends, byte for byte, every turn.

A tool list with rich schemas is most of a request's JSON objects (20 tools: about 380 of a body's 420), and
parsing it allocates them all on every request. Allocations are what trigger CPython's garbage collector, and
each collection promotes whatever is alive at that moment, other requests in flight included: the full
collections that follow pause the event loop for tens of milliseconds. So the parse of a tool list is kept by its
exact bytes, and a body that holds those bytes is parsed with a short marker in their place.

What goes out never depends on this: the body's value is the one ``orjson.loads`` gives, and it is checked to say
exactly what the body's bytes say on the shorter body. The kept lists are shared between requests, read-only like
everything canonicalization reads; their bytes go along with the value, so canonicalization need not write them
again.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import orjson

#: A JSON string that stands for the kept tool list while the rest of a body is parsed. A body that holds it
#: already is parsed whole.
_MARK = "\x00agentcache-tool-list"
_MARK_JSON = orjson.dumps(_MARK)
_KEY = b'"tools":'
#: Splices tried on one body before it is parsed whole: a body that nests copies of a kept list under ``tools``
#: keys (tree-search states, say) must not cost a parse per copy.
_TRIES = 2


class Parsed(NamedTuple):
    """A body's parse, as :meth:`ToolListParses.loads` gives it."""

    value: Any
    """``orjson.loads(body)``."""
    checked: bool
    """Whether ``value`` is shown already to say exactly what the body says
    (:func:`~agentcache.canon.lossless.check_parse`)."""
    tools_json: bytes | None
    """``orjson.dumps(value["tools"])``, when it is known without writing it (a kept list's bytes)."""


class ToolListParses:
    """The parsed ``tools`` of the last few distinct tool lists, by their exact bytes (compact JSON, as orjson and
    httpx write it: a body written with other spacing is parsed whole, as before)."""

    def __init__(self, keep: int = 4) -> None:
        self._keep = keep
        self._recent: tuple[tuple[bytes, list[Any]], ...] = ()
        """Newest first. Replaced whole, never edited, so concurrent readers see a consistent tuple."""

    def loads(self, body: bytes) -> Parsed:
        """``orjson.loads(body)``, with a kept tool list in place of its bytes when ``body`` holds them as its
        top-level ``tools``. Raises ``orjson.JSONDecodeError`` as ``orjson.loads`` does."""
        recent = self._recent
        tries = _TRIES if recent else 0
        at = body.find(_KEY) if tries else -1
        while at >= 0 and tries:
            start = at + len(_KEY)
            for raw, tools in recent:
                if body.startswith(raw, start):
                    tries -= 1
                    value = _spliced(body, start, raw, tools)
                    if value is not None:
                        return Parsed(value, True, raw)
                    break
            at = body.find(_KEY, start)
        value = orjson.loads(body)
        found = value.get("tools") if type(value) is dict and _KEY in body else None  # a spaced body is never spliced
        if type(found) is list and found and all(type(tool) is dict for tool in found):
            raw = orjson.dumps(found)
            if raw in body and all(raw != kept for kept, _ in recent):
                self._recent = ((raw, found), *recent[: self._keep - 1])
            return Parsed(value, False, raw)
        return Parsed(value, False, None)


def _spliced(body: bytes, start: int, raw: bytes, tools: list[Any]) -> Any:
    """``body`` parsed with the marker for the ``raw`` at ``start``, and ``tools`` put in its place; None when
    ``raw`` is not shown to be the top-level tools value there, or the rest of the body is not as orjson writes it.

    The rest written back byte for byte holds no repeated key or changed number
    (:func:`~agentcache.canon.lossless.check_parse`), and writes a string equal to the marker one way only: found
    once, the marker is the splice's, so a top-level tools value equal to it stood for the kept list, which orjson
    writes back as ``raw``. The whole body is then exactly what orjson writes of the value returned."""
    spliced = b"".join((body[:start], _MARK_JSON, body[start + len(raw) :]))
    try:
        value = orjson.loads(spliced)
        if type(value) is not dict or value.get("tools") != _MARK or orjson.dumps(value) != spliced:
            return None
    except (orjson.JSONDecodeError, orjson.JSONEncodeError):  # found inside a string; or the body's own fault,
        return None  # which the caller finds and names when it parses the body whole
    if spliced.count(_MARK_JSON) != 1:
        return None
    value["tools"] = tools
    return value
