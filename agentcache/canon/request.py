"""Canonical chat requests (OpenAI chat completions and Anthropic Messages bodies).

One walk serves both dialects: the fields they share are handled once, and each field a dialect alone has is
recognized by name (``system`` blocks, ``input_schema``, ``tool_use``/``tool_result`` blocks, ``tool_calls``).
Fields agentcache does not know are validated and passed through untouched.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from agentcache.canon.jsonvalue import (
    SORTED_OPTIONS,
    Invalid,
    canonical_json,
    dumps,
    exact,
    has_null,
    locate,
    lookup,
    map_dict,
    map_list,
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

#: Content blocks whose ``text`` is prose.
TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
#: Fields holding tool definitions, each an array of objects.
TOOL_FIELDS = ("functions", "tools")


@dataclass(frozen=True)
class _Raw:
    """Compact JSON of the parts that are memoized: each tool field, each message."""

    tools: dict[str, bytes]
    messages: list[bytes]


@dataclass(frozen=True)
class _Entry:
    """A memoized canonical value, and where its input had nulls (an equal-bytes input may hold NaN there)."""

    value: Any
    nulls: list[tuple[str | int, ...]]

    def fits(self, value: Any) -> bool:
        try:
            return all(lookup(value, path) is None for path in self.nulls)
        except (LookupError, TypeError):
            return False

    @classmethod
    def of(cls, raw: bytes, value: Any = None) -> _Entry:
        return cls(value, null_paths(orjson.loads(raw)) if has_null(raw) else [])


class Canonicalizer:
    """Canonicalizes requests under one policy, memoizing tools and tool-call arguments by content."""

    def __init__(self, policy: CanonicalPolicy) -> None:
        self.policy = policy
        self.schemas = SchemaCanonicalizer(policy)
        self.tool_lists: Memo[bytes, _Entry] = Memo(256, 64 << 20)
        self.tools: Memo[bytes, _Entry] = Memo(4096, 64 << 20)
        self.formats: Memo[bytes, _Entry] = Memo(256, 16 << 20)
        self.message_memo: Memo[bytes, _Entry] = Memo(65536, 256 << 20)
        self.last_tools: tuple[bytes, _Entry] = (b"", _Entry([], []))
        self.arguments: Memo[str, str] = Memo(8192, 16 << 20)

    def canonicalize(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, Mapping):
            raise NotAMappingError(
                "$",
                f"the request is {_json_type(request)}, not a JSON object",
                "pass the parsed body (a dict), e.g. json.loads(body)",
            )
        if type(request) is not dict:
            request = dict(request)
        for key in ("messages", *TOOL_FIELDS):  # tuples are JSON arrays too
            if isinstance(request.get(key), tuple):
                request = {**request, key: list(request[key])}
        policy = self.policy
        room = policy.max_depth - 1
        raw = self._serialize(request)
        out: dict[str, Any] = {}
        try:
            for key in sorted(request):
                value = request[key]
                if key == "messages":
                    out[key] = self.messages(value, raw.messages)
                elif key in TOOL_FIELDS:
                    out[key] = self.tool_list(value, key, raw.tools[key])
                elif key == "system":
                    out[key] = self.content(value, room)
                elif key == "response_format" and isinstance(value, dict):
                    out[key] = self.definition(value, "$.response_format", room, self.formats)
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

    def _serialize(self, request: dict[str, Any]) -> _Raw:
        """Serialize in C, validating key types, surrogates and unknown types, and enforce the size limit.

        The compact JSON of each tool field and each message is kept: they are the memo keys.
        """
        raw = _Raw({}, [])
        try:
            rest = dict(request)
            for key in TOOL_FIELDS:
                if key in rest:
                    raw.tools[key] = dumps(rest.pop(key))
            if "messages" in rest:
                messages = rest.pop("messages")
                if type(messages) is not list:
                    raise RequestShapeError(
                        "$.messages", f"expected an array of messages, got {_json_type(messages)}", "send a list"
                    )
                raw.messages[:] = [dumps(message) for message in messages]
            size = len(dumps(rest)) + sum(map(len, raw.tools.values())) + sum(map(len, raw.messages))
        except TypeError as exc:
            raise_located(request, "$", self.policy.max_depth, exc)
        if size > self.policy.max_body_bytes:
            raise BodyTooLargeError(
                "$",
                f"the body is {size:,} bytes of JSON, over the limit of {self.policy.max_body_bytes:,}",
                "raise CanonicalPolicy.max_body_bytes, or send this request as it is",
            )
        return raw

    # -- messages -------------------------------------------------------------------------------------------

    def messages(self, messages: list[Any], raws: list[bytes]) -> list[Any]:
        room = self.policy.max_depth - 2
        memo = self.message_memo.get
        out = []
        for index, raw in enumerate(raws):
            message = messages[index]
            known = memo(raw)
            if known is None or (known.nulls and not known.fits(message)):
                if not isinstance(message, dict):
                    raise RequestShapeError(
                        f"$.messages[{index}]",
                        f"a message must be an object, got {_json_type(message)}",
                        'send {"role": ..., "content": ...}',
                    )
                known = _Entry.of(raw, self.message(message, room))
                self.message_memo.put(raw, known)
            out.append(known.value)
        return out

    def message(self, message: Any, room: int) -> Any:
        return map_dict(exact(message, room), room, self.message_field)

    def message_field(self, key: str, value: Any, room: int) -> Any:
        if key == "content":
            return self.content(value, room)
        value = exact(value, room)
        if key == "tool_calls" and type(value) is list:
            return map_list(value, room, self.tool_call)
        if key == "function_call" and type(value) is dict:
            return map_dict(value, room, self.call_field)
        return plain(value, room)

    def content(self, value: Any, room: int) -> Any:
        """Message content or a system prompt: a string, or an array of content blocks."""
        value = exact(value, room)
        if type(value) is str:
            return normalize_prose(value, self.policy)
        if type(value) is list:
            return map_list(value, room, self.block)
        return plain(value, room)

    def block(self, block: Any, room: int) -> Any:
        """A content block. Thinking blocks are signed by the provider, so their text is never touched."""
        block = exact(block, room)
        if type(block) is not dict:
            return block
        kind = block.get("type")
        if kind in TEXT_BLOCKS:
            return map_dict(block, room, self.text_block_field)
        if kind == "tool_result":
            return map_dict(block, room, self.tool_result_field)
        return plain(block, room)

    def text_block_field(self, key: str, value: Any, room: int) -> Any:
        value = exact(value, room)
        if key == "text" and type(value) is str:
            return normalize_prose(value, self.policy)
        return plain(value, room)

    def tool_result_field(self, key: str, value: Any, room: int) -> Any:
        return self.content(value, room) if key == "content" else plain(value, room)

    def tool_call(self, call: Any, room: int) -> Any:
        call = exact(call, room)
        if type(call) is not dict:
            return plain(call, room)
        return map_dict(call, room, self.tool_call_field)

    def tool_call_field(self, key: str, value: Any, room: int) -> Any:
        value = exact(value, room)
        if key == "function" and type(value) is dict:
            return map_dict(value, room, self.call_field)
        return plain(value, room)

    def call_field(self, key: str, value: Any, room: int) -> Any:
        value = exact(value, room)
        if key == "arguments" and type(value) is str:
            return self.tool_arguments(value)
        return plain(value, room)

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
            canon = []
            for index, tool in enumerate(tools):
                path = f"$.{field}[{index}]"
                if not isinstance(tool, dict):
                    raise RequestShapeError(path, f"a tool must be an object, got {_json_type(tool)}", "send dicts")
                canon.append(self.definition(tool, path, self.policy.max_depth - 2, self.tools))
            if self.policy.sort_tools:
                canon = order_tools(canon, field)
            known = _Entry.of(raw, canon)
            self.tool_lists.put(raw, known)
        self.last_tools = (raw, known)
        return list(known.value)

    def definition(self, value: dict[str, Any], path: str, room: int, memo: Memo[bytes, _Entry]) -> Any:
        """A tool or ``response_format``, memoized by its compact JSON with sorted keys, so one definition sent
        with its keys in any order is one entry. A null there may hide NaN/Infinity (orjson writes them as
        null), so only then is the slow check run."""
        raw = orjson.dumps(value, option=SORTED_OPTIONS)
        known = memo.get(raw)
        if known is None or not known.fits(value):
            entry = _Entry.of(raw)
            if not entry.fits(value):  # orjson wrote a NaN/Infinity as null: name it
                locate(value, path, room)
            known = _Entry(self.schemas.parse(raw, room), entry.nulls)
            memo.put(raw, known)
        return known.value


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
    if value in (float("inf"), float("-inf")):
        raise ValueError(text)
    return value


def _reject_constant(text: str) -> None:
    raise ValueError(text)


def canonical_arguments(text: str) -> str:
    """Tool-call arguments re-serialized with sorted keys and no whitespace, when that loses nothing.

    Left as they are when they do not parse as strict JSON, repeat a key (which copy wins is up to the parser),
    or hold numbers the canonical form cannot carry exactly (beyond 64-bit integers, overflowing floats).
    """
    try:
        value = json.loads(
            text, object_pairs_hook=_unique_object, parse_float=_finite_float, parse_constant=_reject_constant
        )
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
