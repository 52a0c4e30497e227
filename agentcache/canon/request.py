"""The canonicalization walk: each field of a request to its rule, through memos keyed by content.

The rules themselves (what happens to messages, content, tool calls and tool lists) are in
:mod:`agentcache.canon.rules`, schemas in :mod:`agentcache.canon.schema`; this module decides which piece gets
which rule, checks the body's shape, and memoizes the pieces with :mod:`agentcache.canon.memo`, so that the
tools and history an agent re-sends every turn cost a comparison or a lookup instead of a walk.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from typing import Any

import orjson

from agentcache.canon.jsonvalue import (
    SORTED_OPTIONS,
    Invalid,
    check_depth,
    dumps,
    has_null,
    locate,
    null_paths,
    plain,
    raise_located,
)
from agentcache.canon.memo import Entry, Histories, History, Memo, kept_sources, record_built, remember
from agentcache.canon.policy import CanonicalPolicy
from agentcache.canon.rules import (
    TOOL_FIELDS,
    canonical_arguments,
    canonical_message,
    canonical_system,
    order_tools,
    relocate_volatile,
)
from agentcache.canon.schema import SchemaCanonicalizer
from agentcache.errors import BodyTooLargeError, NotAMappingError, RequestShapeError

#: The tool fields, whose lists are memo entries kept across requests.
TOOL_SET = frozenset(TOOL_FIELDS)
#: Fields holding arrays that the walk needs as lists.
ARRAY_FIELDS = ("messages", *TOOL_FIELDS)


class Canonicalizer:
    """Canonicalizes requests under one policy, memoizing tools, messages and tool-call arguments by content."""

    def __init__(self, policy: CanonicalPolicy) -> None:
        self.policy = policy
        self.schemas = SchemaCanonicalizer(policy)
        self.tool_lists: Memo[bytes, Entry] = Memo(256, 64 << 20)
        self.tools: Memo[bytes, Entry] = Memo(4096, 64 << 20)
        self.formats: Memo[bytes, Entry] = Memo(256, 16 << 20)
        self.message_memo: Memo[bytes, Entry] = Memo(65536, 256 << 20)
        self.last_tools: tuple[bytes, Entry] = (b"", Entry([], []))
        self.histories = Histories(32 << 20)
        self.arguments: Memo[str, str] = Memo(8192, 16 << 20)

    def canonicalize(self, request: Any) -> dict[str, Any]:
        """:func:`agentcache.canonicalize`."""
        out, sources = self.build(request)
        return record_built(out, sources, TOOL_SET)

    def build(
        self, request: Any, tools_json: bytes | None = None, thread: str = ""
    ) -> tuple[dict[str, Any], dict[str, Entry]]:
        """The canonical request, and the entries whose items its arrays hold, from which
        :func:`~agentcache.canon.jsonvalue.sourced_json` writes its bytes (with ``TOOL_SET`` memoized); not recorded
        for :func:`~agentcache.canon.jsonvalue.canonical_json`, for a caller that writes it at once itself.

        ``tools_json``, when given, must be ``orjson.dumps(request["tools"])`` of tools parsed from JSON: a caller that
        has those bytes already (the transport keeps them with a re-sent tool list) spares writing 50 kB of tools
        again to look them up. ``thread`` names the conversation the request continues (the transport's session):
        its messages are compared with that conversation's last list, not with whichever request came last."""
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
        tools_raw, messages_raw = self._serialize(request, tools_json)
        out: dict[str, Any] = {}
        sources: dict[str, Entry] = {}
        try:
            for key in sorted(request):
                value = request[key]
                if key == "messages":
                    history = self.messages(value, messages_raw, thread)
                    out[key] = history.values[: len(value)]
                    sources[key] = history.output(len(value))
                elif key in TOOL_FIELDS:
                    out[key] = self.tool_list(value, key, tools_raw[key])
                    sources[key] = self.last_tools[1]
                elif key == "system":
                    out[key] = canonical_system(self.fresh(value, room).value, policy)
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
            relocate_volatile(out, policy)
        return out, kept_sources(out, sources)

    def _serialize(self, request: dict[str, Any], tools_json: bytes | None) -> tuple[dict[str, bytes], bytes]:
        """Serialize in C, validating key types, surrogates and unknown types, and enforce the size limit.

        The compact JSON of each tool field and of the message list is kept: they are the memo keys. The size
        counts each message's JSON, without the list's brackets and commas. ``tools_json`` is the ``tools``
        field's, given: JSON orjson wrote holds nothing to validate.
        """
        tools: dict[str, bytes] = {}
        messages_raw = b"[]"
        try:
            rest = dict(request)
            for key in TOOL_FIELDS:
                if key in rest:
                    value = rest.pop(key)
                    tools[key] = tools_json if key == "tools" and tools_json is not None else dumps(value)
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

    def messages(self, messages: list[Any], raw: bytes, thread: str) -> History:
        """The history of ``thread`` whose leading values are the canonical ``messages`` (their list's compact JSON
        is ``raw``): those the thread's last list also began with are reused, the rest are memoized one by one, so
        a conversation the thread's name does not tell apart still costs lookups rather than walks."""
        history = self.histories.get(thread)
        shared = history.reusable(messages, raw)
        if shared == len(messages):  # the last list, or the start of it (a retry): keep the longer one
            return history
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
                canonical_message(known.value, self.policy, self.tool_arguments)
                self.message_memo.put(message_raw, known)
            values.append(known.value)
            end += 1 + len(message_raw)  # the "[" or "," before the message, then the message
            ends.append(end)
            nulls.extend((index, path) for path in known.nulls)
        history = History(raw, ends, values, nulls)
        self.histories.put(thread, history)
        return history

    def fresh(self, value: Any, room: int, raw: bytes | None = None) -> Entry:
        """A private copy of ``value`` for the rules to edit in place and for the memo to keep: nothing the
        caller holds, and may edit later, is kept. ``raw`` is ``value``'s compact JSON with sorted keys.

        orjson parsing its own sorted output makes the copy in C, with every object's keys sorted and every value
        of an exact JSON type. Raises :class:`Invalid` where ``value`` holds NaN/Infinity (written as null) or
        nests deeper than ``room``.
        """
        if raw is None:
            raw = orjson.dumps(value, option=SORTED_OPTIONS)
        copy = orjson.loads(raw)
        entry = Entry(copy, null_paths(copy) if has_null(raw) else [])
        if not entry.fits(value):
            raise Invalid
        check_depth(copy, room)
        return remember(entry, len(raw))

    def tool_arguments(self, text: str) -> str:
        """:func:`~agentcache.canon.rules.canonical_arguments`, memoized: a call seen before is not parsed again."""
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
            known = Entry(canon, nulls)
            self.tool_lists.put(raw, known)
        self.last_tools = (raw, known)
        return list(known.value)

    def definition(self, value: dict[str, Any], path: str, room: int, memo: Memo[bytes, Entry]) -> Entry:
        """A tool or ``response_format``, memoized by its compact JSON with sorted keys, so one definition sent
        with its keys in any order is one entry. A null there may hide NaN/Infinity (orjson writes them as
        null), so only then is the slow check run."""
        raw = orjson.dumps(value, option=SORTED_OPTIONS)
        known = memo.get(raw)
        if known is None or not known.fits(value):
            unchecked = Entry(None, null_paths(orjson.loads(raw)) if has_null(raw) else [])
            if not unchecked.fits(value):  # orjson wrote a NaN/Infinity as null: name it
                locate(value, path, room)
            known = remember(Entry(self.schemas.parse(raw, room), unchecked.nulls), len(raw))
            memo.put(raw, known)
        return known


def _json_type(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return name
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"
