"""Reading a body's JSON text without changing what it says: repeated keys, and numbers a parse turns into others.

orjson parses at C speed, but a valid JSON text can say more than its parse keeps:

- of a key repeated in one object, the last copy is kept and the others are dropped (``"temperature": 0,
  "temperature": 2`` is read as 2; another parser may read 0, or refuse the body);
- an integer outside [-2**63, 2**64 - 1] becomes the nearest double (``123456789012345678901234567890`` is sent
  back as ``1.2345678901234568e+29``);
- a decimal with more digits than a double holds, or beyond its range, becomes that double (``0.1000000000000000001``
  as ``0.1``, ``1e-400`` as ``0.0``), and the integer ``-0`` becomes ``0``.

Re-serializing such a parse would send the server another request, so :func:`check_parse` refuses it, with the
JSON path of what would change. The byte-level entry points (the transport, ``agentcache canon``) all read
bodies through it. Only bodies that need it pay for the slow part: a body that orjson writes back byte for byte
(what httpx and the OpenAI and Anthropic SDKs send) is proven intact by that comparison alone.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import orjson

from agentcache.canon.jsonvalue import INT_MAX, INT_MIN, child_path
from agentcache.errors import DuplicateKeyError, InexactNumberError, NestingTooDeepError


class _Changed(ValueError):
    """Raised where the fast checks find a repeated key or a number that would not survive; the caller locates
    it."""


def check_parse(raw: bytes, value: Any) -> None:
    """Raise a :class:`~agentcache.errors.RequestError` naming the first repeated key or changed number of
    ``raw`` (in document order) that ``value``, its orjson parse, lost; return when ``value`` says what ``raw``
    says."""
    try:
        again = orjson.dumps(value)
    except orjson.JSONEncodeError:  # orjson parses deeper nesting than it writes
        raise NestingTooDeepError(
            "$", "nesting deeper than 255 levels, more than a canonical body can hold", "flatten the body"
        ) from None
    if again == raw:  # no key was dropped, and every number is written back as it was written
        return
    text = raw.decode()  # orjson has checked the UTF-8
    try:
        if _colons(raw) != again.count(b":"):
            raise _Changed
        _EXACT_NUMBERS.decode(text)
    except _Changed:
        _locate(json.loads(text, object_pairs_hook=_Pairs, parse_float=_Number, parse_int=_Number), "$")


def _colons(raw: bytes) -> int | None:
    """How many colons a JSON text holds, to compare with orjson's writing of its parse; None when the text escapes
    a colon (``\\u003a``), which the count would miss.

    Each key is followed by one colon, and orjson writes a colon inside a string as itself. So, unless the text
    escapes one, the text has as many colons as orjson's writing of its parse, plus at least one for each copy of
    a repeated key that the parse dropped. Counting a byte is a C loop; a parse that tracks keys is not.
    """
    return None if b"\\u003" in raw else raw.count(b":")


def exact_float(token: str) -> float:
    """``parse_float`` hook: the double of a JSON number token, which must denote exactly the decimal written."""
    value = float(token)
    if repr(value) != token and _float_change(token, value) is not None:
        raise _Changed(token)
    return value


def exact_int(token: str) -> int:
    """``parse_int`` hook: the integer of a JSON number token, which a parse must keep as that integer."""
    if _int_change(token) is not None:
        raise _Changed(token)
    return int(token)


#: The numbers alone, checked in C with a hook per number: a third slower than orjson's parse.
_EXACT_NUMBERS = json.JSONDecoder(parse_float=exact_float, parse_int=exact_int)


def _int_change(token: str) -> str | None:
    """What orjson makes of an integer token when that is another number (``-0`` loses its sign), else None."""
    digits = len(token) - token.startswith("-")
    if digits < 19:
        return "0" if token == "-0" else None
    if digits <= 20 and INT_MIN <= int(token) <= INT_MAX:
        return None
    return orjson.dumps(float(token)).decode()


def _float_change(token: str, value: float) -> str | None:
    """How orjson writes ``value``, the double of ``token``, when that is another number, else None.

    orjson writes the shortest digits that read back as the double, so the number survives exactly when those
    digits denote the decimal written: ``1E2`` as ``100.0`` does, ``0.1000000000000000001`` as ``0.1`` does not.
    """
    written = orjson.dumps(value).decode()  # "null" for a value past a double's range
    if math.isfinite(value) and Decimal(written) == Decimal(token):
        return None
    return written


def exact_loads(raw: bytes) -> Any:
    """The parse of ``raw`` (JSON orjson has read) in which every number that orjson would write otherwise is an
    :class:`orjson.Fragment` of its text, so that ``orjson.dumps`` writes it back as written: for a record of
    a body as it was sent. A repeated key raises :class:`~agentcache.errors.DuplicateKeyError`, since no parse
    keeps both copies."""
    text = raw.decode()
    try:
        return json.loads(text, object_pairs_hook=_unique_pairs, parse_float=_as_written, parse_int=_as_written)
    except _Changed:  # a repeated key: locate it
        _locate(json.loads(text, object_pairs_hook=_Pairs, parse_float=_Number, parse_int=_Number), "$")
        raise AssertionError("a repeated key was found, then not located") from None


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _Changed
    return value


def _as_written(token: str) -> int | float | orjson.Fragment:
    """A number token as orjson writes it back when that is the token itself, else the token kept as written."""
    integer = not any(mark in token for mark in ".eE")
    number = int(token) if integer else float(token)
    changed = _int_change(token) if integer else _float_change(token, number)
    return number if changed is None else orjson.Fragment(token)


class _Number(str):
    """A number token as written, from the slow parse that locates a change."""


class _Pairs(list[tuple[str, Any]]):
    """An object's (key, value) pairs as written, repeats included, from the slow parse that locates a change."""


def _locate(node: Any, path: str) -> None:
    if type(node) is _Pairs:
        seen: set[str] = set()
        for key, item in node:
            here = child_path(path, key)
            if key in seen:
                raise DuplicateKeyError(
                    here,
                    f"the key {key!r} appears twice in one object",
                    "keep one copy: which one a server reads is up to its JSON parser",
                )
            seen.add(key)
            _locate(item, here)
    elif type(node) is list:
        for index, item in enumerate(node):
            _locate(item, f"{path}[{index}]")
    elif type(node) is _Number:
        token = str(node)
        integer = not any(mark in token for mark in ".eE")
        written = _int_change(token) if integer else _float_change(token, float(token))
        if written is not None:
            shown = token if len(token) <= 40 else f"{token[:24]}...{token[-8:]} ({len(token)} characters)"
            raise InexactNumberError(
                path,
                f"the number {shown} would reach the server as {written}",
                "send it as a string, or write a number that a 64-bit integer or a double holds exactly",
            )
