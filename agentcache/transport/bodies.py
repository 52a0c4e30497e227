"""Parse request bodies without parsing again the tool list an agent re-sends, byte for byte, every turn.

A tool list with rich schemas is most of a request's JSON objects (20 tools: about 380 of a body's 420), and
parsing it allocates them all on every request. Allocations are what trigger CPython's garbage collector, and
each collection promotes whatever is alive at that moment, other requests in flight included: the full
collections that follow pause the event loop for tens of milliseconds. So the parse of a tool list is kept by its
exact bytes, and a body that holds those bytes is parsed with a short marker in their place.

What goes out never depends on this: the body's value is the one ``orjson.loads`` gives, and it is checked to say
exactly what the body's bytes say (:func:`~agentcache.canon.lossless.check_parse`) on the shorter body. The kept
lists are shared between requests, read-only like everything canonicalization reads.
"""

from __future__ import annotations

from typing import Any

import orjson

from agentcache.canon.lossless import check_parse
from agentcache.errors import RequestError

#: A JSON string that stands for the kept tool list while the rest of a body is parsed. A body that holds it
#: already is parsed whole.
_MARK = "\x00agentcache-tool-list"
_MARK_JSON = orjson.dumps(_MARK)
_KEY = b'"tools":'
#: Splices tried on one body before it is parsed whole: a body that nests copies of a kept list under ``tools``
#: keys (tree-search states, say) must not cost a parse per copy.
_TRIES = 2


class ToolListParses:
    """The parsed ``tools`` of the last few distinct tool lists, by their exact bytes (compact JSON, as orjson and
    httpx write it: a body written with other spacing is parsed whole, as before)."""

    def __init__(self, keep: int = 4) -> None:
        self._keep = keep
        self._recent: tuple[tuple[bytes, list[Any]], ...] = ()
        """Newest first. Replaced whole, never edited, so concurrent readers see a consistent tuple."""

    def loads(self, body: bytes) -> tuple[Any, bool]:
        """``orjson.loads(body)``, with a kept tool list in place of its bytes when ``body`` holds them as its
        top-level ``tools``; and whether the value is checked already to say exactly what ``body`` says
        (:func:`~agentcache.canon.lossless.check_parse`; a kept list is, by how it was kept). Raises
        ``orjson.JSONDecodeError`` as ``orjson.loads`` does."""
        recent = self._recent
        tries = _TRIES if recent and _MARK_JSON not in body else 0
        at = body.find(_KEY) if tries else -1
        while at >= 0 and tries:
            start = at + len(_KEY)
            for raw, tools in recent:
                if body.startswith(raw, start):
                    tries -= 1
                    value = _spliced(body, start, raw, tools)
                    if value is not None:
                        return value, True
                    break
            at = body.find(_KEY, start)
        value = orjson.loads(body)
        found = value.get("tools") if type(value) is dict and _KEY in body else None  # a spaced body is never spliced
        if type(found) is list and found and all(type(tool) is dict for tool in found):
            raw = orjson.dumps(found)
            if raw in body and all(raw != kept for kept, _ in recent):
                self._recent = ((raw, found), *recent[: self._keep - 1])
        return value, False


def _spliced(body: bytes, start: int, raw: bytes, tools: list[Any]) -> Any:
    """``body`` parsed with the marker for the ``raw`` at ``start``, and ``tools`` put in its place; None when
    ``raw`` is not the top-level tools value there, or the rest of the body does not parse exactly."""
    spliced = b"".join((body[:start], _MARK_JSON, body[start + len(raw) :]))
    try:
        value = orjson.loads(spliced)
        # The marker can only have come from the splice: found as the top-level tools value, it stood for the
        # kept list there, which orjson writes back as ``raw``. So the rest checked exact means the whole is.
        if type(value) is not dict or value.get("tools") != _MARK:
            return None
        check_parse(spliced, value)
    except (orjson.JSONDecodeError, RequestError):  # found inside a string; or the body's own fault, which the
        return None  # caller finds and names when it parses the body whole
    value["tools"] = tools
    return value
