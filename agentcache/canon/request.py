"""Canonical chat requests (OpenAI chat completions and Anthropic Messages bodies).

One walk serves both dialects: the fields they share are handled once, and each field a dialect alone has is
recognized by name (``system`` blocks, ``input_schema``, ``tool_use``/``tool_result`` blocks, ``tool_calls``).
Fields agentcache does not know are validated and passed through untouched.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson

from agentcache.canon.jsonvalue import (
    SORTED_OPTIONS,
    Invalid,
    canonical_json,
    check_depth,
    dumps,
    has_null,
    locate,
    lookup,
    null_paths,
    plain,
    raise_located,
)
from agentcache.canon.memo import Memo
from agentcache.canon.policy import CanonicalPolicy
from agentcache.canon.schema import SchemaCanonicalizer
from agentcache.canon.text import normalize_prose
from agentcache.canon.volatile import split_volatile_lines
from agentcache.errors import BodyTooLargeError, DuplicateToolError, NotAMappingError, RequestShapeError

#: Content blocks whose ``text`` is prose. A tuple, not a set: a block's ``type`` may be a list or an object, which
#: cannot be hashed.
TEXT_BLOCKS = ("text", "input_text", "output_text")
#: Fields holding tool definitions, each an array of objects.
TOOL_FIELDS = ("functions", "tools")
#: Fields holding arrays that the walk needs as lists.
ARRAY_FIELDS = ("messages", *TOOL_FIELDS)


@dataclass(frozen=True)
class _Entry:
    """A memoized canonical value, and where its input had nulls (an equal-bytes input may hold NaN there)."""

    value: Any
    nulls: list[tuple[str | int, ...]]

    def fits(self, value: Any) -> bool:
        """Whether ``value``, whose JSON equals this entry's key, has None at each null (not NaN or Infinity)."""
        try:
            for path in self.nulls:
                if lookup(value, path) is not None:
                    return False
        except (LookupError, TypeError):
            return False
        return True


class _History(NamedTuple):
    """The last message list: its compact JSON, where each message ends in it, and the canonical messages.

    Agents re-send their history every turn with a turn or two added, so the leading messages whose bytes match
    the last list are reused with one comparison instead of a serialization and a memo lookup each.
    """

    raw: bytes
    ends: list[int]
    values: list[Any]
    nulls: list[tuple[int, tuple[str | int, ...]]]
    """(message index, path) of each null, in message order: where an equal-bytes list may hold NaN/Infinity."""

    def reusable(self, messages: list[Any], raw: bytes) -> int:
        """How many leading messages of ``messages``, whose list's compact JSON is ``raw``, can be reused."""
        shared = self._shared(raw, len(messages))
        for index, path in self.nulls:
            if index >= shared:
                break
            try:
                if lookup(messages[index], path) is None:
                    continue
            except (LookupError, TypeError):
                pass
            return index  # a NaN where the last list had a null: that message gets walked, to name it
        return shared

    def _shared(self, raw: bytes, count: int) -> int:
        """How many of the ``count`` leading messages have the same bytes as the last list's.

        A message is a JSON object, which ends at its closing brace, so equal bytes up to the end of a message mean
        equal messages up to there. Agents mostly extend the last list, or drop its last turns to retry, so the
        longest possible run is tried first.
        """
        view = memoryview(self.raw)
        low, high = 0, min(len(self.ends), count)
        middle = high
        while low < high:
            if raw.startswith(view[: self.ends[middle - 1]]):
                low = middle
            else:
                high = middle - 1
            middle = (low + high + 1) // 2
        return low


