"""Reading a body's JSON text without changing what it says: the numbers a parse would turn into others.

orjson parses at C speed, but a valid JSON text can say more than its parse keeps:

- an integer outside [-2**63, 2**64 - 1] becomes the nearest double (``123456789012345678901234567890`` is sent
  back as ``1.2345678901234568e+29``);
- a decimal with more digits than a double holds, or beyond its range, becomes that double (``0.1000000000000000001``
  as ``0.1``, ``1e-400`` as ``0.0``), and the integer ``-0`` becomes ``0``.

Re-serializing such a parse would send the server another request, so :func:`check_parse` refuses it, with the
JSON path of what would change. Only bodies that need it pay for the slow part: a body that orjson writes back
byte for byte (what httpx and the OpenAI and Anthropic SDKs send) is proven intact by that comparison alone.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

import orjson

from agentcache.canon.jsonvalue import child_path
from agentcache.errors import InexactNumberError, NestingTooDeepError

_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


class _Changed(ValueError):
    """Raised by the parse hooks on a number that would not survive; the caller locates it."""


def check_parse(raw: bytes, value: Any) -> None:
    """Raise a :class:`~agentcache.errors.RequestError` naming the first number of ``raw`` that ``value``, its
    orjson parse, holds as another number; return when ``value`` says what ``raw`` says."""
    try:
        again = orjson.dumps(value)
    except orjson.JSONEncodeError:  # orjson parses deeper nesting than it writes
        raise NestingTooDeepError(
            "$", "nesting deeper than 255 levels, more than a canonical body can hold", "flatten the body"
        ) from None
    if again == raw:  # every number is written back as it was written
        return
    text = raw.decode()  # orjson has checked the UTF-8
    try:
        _EXACT_NUMBERS.decode(text)
    except _Changed:
        _locate(json.loads(text, parse_float=_Number, parse_int=_Number), "$")


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
    if digits <= 20 and _INT_MIN <= int(token) <= _INT_MAX:
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


class _Number(str):
    """A number token as written, from the slow parse that locates a change."""


def _locate(node: Any, path: str) -> None:
    if type(node) is dict:
        for key, item in node.items():
            _locate(item, child_path(path, key))
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
