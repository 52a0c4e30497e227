"""The JSON value domain: fast C-level serialization, and a slow walk that names what is wrong and where.

Hot paths serialize with orjson (C speed) and walk only what they must transform. When anything is wrong they
raise :class:`Invalid` without a location; the caller then runs :func:`locate`, which walks the whole value with
JSON paths and raises the typed error. Errors are rare, so only they pay for paths.

The accepted domain is what orjson serializes, minus datetimes, dataclasses, NaN/Infinity and integers beyond
64 bits: dicts with string keys, lists and tuples, strings without lone surrogates, ints, finite floats, bools,
None, plus ``uuid.UUID`` (as its string) and ``enum.Enum`` members (as their value), which orjson and the common
SDKs serialize the same way.
"""

from __future__ import annotations

import datetime as _dt
import enum
import math
import uuid
from collections.abc import Callable, Mapping
from typing import Any, NoReturn

import orjson

from agentcache.canon.memo import Entry, built, holds, proven_nulls, serialized
from agentcache.errors import CycleError, InvalidValueError, NestingTooDeepError

_DUMP_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
SORTED_OPTIONS = _DUMP_OPTIONS | orjson.OPT_SORT_KEYS
#: The integers orjson reads and writes as integers (int64 and uint64); beyond them, it refuses or reads a double.
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


class Invalid(Exception):
    """Raised by hot paths on a value outside the domain; the caller runs :func:`locate` to report it."""


def dumps(value: Any) -> bytes:
    """Compact JSON in the value's own key order; orjson's TypeError on values outside its domain."""
    return orjson.dumps(value, option=_DUMP_OPTIONS)


def has_null(raw: bytes) -> bool:
    """Whether compact JSON holds a null token, i.e. whether the value may have hidden a NaN or Infinity."""
    return b"null" in raw and (b":null" in raw or b",null" in raw or b"[null" in raw or raw == b"null")


def null_tokens(raw: bytes, expected: int) -> int:
    """At least the number of null tokens in compact JSON; exact when ``expected`` is, in one scan.

    Counting ``null`` is one scan, and exact unless a string says "null"; then the tokens are counted by what
    precedes them (``:``, ``,``, ``[``, or nothing when ``null`` is the whole text), which a string can still only add
    to, in three more scans.
    """
    count = raw.count(b"null")
    if count == expected:
        return count
    return raw.count(b":null") + raw.count(b",null") + raw.count(b"[null") + (raw == b"null")


def canonical_json(obj: Any) -> bytes:
    """Canonical bytes of a JSON value: UTF-8, object keys sorted, no whitespace.

    Equal JSON values give equal bytes, in any process (no hash seeds involved). Raises a
    :class:`~agentcache.errors.RequestError` subclass naming the JSON path of the first value that is not JSON.

    orjson writes NaN and Infinity as null, so a null in the output must be shown to be a None. A request that
    :func:`~agentcache.canonicalize` returned and nobody edited since (:func:`~agentcache.canon.memo.built`)
    holds none: canonicalization refused them; its tools' JSON is kept from the last time. Elsewhere, when as
    many Nones are found as the output has null tokens, none is left for a NaN;
    :func:`~agentcache.canon.memo.proven_nulls` finds them without walking what canonicalization built (a
    tool-call message's ``"content": null`` is in every history). Otherwise the whole value is walked, to name
    the NaN.
    """
    known = built(obj)
    if known is not None:
        return sourced_json(obj, known.sources, known.memoized)
    try:
        out = orjson.dumps(obj, option=SORTED_OPTIONS)
    except TypeError as exc:
        raise_located(obj, "$", 250, exc)
    if b"null" in out:
        proven = proven_nulls(obj)
        if null_tokens(out, proven) != proven:
            locate(obj, "$", 250)
    return out