class Canonicalizer:
    """Canonicalizes requests under one policy, memoizing tools, messages and tool-call arguments by content."""

    def __init__(self, policy: CanonicalPolicy) -> None:
        self.policy = policy
        self.schemas = SchemaCanonicalizer(policy)
        self.tool_lists: Memo[bytes, _Entry] = Memo(256, 64 << 20)
        self.tools: Memo[bytes, _Entry] = Memo(4096, 64 << 20)
        self.formats: Memo[bytes, _Entry] = Memo(256, 16 << 20)
        self.message_memo: Memo[bytes, _Entry] = Memo(65536, 256 << 20)
        self.last_tools: tuple[bytes, _Entry] = (b"", _Entry([], []))
        self.history = _History(b"[]", [], [], [])
        self.arguments: Memo[str, str] = Memo(8192, 16 << 20)

    def canonicalize(self, request: Any) -> dict[str, Any]:
        if type(request) is not dict:
            if not isinstance(request, Mapping):
                raise NotAMappingError(
                    "$",
                    f"the request is {_json_type(request)}, not a JSON object",
                    "pass the parsed body (a dict), e.g. json.loads(body)",
                )
            request = dict(request)
        for key in ARRAY_FIELDS:  # tuples are JSON arrays too
            if isinstance(request.get(key), tuple):
                request = {**request, key: list(request[key])}
        policy = self.policy
        room = policy.max_depth - 1
        tools_raw, messages_raw = self._serialize(request)
        out: dict[str, Any] = {}
        try:
            for key in sorted(request):
                value = request[key]
                if key == "messages":
                    out[key] = self.messages(value, messages_raw)
                elif key in TOOL_FIELDS:
                    out[key] = self.tool_list(value, key, tools_raw[key])
                elif key == "system":
                    out[key] = self.content(self.fresh(value, room).value)
                elif key == "response_format" and isinstance(value, dict):
                    out[key] = self.definition(value, "$.response_format", room, self.formats).value
                elif key in ("response_format", "tool_choice"):
                    out[key] = plain(value, room)
                else:
                    plain(value, room)
                    out[key] = value
        except Invalid:
            raise_located(request, "$", policy.max_depth)
        if policy.relocate_volatile:
            relocate_volatile(out, policy.volatile_role)
        return out

    def _serialize(self, request: dict[str, Any]) -> tuple[dict[str, bytes], bytes]:
        """Serialize in C, validating key types, surrogates and unknown types, and enforce the size limit.

        The compact JSON of each tool field and of the message list is kept: they are the memo keys. The size
        counts each message's JSON, without the list's brackets and commas.
        """
        tools: dict[str, bytes] = {}
        messages_raw = b"[]"
        try:
            rest = dict(request)
            for key in TOOL_FIELDS:
                if key in rest:
                    tools[key] = dumps(rest.pop(key))
            size = sum(map(len, tools.values()))
            if "messages" in rest:
                messages = rest.pop("messages")
                if type(messages) is not list:
                    raise RequestShapeError(
                        "$.messages", f"expected an array of messages, got {_json_type(messages)}", "send a list"
                    )
                messages_raw = dumps(messages)
                size += len(messages_raw) - 1 - max(len(messages), 1)
            size += len(dumps(rest))
        except TypeError as exc:
            raise_located(request, "$", self.policy.max_depth, exc)
        if size > self.policy.max_body_bytes:
            raise BodyTooLargeError(
                "$",
                f"the body is {size:,} bytes of JSON, over the limit of {self.policy.max_body_bytes:,}",
                "raise CanonicalPolicy.max_body_bytes, or send this request as it is",
            )
        return tools, messages_raw

    # -- messages -------------------------------------------------------------------------------------------

    def messages(self, messages: list[Any], raw: bytes) -> list[Any]:
        """The canonical messages: those the last list also began with are reused, the rest are memoized one by
        one, so another conversation interleaved with this one still costs lookups rather than walks."""
        history = self.history
        shared = history.reusable(messages, raw)
        if shared == len(messages):  # the last list, or the start of it (a retry): keep the longer one
            return history.values[:shared]
        values = history.values[:shared]
        ends = history.ends[:shared]
        nulls = history.nulls[: bisect_left(history.nulls, (shared,))]
        end = ends[-1] if ends else 0
        room = self.policy.max_depth - 2
        for index in range(shared, len(messages)):
            message = messages[index]
            # Keys sorted, so one message sent with its keys in any order is one entry; sorting keeps the length.
            message_raw = orjson.dumps(message, option=SORTED_OPTIONS)
            known = self.message_memo.get(message_raw)
            if known is None or not known.fits(message):
                if not isinstance(message, dict):
                    raise RequestShapeError(
                        f"$.messages[{index}]",
                        f"a message must be an object, got {_json_type(message)}",
                        'send {"role": ..., "content": ...}',
                    )
                known = self.fresh(message, room, message_raw)
                self.message(known.value)
                self.message_memo.put(message_raw, known)
            values.append(known.value)
            end += 1 + len(message_raw)  # the "[" or "," before the message, then the message
            ends.append(end)
            nulls.extend((index, path) for path in known.nulls)
        self.history = _History(raw, ends, values, nulls)
        return list(values)

    def fresh(self, value: Any, room: int, raw: bytes | None = None) -> _Entry:
        """A private copy of ``value`` for the walks below to edit in place and for the memo to keep: nothing the
        caller holds, and may edit later, is kept. ``raw`` is ``value``'s compact JSON with sorted keys.

        orjson parsing its own sorted output makes the copy in C, with every object's keys sorted and every value
        of an exact JSON type. Raises :class:`Invalid` where ``value`` holds NaN/Infinity (written as null) or
        nests deeper than ``room``.
        """
        if raw is None:
            raw = orjson.dumps(value, option=SORTED_OPTIONS)
        copy = orjson.loads(raw)
        entry = _Entry(copy, null_paths(copy) if has_null(raw) else [])
        if not entry.fits(value):
            raise Invalid
        check_depth(copy, room)
        return entry

    def message(self, message: dict[str, Any]) -> None:
        """A message (edited in place): its content, and the arguments of its tool calls."""
        if "content" in message:
            message["content"] = self.content(message["content"])
        calls = message.get("tool_calls")
        if type(calls) is list:
            for call in calls:
                if type(call) is dict and type(call.get("function")) is dict:
                    self.call(call["function"])
        if type(message.get("function_call")) is dict:
            self.call(message["function_call"])

    def content(self, value: Any) -> Any:
        """Message content or a system prompt: a string, or an array of content blocks (edited in place)."""
        if type(value) is str:
            return normalize_prose(value, self.policy)
        if type(value) is list:
            for block in value:
                if type(block) is dict:
                    self.block(block)
        return value

    def block(self, block: dict[str, Any]) -> None:
        """A content block. Thinking blocks are signed by the provider, so their text is never touched."""
        kind = block.get("type")
        if kind == "tool_result" and "content" in block:
            block["content"] = self.content(block["content"])
        elif kind in TEXT_BLOCKS and type(block.get("text")) is str:
            block["text"] = normalize_prose(block["text"], self.policy)

    def call(self, function: dict[str, Any]) -> None:
        """A ``tool_calls[].function`` or a legacy ``function_call``: its arguments string."""
        if type(function.get("arguments")) is str:
            function["arguments"] = self.tool_arguments(function["arguments"])

    def tool_arguments(self, text: str) -> str:
        if not self.policy.canonical_tool_arguments:
            return text
        known = self.arguments.get(text)
        if known is None:
            known = canonical_arguments(text)
            self.arguments.put(text, known)
        return known

    # -- tools ----------------------------------------------------------------------------------------------

    def tool_list(self, tools: Any, field: str, raw: bytes) -> list[Any]:
        if type(tools) is not list:
            raise RequestShapeError(
                f"$.{field}", f"expected an array of tools, got {_json_type(tools)}", "send a list of objects"
            )
        # Agents send the same tools every turn: compare with the last list before hashing 100+ kB of JSON.
        last_raw, known = self.last_tools
        if last_raw != raw:
            known = self.tool_lists.get(raw)  # type: ignore[assignment]
        if known is None or not known.fits(tools):
            entries = []
            for index, tool in enumerate(tools):
                path = f"$.{field}[{index}]"
                if not isinstance(tool, dict):
                    raise RequestShapeError(path, f"a tool must be an object, got {_json_type(tool)}", "send dicts")
                entries.append(self.definition(tool, path, self.policy.max_depth - 2, self.tools))
            canon = [entry.value for entry in entries]
            if self.policy.sort_tools:
                canon = order_tools(canon, field)
            # The list's nulls are its tools' nulls: no second scan of the list's JSON for them.
            nulls = [(index, *path) for index, entry in enumerate(entries) for path in entry.nulls]
            known = _Entry(canon, nulls)
            self.tool_lists.put(raw, known)
        self.last_tools = (raw, known)
        return list(known.value)

    def definition(self, value: dict[str, Any], path: str, room: int, memo: Memo[bytes, _Entry]) -> _Entry:
        """A tool or ``response_format``, memoized by its compact JSON with sorted keys, so one definition sent
        with its keys in any order is one entry. A null there may hide NaN/Infinity (orjson writes them as
        null), so only then is the slow check run."""
        raw = orjson.dumps(value, option=SORTED_OPTIONS)
        known = memo.get(raw)
        if known is None or not known.fits(value):
            unchecked = _Entry(None, null_paths(orjson.loads(raw)) if has_null(raw) else [])
            if not unchecked.fits(value):  # orjson wrote a NaN/Infinity as null: name it
                locate(value, path, room)
            known = _Entry(self.schemas.parse(raw, room), unchecked.nulls)
            memo.put(raw, known)
        return known


