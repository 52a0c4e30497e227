"""The canonicalization rules: what agentcache does to each part of a chat request, with no memoizing in sight.

OpenAI chat completions and Anthropic Messages bodies share these rules; a field only one dialect has is
recognized by name (``system`` blocks, ``tool_use``/``tool_result`` blocks, ``tool_calls``, ``functions``).

- ``messages``: each message by :func:`canonical_message` (a system prompt's content, tool calls' arguments);
- ``tools`` and ``functions``: each definition by :class:`~agentcache.canon.schema.SchemaCanonicalizer`, then,
  with ``sort_tools``, the list by :func:`order_tools`;
- ``system``: :func:`canonical_system`; an object ``response_format``: a definition, as a tool is;
- ``tool_choice`` and any other ``response_format``: keys sorted (:func:`~agentcache.canon.jsonvalue.plain`);
- every other field is checked to be JSON and passed through untouched; the body's own keys are sorted;
- last, with ``relocate_volatile``, :func:`relocate_volatile` moves the system prompt's volatile lines.

:class:`~agentcache.canon.request.Canonicalizer` applies them, memoizing each piece by content.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson

from agentcache.canon.jsonvalue import canonical_json
from agentcache.canon.lossless import exact_float, exact_int
from agentcache.canon.policy import CanonicalPolicy
from agentcache.canon.text import drop_lines, fenced_parts, may_hold_fences, normalize_prose
from agentcache.canon.volatile import volatile_lines
from agentcache.errors import DuplicateToolError

#: Content blocks whose ``text`` is prose. A tuple, not a set: a block's ``type`` may be a list or an object, which
#: cannot be hashed.
TEXT_BLOCKS = ("text", "input_text", "output_text")
#: Roles whose messages hold the system prompt, which the agent writes. Every other message holds what the user,
#: the model or a tool wrote, and reaches the model byte for byte.
SYSTEM_ROLES = ("system", "developer")
#: Fields holding tool definitions, each an array of objects.
TOOL_FIELDS = ("functions", "tools")


# -- messages -----------------------------------------------------------------------------------------------


def canonical_message(message: dict[str, Any], policy: CanonicalPolicy, arguments: Callable[[str], str]) -> None:
    """A message, edited in place: a system prompt's content as prose and, with ``canonical_tool_arguments``, each
    tool call's arguments string through ``arguments`` (:func:`canonical_arguments`, which the caller may
    memoize). The text of user, assistant and tool messages is left as it is."""
    if "content" in message and message.get("role") in SYSTEM_ROLES:
        message["content"] = canonical_system(message["content"], policy)
    if not policy.canonical_tool_arguments:
        return
    calls = message.get("tool_calls")
    if type(calls) is list:
        for call in calls:
            if type(call) is dict and type(call.get("function")) is dict:
                _call(call["function"], arguments)
    if type(message.get("function_call")) is dict:
        _call(message["function_call"], arguments)


def _call(function: dict[str, Any], arguments: Callable[[str], str]) -> None:
    """A ``tool_calls[].function`` or a legacy ``function_call``: its arguments string."""
    if type(function.get("arguments")) is str:
        function["arguments"] = arguments(function["arguments"])


def canonical_system(value: Any, policy: CanonicalPolicy) -> Any:
    """A system prompt: a string, or an array of content blocks whose text blocks are prose (edited in place).
    Any other block (an image, a document) is data."""
    if type(value) is str:
        return normalize_prose(value, policy)
    if type(value) is list:
        for block in value:
            if type(block) is dict and block.get("type") in TEXT_BLOCKS and type(block.get("text")) is str:
                block["text"] = normalize_prose(block["text"], policy)
    return value


class _DuplicateKey(ValueError):
    pass


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        raise _DuplicateKey
    return value


def _reject_constant(text: str) -> None:
    raise ValueError(text)


#: Built once: building a decoder for each call cost more than most arguments take to parse.
_STRICT_JSON = json.JSONDecoder(
    object_pairs_hook=_unique_object, parse_float=exact_float, parse_int=exact_int, parse_constant=_reject_constant
)


def canonical_arguments(text: str) -> str:
    """Tool-call arguments re-serialized with sorted keys and no whitespace, when that loses nothing.

    Left as they are when they do not parse as strict JSON, repeat a key (which copy wins is up to the parser),
    or hold a number that would be written as another (beyond 64 bits, more digits than a double holds, ``-0``).
    """
    try:
        value = _STRICT_JSON.decode(text)
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except (ValueError, TypeError, RecursionError):
        return text


# -- tools --------------------------------------------------------------------------------------------------


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


# -- volatile values ----------------------------------------------------------------------------------------


def relocate_volatile(request: dict[str, Any], policy: CanonicalPolicy) -> None:
    """Move the system prompt's lines holding volatile values into a trailing message (opt-in; changes layout).

    Anthropic bodies (top-level ``system``) get a trailing ``user`` message, since Messages has no system role;
    others a message of ``policy.volatile_role``. The message goes before a final assistant message, which is a prefill
    the model must continue. A text block (or a whole string prompt) made only of volatile lines keeps them: an
    empty block is invalid, and a ``cache_control`` marker on it would lose its place. Lines of fenced code stay:
    moving one would change the code.
    """
    messages = request.get("messages")
    messages = messages if isinstance(messages, list) else []
    if "system" in request:
        system, moved = _split_system(request["system"], policy)
        if not moved:
            return
        request["system"] = system
        trailing: dict[str, Any] = {"content": [{"text": moved, "type": "text"}], "role": "user"}
    else:
        first = messages[0] if messages else None
        if not (isinstance(first, dict) and first.get("role") in SYSTEM_ROLES):
            return
        content, moved = _split_system(first.get("content"), policy)
        if not moved:
            return
        messages = [{**first, "content": content}, *messages[1:]]
        trailing = {"content": moved, "role": policy.volatile_role}
    if messages and isinstance(messages[-1], dict) and messages[-1].get("role") == "assistant":
        request["messages"] = [*messages[:-1], trailing, messages[-1]]
    else:
        request["messages"] = [*messages, trailing]


def fold_relocated(request: dict[str, Any], index: int) -> dict[str, Any] | None:
    """``request`` with the message :func:`relocate_volatile` appended at ``index`` folded into the user message
    right before it: its text follows that message's, after a blank line, and no message is added. Templates that
    require alternating roles accept this placement. None when the message before is not a user message (folding
    into an earlier one would change history the cache already holds)."""
    messages = request.get("messages")
    if not isinstance(messages, list) or not 0 < index < len(messages):
        return None
    target, moved = messages[index - 1], messages[index]
    if not isinstance(target, dict) or target.get("role") != "user" or not isinstance(moved, dict):
        return None
    text = message_text(moved.get("content"))
    content = target.get("content")
    if isinstance(content, str):
        merged: Any = f"{content}\n\n{text}"
    elif isinstance(content, list):
        merged = [*content, {"text": text, "type": "text"}]
    else:
        return None
    return {**request, "messages": [*messages[: index - 1], {**target, "content": merged}, *messages[index + 1 :]]}


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or its text blocks joined (none for other content)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))


def _split_system(content: Any, policy: CanonicalPolicy) -> tuple[Any, str]:
    """(content without volatile lines, the volatile lines joined) for a string or an array of text blocks."""
    if isinstance(content, str):
        stable, moved = _split_prose(content, policy)
        return (stable, moved.rstrip("\n")) if stable.strip() else (content, "")
    if not isinstance(content, list):
        return content, ""
    kept: list[Any] = []
    moved_parts: list[str] = []
    for block in content:
        if isinstance(block, dict) and block.get("type") in TEXT_BLOCKS and isinstance(block.get("text"), str):
            stable, moved = _split_prose(block["text"], policy)
            if moved and stable.strip():
                block = {**block, "text": stable}
                moved_parts.append(moved.rstrip("\n"))
        kept.append(block)
    return kept, "\n".join(moved_parts)


def _split_prose(text: str, policy: CanonicalPolicy) -> tuple[str, str]:
    """(``text`` without its volatile lines, those lines), the first laid out by
    :func:`~agentcache.canon.text.drop_lines` so that it reads the same wherever they stood. Lines of fenced code
    all stay."""
    cuts: list[tuple[int, int]] = []
    offset = 0
    for part, code in fenced_parts(text, policy) if may_hold_fences(text) else [(text, False)]:
        if not code:
            cuts.extend((offset + start, offset + end) for start, end in volatile_lines(part))
        offset += len(part)
    if not cuts:
        return text, ""
    return drop_lines(text, cuts), "".join(text[start:end] for start, end in cuts)
