"""Why a request diverged from the previous one: one stable cause code per turn, with a human detail.

The codes are part of the JSON output schema (docs/drift.md lists them); never rename one.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from agentcache.cache.prefix import common_prefix
from agentcache.canon import CanonicalPolicy, VolatileSpan, canonical_json, canonicalize, find_volatile
from agentcache.canon.jsonvalue import child_path
from agentcache.canon.rules import tool_name
from agentcache.errors import RequestError
from agentcache.predict.diff import Divergence
from agentcache.predict.prompt import Segment
from agentcache.redact import CREDENTIAL, NUMBER, RedactedChange, comparable, overlaps_credential, redacted_change

NEW_SESSION = "new_session"
NONE = "none"
MODEL_CHANGED = "model_changed"
TOOL_ORDER = "tool_order"
SCHEMA_KEY_ORDER = "schema_key_order"
TOOL_ADDED = "tool_added"
TOOL_REMOVED = "tool_removed"
TOOL_CHANGED = "tool_changed"
VOLATILE_VALUE = "volatile_value"
WHITESPACE = "whitespace"
SYSTEM_EDITED = "system_edited"
HISTORY_REWRITTEN = "history_rewritten"
PARAMS_CHANGED = "params_changed"
BELOW_MINIMUM = "below_minimum"
EVICTED = "evicted"
WORKER_CHANGED = "worker_changed"
"""The turn landed on another worker of a cluster than the session's previous turn, one that lacks the prefix."""
WORKER_LOST = "worker_lost"
"""As ``worker_changed``, because the previous turn's worker went away (it failed a request)."""
# Template-made drift (agentcache.predict.template_drift): the model's chat template, not the agent, broke the prefix.
TEMPLATE_MOVES_TOOLS = "template_moves_tools"
TEMPLATE_MOVES_SYSTEM = "template_moves_system"
TEMPLATE_DROPS_REASONING = "template_drops_reasoning"
TEMPLATE_DATE = "template_date"
TEMPLATE_GENERATION_PROMPT = "template_generation_prompt"
TEMPLATE_REWRITES = "template_rewrites_history"
TEMPLATE_CAUSES = (
    TEMPLATE_MOVES_TOOLS,
    TEMPLATE_MOVES_SYSTEM,
    TEMPLATE_DROPS_REASONING,
    TEMPLATE_DATE,
    TEMPLATE_GENERATION_PROMPT,
    TEMPLATE_REWRITES,
)

_NORMALIZE_WHITESPACE = CanonicalPolicy(normalize_whitespace=True)
_DECIMAL = re.compile(r"[.,]\d")


def classify(
    before: dict[str, Any], after: dict[str, Any], divergence: Divergence, old: Segment | None, new: Segment | None
) -> tuple[str, str]:
    """(cause, detail) of a divergence between two consecutive requests of a session.

    ``old``/``new`` are the diverging segments (``new`` is None when the new request dropped ``old``).
    """
    if before.get("model") != after.get("model"):
        return MODEL_CHANGED, f"model {before.get('model')!r} -> {after.get('model')!r}: nothing can be reused"
    if divergence.part == "tools":
        return _tools(_tools_of(before), _tools_of(after))
    if divergence.part == "params":
        return PARAMS_CHANGED, "response_format changed: its schema is part of the prompt"
    if old is None or new is None:
        return HISTORY_REWRITTEN, f"{divergence.path} was dropped (compaction or truncation)"
    where = "the system prompt" if divergence.part == "system" else divergence.path
    blanks = _blank_change(old.value, new.value)
    change = None if blanks is None else blanks[1]
    if _same(old, new, loose=False):
        generic = f"{divergence.path}: same content, different bytes (line endings, Unicode, key order)"
        return WHITESPACE, f"{change} of {where}" if change else generic
    if _same(old, new, loose=True) or change is not None:
        fix = _whitespace_fix(old.part, comparable(old.value), comparable(new.value))
        return WHITESPACE, f"{change or 'line endings or Unicode form changed'} of {where}: {fix}"
    if divergence.part == "system":
        return _system(old.text, new.text, divergence)
    return _history(before, after, old, new, divergence)