def order_tools(tools: list[Any], field: str) -> list[Any]:
    """Sort tools by name; a tool with ``cache_control`` keeps its index.

    A breakpoint on tool i caches tools[0..i]. Sorting only between breakpoints keeps every breakpoint covering
    the same set of tools, so the marker stays on its block and still caches what the user meant.
    """
    first_index: dict[str, int] = {}
    for index, tool in enumerate(tools):
        name = tool_name(tool)
        if name is None:
            continue
        if name in first_index:
            raise DuplicateToolError(
                f"$.{field}[{index}]",
                f"tool name {name!r} is already used by $.{field}[{first_index[name]}]",
                "give each tool a unique name (servers reject duplicates too)",
            )
        first_index[name] = index
    out: list[Any] = []
    segment: list[Any] = []
    for tool in tools:
        if "cache_control" in tool:
            out.extend(sorted(segment, key=_tool_order))
            out.append(tool)
            segment = []
        else:
            segment.append(tool)
    out.extend(sorted(segment, key=_tool_order))
    return out


def tool_name(tool: dict[str, Any]) -> str | None:
    """``function.name`` (OpenAI) or ``name`` (Anthropic, legacy ``functions``); None for nameless built-ins."""
    function = tool.get("function")
    name = function.get("name") if isinstance(function, dict) else tool.get("name")
    return name if isinstance(name, str) else None


