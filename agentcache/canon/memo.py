"""A bounded memo keyed by content, so re-sent tools and history cost a lookup instead of a walk."""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K", bytes, str)
V = TypeVar("V")


class Memo(Generic[K, V]):
    """Maps content (bytes or text) to a derived value, keeping what was used recently.

    Two generations instead of a strict LRU: a hit is one dict lookup, cheaper than the walk it saves by far,
    which an LRU's bookkeeping would not be. When the young generation fills, it becomes the old one and the old
    one is dropped; a hit in the old generation moves the entry back to the young one. Each dict operation is
    atomic under the GIL, so concurrent callers at worst recompute an entry.
    """

    def __init__(self, max_entries: int, max_key_chars: int) -> None:
        self.max_entries = max_entries // 2
        self.max_key_chars = max_key_chars // 2
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}
        self._young_chars = 0

    def get(self, key: K) -> V | None:
        value = self._young.get(key)
        if value is None:
            value = self._old.get(key)
            if value is not None:
                self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        if len(key) > self.max_key_chars:
            return
        if len(self._young) >= self.max_entries or self._young_chars + len(key) > self.max_key_chars:
            self._old, self._young, self._young_chars = self._young, {}, 0
        self._young[key] = value
        self._young_chars += len(key)