def _tools_of(request: dict[str, Any]) -> list[Any]:
    tools = request.get("tools") or request.get("functions") or []
    return tools if isinstance(tools, list) else []


def _tools(before: list[Any], after: list[Any]) -> tuple[str, str]:
    old = {_name(tool, i): tool for i, tool in enumerate(before)}
    new = {_name(tool, i): tool for i, tool in enumerate(after)}
    added, removed = sorted(new.keys() - old.keys()), sorted(old.keys() - new.keys())
    if added:
        return TOOL_ADDED, "added: " + ", ".join(added) + (f"; removed: {', '.join(removed)}" if removed else "")
    if removed:
        return TOOL_REMOVED, "removed: " + ", ".join(removed)
    changed = [name for name in new if _canonical("tools", old[name]) != _canonical("tools", new[name])]
    first = _blank_change(old[changed[0]], new[changed[0]]) if changed else None
    if first is not None and all(_blank_change(old[name], new[name]) for name in changed[1:]):
        (path, change), name = first, changed[0]
        fix = _whitespace_fix("tools", old[name], new[name])
        return WHITESPACE, f"{change} of {path.removeprefix('$.')} in tool {name}: {fix}"
    if changed:
        return TOOL_CHANGED, "definition changed: " + ", ".join(changed)
    if list(old) != list(new):
        return TOOL_ORDER, "same tools in another order (built from a set or dict?)"
    if all(old[name] == new[name] for name in new):
        return SCHEMA_KEY_ORDER, "same tool definitions with keys in another order"
    return WHITESPACE, "same tool definitions, different bytes (line endings, Unicode, set-like arrays)"


def _blank_change(old: Any, new: Any) -> tuple[str, str] | None:
    """(JSON path, what changed) of the first string two values (tools, system prompts, messages) differ in, when
    they differ only in the blanks of their strings, however deep (a description's trailing space, a double space
    in a tool result block); None when anything else differs."""
    pairs = _differing_strings(_plain(old), _plain(new), "$")
    if not pairs:
        return None
    first = whitespace_change(pairs[0][1], pairs[0][2])
    if first is None or any(whitespace_change(a, b) is None for _, a, b in pairs[1:]):
        return None
    return pairs[0][0], first


def _plain(value: Any) -> Any:
    """``value`` as the prompt renders it: without ``cache_control`` markers, and with content made only of text
    blocks joined into one string, so a message re-sent as a string after carrying a breakpoint block compares
    with its text."""
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if not isinstance(value, dict):
        return value
    plain = {key: _plain(item) for key, item in value.items() if key != "cache_control"}
    content = plain.get("content")
    if isinstance(content, list) and all(_text_block(block) for block in content):
        plain["content"] = "".join(block["text"] for block in content)
    return plain


def _text_block(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.keys() == {"type", "text"}
        and block["type"] == "text"
        and isinstance(block["text"], str)
    )


def _differing_strings(old: Any, new: Any, path: str) -> list[tuple[str, str, str]] | None:
    """(path, old, new) of each string that differs between two values of one shape (same keys, lengths and other
    values), or None when their shapes or any value that is not a string differ."""
    if isinstance(old, str) and isinstance(new, str):
        return [] if old == new else [(path, old, new)]
    if isinstance(old, dict) and isinstance(new, dict) and old.keys() == new.keys():
        parts = [_differing_strings(old[key], new[key], child_path(path, key)) for key in old]
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        parts = [_differing_strings(a, b, f"{path}[{i}]") for i, (a, b) in enumerate(zip(old, new, strict=True))]
    else:
        return [] if type(old) is type(new) and old == new else None
    return None if any(part is None for part in parts) else [pair for part in parts for pair in part or ()]