def _tool_order(tool: dict[str, Any]) -> tuple[bool, str, bytes]:
    name = tool_name(tool)
    return (name is None, name or "", canonical_json(tool) if name is None else b"")


class _DuplicateKey(ValueError):
    pass


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _DuplicateKey
    return value


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(text)
    return value


def _reject_constant(text: str) -> None:
    raise ValueError(text)


#: Built once: building a decoder for each call cost more than most arguments take to parse.
_STRICT_JSON = json.JSONDecoder(
    object_pairs_hook=_unique_object, parse_float=_finite_float, parse_constant=_reject_constant
)


def canonical_arguments(text: str) -> str:
    """Tool-call arguments re-serialized with sorted keys and no whitespace, when that loses nothing.

    Left as they are when they do not parse as strict JSON, repeat a key (which copy wins is up to the parser),
    or hold numbers the canonical form cannot carry exactly (beyond 64-bit integers, overflowing floats).
    """
    try:
        value = _STRICT_JSON.decode(text)
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except (ValueError, TypeError, RecursionError):
        return text


def relocate_volatile(request: dict[str, Any], role: str) -> None:
    """Move the system prompt's lines holding volatile values into a trailing message (opt-in; changes layout).

    Anthropic bodies (top-level ``system``) get a trailing ``user`` message, since Messages has no system role.
    The message goes before a final assistant message, which is a prefill the model must continue. A text
    block (or a whole string prompt) made only of volatile lines keeps them: an empty block is invalid, and a
    ``cache_control`` marker on it would lose its place.
    """
    messages = request.get("messages")
    messages = messages if isinstance(messages, list) else []
    if "system" in request:
        system, moved = _split_system(request["system"])
        if not moved:
            return
        request["system"] = system
        trailing: dict[str, Any] = {"content": [{"text": moved, "type": "text"}], "role": "user"}
    else:
        first = messages[0] if messages else None
        if not (isinstance(first, dict) and first.get("role") in ("system", "developer")):
            return
        content, moved = _split_system(first.get("content"))
        if not moved:
            return
        messages = [{**first, "content": content}, *messages[1:]]
        trailing = {"content": moved, "role": role}
    if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant":
        request["messages"] = [*messages[:-1], trailing, messages[-1]]
    else:
        request["messages"] = [*messages, trailing]


def _split_system(content: Any) -> tuple[Any, str]:
    """(content without volatile lines, the volatile lines joined) for a string or an array of text blocks."""
    if isinstance(content, str):
        stable, moved = split_volatile_lines(content)
        return (stable, moved.rstrip("\n")) if stable.strip() else (content, "")
    if not isinstance(content, list):
        return content, ""
    kept: list[Any] = []
    moved_parts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") in TEXT_BLOCKS and isinstance(block.get("text"), str):
            stable, moved = split_volatile_lines(block["text"])
            if moved and stable.strip():
                block = {**block, "text": stable}
                moved_parts.append(moved.rstrip("\n"))
        kept.append(block)
    return kept, "\n".join(moved_parts)


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"