def sourced_json(obj: dict[str, Any], sources: Mapping[str, Entry], memoized: frozenset[str]) -> bytes:
    """The canonical bytes of ``obj``, a canonical request as built, whose fields in ``sources`` hold those entries'
    items: the JSON of those in ``memoized`` (the tools) as kept with their memo entry, written once rather than at
    every request that re-sends them, while the field still :func:`~agentcache.canon.memo.holds` the entry's items;
    the others' without the null count (canonicalization refused a NaN there)."""
    parts: list[bytes] = []
    for key in sorted(obj):
        parts += (b",", orjson.dumps(key), b":", _field(sources, memoized, key, obj[key]))
    parts[:1] = [b"{"]  # in place of the first comma; an empty object's only part
    parts.append(b"}")
    return b"".join(parts)  # one copy of the tools' JSON, not one per concatenation


def _field(sources: Mapping[str, Entry], memoized: frozenset[str], key: str, value: Any) -> bytes:
    """One field of a request canonicalization built: see :func:`sourced_json`; a field without a source by
    :func:`canonical_json`."""
    source = sources.get(key)
    if source is None or (key in memoized and not holds(value, source)):
        return canonical_json(value)
    if key in memoized:
        return serialized(source, _sorted)
    return _sorted(value)


def _sorted(value: Any) -> bytes:
    return orjson.dumps(value, option=SORTED_OPTIONS)


def raise_located(value: Any, root: str, max_depth: int, cause: BaseException | None = None) -> NoReturn:
    """Raise the typed error for ``value``; used after a hot path found it invalid without knowing where."""
    locate(value, root, max_depth)
    raise InvalidValueError(root, f"the value cannot be serialized ({cause})", "send plain JSON types")


def locate(value: Any, root: str, max_depth: int) -> None:
    """Walk ``value`` and raise the typed error for the first thing that is not JSON; return if all is well."""
    _locate(value, root, 0, max_depth, set())


def _locate(value: Any, path: str, depth: int, max_depth: int, ancestors: set[int]) -> None:
    """The domain is orjson's: str and int subclasses pass (as their base value), while float, tuple and UUID
    subclasses, and str-subclass keys, are refused, as orjson refuses them."""
    kind = type(value)
    if value is None or kind is bool or kind is uuid.UUID:
        return
    if isinstance(value, str):
        _check_text(value, path)
        return
    if isinstance(value, enum.Enum):
        _locate(value.value, path, depth, max_depth, ancestors)
        return
    if isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            raise InvalidValueError(path, "integer outside the 64-bit range", "send it as a string")
        return
    if kind is float:
        if not math.isfinite(value):
            raise InvalidValueError(path, f"{value!r} is not a JSON number", "send null or a finite number")
        return
    if kind is tuple or isinstance(value, (dict, list)):
        if id(value) in ancestors:
            raise CycleError(path, "this container contains itself", "send a tree: copy the part instead of nesting it")
        if depth >= max_depth:
            raise NestingTooDeepError(
                path,
                f"nesting deeper than {max_depth} levels",
                "flatten the value or raise CanonicalPolicy.max_depth (at most 250)",
            )
        ancestors.add(id(value))
        if isinstance(value, dict):
            for key, item in value.items():
                if type(key) is not str:
                    raise InvalidValueError(
                        path, f"object key {key!r} is a {type(key).__name__}", "JSON keys are plain strings: convert it"
                    )
                _check_text(key, path)
                _locate(item, child_path(path, key), depth + 1, max_depth, ancestors)
        else:
            for index, item in enumerate(value):
                _locate(item, f"{path}[{index}]", depth + 1, max_depth, ancestors)
        ancestors.discard(id(value))
        return
    raise InvalidValueError(path, f"a {kind.__name__} is not JSON", _HINTS.get(kind, _DEFAULT_HINT))


def _check_text(text: str, path: str) -> None:
    if text.isascii():
        return
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidValueError(
            path,
            f"string holds a lone surrogate {text[exc.start]!r} at index {exc.start}",
            "fix the text's decoding (e.g. decode with errors='replace')",
        ) from None