def _whitespace_fix(part: str, old: Any, new: Any) -> str:
    """What removes a whitespace drift: the opt-in policy when it makes both values the same, else the agent."""
    normalized = _canonical(part, old, policy=_NORMALIZE_WHITESPACE)
    if normalized is not None and normalized == _canonical(part, new, policy=_NORMALIZE_WHITESPACE):
        return "CanonicalPolicy(normalize_whitespace=True) makes both the same"
    return (
        "agentcache sends this text as it came (messages, fenced code, spacing inside a line): re-send it as "
        "first sent"
    )


def _name(tool: Any, index: int) -> str:
    """A tool's name, or for a nameless built-in its canonical JSON, so a moved built-in is the same tool."""
    name = tool_name(tool) if isinstance(tool, dict) else None
    if name is not None:
        return name
    canonical = _canonical("tools", tool)
    return canonical.decode() if canonical is not None else f"#{index}"


def _same(old: Segment, new: Segment, loose: bool) -> bool:
    """Whether two segments have the same canonical bytes, with ``loose`` also after putting every string in LF
    and NFC: the text of messages, which canonicalization keeps as sent."""
    before = _canonical(old.part, comparable(old.value), loose)  # a redacted text: its canonical digest
    return before is not None and before == _canonical(new.part, comparable(new.value), loose)


def _canonical(
    part: str, value: Any, loose: bool = False, policy: CanonicalPolicy | None = None
) -> bytes | None:
    """Canonical bytes of one tool, system prompt (or block) or message under ``policy`` (the default one unless
    given); None when it cannot be canonicalized. ``loose`` puts every string in LF and NFC first."""
    if part == "tools":
        body: dict[str, Any] = {"messages": [], "tools": [value]}
    elif part == "system" and not (isinstance(value, dict) and "role" in value):
        body = {"messages": [], "system": value if isinstance(value, str) else [value]}
    else:
        body = {"messages": [value]}
    try:
        canonical = canonicalize(body, policy)
        return canonical_json(_loose(canonical) if loose else canonical)
    except RequestError:
        return None


def whitespace_change(old: str, new: str) -> str | None:
    """What changed between two texts with the same words, or None when their words differ.

    The first change is named with its line in ``new``: line endings, Unicode form, trailing blanks, blank lines,
    or the blanks inside a line (tabs, runs of spaces).
    """
    if old == new or _words(old) != _words(new):
        return None
    lf_old, lf_new = _lf(old), _lf(new)
    if lf_old == lf_new:
        return f"line endings changed (CRLF, CR, LF) from line {_line(new, common_prefix(old, new))}"
    if unicodedata.normalize("NFC", lf_old) == unicodedata.normalize("NFC", lf_new):
        return f"Unicode normalization form changed at line {_line(lf_new, common_prefix(lf_old, lf_new))}"
    old_lines, new_lines = lf_old.split("\n"), lf_new.split("\n")
    old_bare, new_bare = [line.rstrip(" \t") for line in old_lines], [line.rstrip(" \t") for line in new_lines]
    if old_bare == new_bare:
        index = next(i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b)
        change = "added" if len(new_lines[index]) > len(old_lines[index]) else "removed"
        blank = "tab" if "\t" in (old_lines[index] + new_lines[index])[len(old_bare[index]) :] else "space"
        return f"trailing {blank} {change} at line {index + 1}"
    index = next((i for i, (a, b) in enumerate(zip(old_bare, new_bare, strict=False)) if a != b), len(old_bare))
    if [line for line in old_bare if line] == [line for line in new_bare if line]:
        if len(new_bare) > len(old_bare):
            return f"blank line added at line {index + 1}"
        return f"blank line removed at line {index + 1}"
    a, b = old_bare[index], new_bare[index]
    if a.count("\t") != b.count("\t"):
        change = "added" if a.count("\t") < b.count("\t") else "removed"
        return f"tab {change} at line {index + 1}"
    return f"run of spaces changed at line {index + 1}"


def _words(text: str) -> list[str]:
    return unicodedata.normalize("NFC", text).split()


