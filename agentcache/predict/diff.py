"""Where two requests first differ: the segment, the JSON path, the character, the token."""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agentcache.cache.prefix import common_prefix
from agentcache.canon.jsonvalue import child_path
from agentcache.predict.prompt import Segment, json_text

#: The parts of a prompt in the order the server caches them.
PARTS = ("tools", "params", "system", "messages")


@dataclass(frozen=True)
class Divergence:
    """The first place a request differs from the previous one of its session, in the order the server reads."""

    part: str
    """``tools``, ``params``, ``system`` or ``messages``; ``model`` when the model changed (nothing is shared)."""
    path: str
    """JSON path of the first differing value in the new request (or of the dropped value, if it was removed)."""
    char_offset: int
    """Offset of the first differing character in the rendered segment."""
    token_index: int
    """Index of the first prompt token that differs: every token before it could be served from cache."""
    segment: int
    """Index of the diverging segment in the rendered prompt (tools, then system, then messages)."""


def first_divergence(
    before: Sequence[Segment],
    before_tokens: array[int],
    after: Sequence[Segment],
    after_tokens: array[int],
    after_starts: Sequence[int],
) -> Divergence | None:
    """The first divergence of ``after`` from ``before``, or None when ``after`` extends ``before`` unchanged."""
    index = next((i for i, (b, a) in enumerate(zip(before, after, strict=False)) if b.text != a.text), None)
    if index is None:
        if len(after) >= len(before):
            return None
        dropped = before[len(after)]
        return Divergence(dropped.part, dropped.path, 0, len(after_tokens), len(after))
    old, new = before[index], after[index]
    start = after_starts[index]
    token = start + common_prefix(before_tokens[start:], after_tokens[start:])
    if old.part != new.part:  # one part grew or shrank (a tool added or removed): blame the earlier part
        changed = old if PARTS.index(old.part) < PARTS.index(new.part) else new
        return Divergence(changed.part, changed.path, 0, token, index)
    path = new.path if old.path != new.path else value_path(old.value, new.value, new.path)
    return Divergence(new.part, path, common_prefix(old.text, new.text), token, index)


def value_path(old: Any, new: Any, path: str) -> str:
    """JSON path of the first difference between two values, walking objects in their serialized key order (a
    key-order change is a difference: it changes the bytes)."""
    if isinstance(old, dict) and isinstance(new, dict):
        for (old_key, old_item), (new_key, new_item) in zip(old.items(), new.items(), strict=False):
            if old_key != new_key:
                return child_path(path, new_key)
            if not _same(old_item, new_item):
                return value_path(old_item, new_item, child_path(path, new_key))
        if len(old) != len(new):
            extra = list(new)[len(old)] if len(new) > len(old) else list(old)[len(new)]
            return child_path(path, extra)
        return path
    if isinstance(old, list) and isinstance(new, list):
        for index, (old_item, new_item) in enumerate(zip(old, new, strict=False)):
            if not _same(old_item, new_item):
                return value_path(old_item, new_item, f"{path}[{index}]")
        return f"{path}[{min(len(old), len(new))}]" if len(old) != len(new) else path
    return path


def _same(a: Any, b: Any) -> bool:
    """Equal as serialized: same values, same key order, same types (``1`` is not ``1.0``)."""
    return json_text(a) == json_text(b)