def child_path(path: str, key: str) -> str:
    """JSONPath of ``key`` under ``path``: dotted for identifiers, bracketed and quoted otherwise."""
    if key.isidentifier():
        return f"{path}.{key}"
    return f"{path}[{orjson.dumps(key).decode()}]"


_DEFAULT_HINT = "convert it to a string, number, list or dict first"
_HINTS: dict[type, str] = {
    set: "send a sorted list instead",
    frozenset: "send a sorted list instead",
    bytes: "decode it to str (base64 for binary data)",
    bytearray: "decode it to str (base64 for binary data)",
    _dt.datetime: "format it (isoformat()); keep timestamps out of the prompt prefix",
    _dt.date: "format it (isoformat()); keep dates out of the prompt prefix",
    _dt.time: "format it (isoformat())",
}


def plain(value: Any, room: int) -> Any:
    """Validate a JSON value and return it with object keys sorted; the same object when already canonical.

    ``room`` is the nesting still allowed. Tuples become lists, UUIDs strings, Enum members their value.
    Raises :class:`Invalid` on anything else.
    """
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return map_dict(value, room, plain_item)
    if kind is list:
        return map_list(value, room, plain)
    if kind is float:
        if math.isfinite(value):
            return value
        raise Invalid
    return _plain_other(value, room)


def _plain_other(value: Any, room: int) -> Any:
    if isinstance(value, enum.Enum):
        return plain(value.value, room)
    if isinstance(value, str):
        return str.__str__(value)  # the exact str, whatever the subclass's __str__ says
    if isinstance(value, int):
        return int.__index__(value)
    if type(value) is uuid.UUID:
        return str(value)
    if type(value) is tuple or isinstance(value, list):
        return map_list(list(value), room, plain)
    if isinstance(value, dict):
        return map_dict(dict(value), room, plain_item)
    raise Invalid


def plain_item(key: str, value: Any, room: int) -> Any:
    """:func:`plain` as a keyed walk, for objects whose keys carry no special meaning."""
    return plain(value, room)


Walk = Callable[[Any, int], Any]
KeyedWalk = Callable[[str, Any, int], Any]


def map_dict(value: dict[str, Any], room: int, item_walk: KeyedWalk) -> dict[str, Any]:
    """Apply ``item_walk`` to every (key, value), sort the keys; return ``value`` itself when nothing changed.

    The walk receives the key because the meaning of a value often depends on its name (a ``description`` is
    prose, a ``required`` array is a set).
    """
    if room <= 0:
        raise Invalid
    keys = list(value)
    changed = False
    if len(keys) > 1:
        ordered = sorted(keys)
        if ordered != keys:
            keys, changed = ordered, True
    out = {}
    for key in keys:
        old = value[key]
        new = item_walk(key, old, room - 1)
        out[key] = new
        if new is not old:
            changed = True
    return out if changed else value


def map_list(value: list[Any], room: int, item_walk: Walk) -> list[Any]:
    """Apply ``item_walk`` to every element; return ``value`` itself when nothing changed."""
    if room <= 0:
        raise Invalid
    out = [item_walk(item, room - 1) for item in value]
    if any(new is not old for new, old in zip(out, value, strict=True)):
        return out
    return value


def check_depth(value: Any, room: int) -> None:
    """Raise :class:`Invalid` when a parsed JSON value nests deeper than ``room`` (each dict and list is a level).

    Only containers are visited, so a long text costs no more than a short one."""
    kind = type(value)
    if kind is dict or kind is list:
        if room <= 0:
            raise Invalid
        for item in value.values() if kind is dict else value:
            if type(item) is dict or type(item) is list:
                check_depth(item, room - 1)


def null_paths(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Paths of every null in a parsed JSON value: where an equal-bytes input could hide NaN/Infinity."""
    if value is None:
        return [prefix]
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in null_paths(item, (*prefix, key))]
    if isinstance(value, list):
        return [p for index, item in enumerate(value) for p in null_paths(item, (*prefix, index))]
    return []