def _lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _loose(value: Any) -> Any:
    """``value`` with every string in LF line endings and Unicode NFC: how a reader sees it, not a tokenizer."""
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value.replace("\r\n", "\n").replace("\r", "\n"))
    if isinstance(value, list):
        return [_loose(item) for item in value]
    if isinstance(value, dict):
        return {key: _loose(item) for key, item in value.items()}
    return value


def _system(old: str, new: str, divergence: Divergence) -> tuple[str, str]:
    offset = divergence.char_offset
    redacted = redacted_change(old, new, offset)
    if redacted is not None:  # never look for volatile values in a marker: its digests and length are not text
        return _redacted_system(redacted)
    old_span, new_span = _span_at(old, offset), _span_at(new, offset)
    if old_span is not None or new_span is not None:
        kind = (new_span or old_span).kind  # type: ignore[union-attr]
        was = _quote(old, old_span.start, old_span.end) if old_span else _quote(old, offset, offset + 20)
        now = _quote(new, new_span.start, new_span.end) if new_span else _quote(new, offset, offset + 20)
        return VOLATILE_VALUE, f"{kind} in the system prompt: {was} -> {now}"
    old_number, new_number = _number_at(old, offset), _number_at(new, offset)
    if old_number is not None and new_number is not None and old_number != new_number:
        return VOLATILE_VALUE, f"counter in the system prompt: {old_number} -> {new_number}"
    return SYSTEM_EDITED, f"system prompt text changed at character {offset}"


def _redacted_system(change: RedactedChange) -> tuple[str, str]:
    """The cause of a change inside a redacted system prompt: what its markers say of the first changed piece."""
    where = "" if change.line is None else f" at line {change.line}"
    if change.kind is not None:
        return VOLATILE_VALUE, f"{change.kind} in the system prompt{where} (redacted)"
    return SYSTEM_EDITED, f"system prompt text changed{where} (redacted)"


def _quote(text: str, start: int, end: int) -> str:
    """``text[start:end]`` quoted for a detail, unless it is part of a credential (a rotating key looks like a
    volatile id): details reach ledger exports, spans and reports."""
    return CREDENTIAL if overlaps_credential(text, start, end) else repr(text[start:end])


def _span_at(text: str, offset: int) -> VolatileSpan | None:
    """The volatile value of ``text`` that contains ``offset``."""
    return next((span for span in find_volatile(text) if span.start <= offset < span.end), None)


def _number_at(text: str, offset: int) -> str | None:
    """The number of ``text`` that contains or ends at ``offset``: a counter that gained or lost a digit ("12" to
    "1") first differs just past the end of one of its two values. A number going on as a decimal ("1" of "1.2")
    does not end there, and two equal numbers are no counter ("3" to "3a"), which the caller checks."""
    for match in NUMBER.finditer(text):
        if match.start() <= offset < match.end() or (match.end() == offset and not _DECIMAL.match(text, offset)):
            return match.group()
    return None


def _history(
    before: dict[str, Any], after: dict[str, Any], old: Segment, new: Segment, divergence: Divergence
) -> tuple[str, str]:
    old_message = old.value if isinstance(old.value, dict) else {}
    new_message = new.value if isinstance(new.value, dict) else {}
    if _has_reasoning(old_message) and not _has_reasoning(new_message):
        return HISTORY_REWRITTEN, f"reasoning stripped from {old.path}"
    if len(after.get("messages", [])) < len(before.get("messages", [])):
        return HISTORY_REWRITTEN, f"history compacted: {old.path} onwards replaced"
    old_content, new_content = old_message.get("content"), new_message.get("content")
    if (
        isinstance(old_content, str)
        and isinstance(new_content, str)
        and len(new_content) < len(old_content)
        and old_content.startswith(new_content.rstrip(".… \n"))
    ):
        return HISTORY_REWRITTEN, f"{old_message.get('role')} message {old.path} truncated"
    return HISTORY_REWRITTEN, f"earlier message {divergence.path} edited"


def _has_reasoning(message: dict[str, Any]) -> bool:
    if message.get("reasoning_content") or message.get("reasoning"):
        return True
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") in ("thinking", "redacted_thinking", "reasoning")
        for block in content
    )
