"""The memo machinery of canonicalization: bounded memos keyed by content, so re-sent tools and history cost a
lookup instead of a walk, and what an entry keeps so that it is reused only where it is right."""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, NamedTuple, TypeVar

K = TypeVar("K", bytes, str, int)
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

    def put(self, key: K, value: V, size: int = 0) -> None:
        """Keep ``value`` under ``key``; a text key counts its length against the budget, an id key ``size``."""
        chars = size if isinstance(key, int) else len(key)
        if chars > self.max_key_chars:
            return
        if len(self._young) >= self.max_entries or self._young_chars + chars > self.max_key_chars:
            self._old, self._young, self._young_chars = self._young, {}, 0
        self._young[key] = value
        self._young_chars += chars


def lookup(value: Any, path: tuple[str | int, ...]) -> Any:
    """The value at a path of keys and indices, read as orjson reads it: through the base type's own item access,
    whatever a subclass's ``__getitem__`` says. Raises LookupError or TypeError where the path does not exist."""
    for step in path:
        kind = dict if isinstance(value, dict) else list if isinstance(value, list) else tuple
        value = kind.__getitem__(value, step)  # type: ignore[index]
    return value


#: id of a value canonicalization built -> its entry, which holds the value (so the id is not reused while it is
#: here) and the paths of its nulls. A hint, never trusted: :func:`proven_nulls` checks each path.
KNOWN_NULLS: Memo[int, Entry] = Memo(1 << 17, 128 << 20)


def remember(entry: Entry, size: int) -> Entry:
    """Record where ``entry``'s value, ``size`` bytes of JSON, holds its nulls, for :func:`proven_nulls`."""
    if isinstance(entry.value, (dict, list)):
        KNOWN_NULLS.put(id(entry.value), entry, size)
    return entry


def _shape(request: dict[str, Any]) -> tuple[object, ...]:
    """The identity of a request's top level: each value, and each item of its arrays (messages, tools) with the
    item's size, so a field replaced, a message added, replaced or given a key shows."""
    # Flat tuples of ints: a few allocations per request, not one per item (allocations are what trigger the
    # garbage collector), and tuples of ints the collector stops tracking.
    return tuple(
        (id(value), tuple(map(id, value)), tuple(map(_size, value))) if type(value) is list else (id(value),)
        for value in request.values()
    )


def _size(item: object) -> int:
    return len(item) if type(item) is dict else 0


class Built(NamedTuple):
    """A request canonicalization returned, its :func:`_shape` then, and the entries its arrays copy."""

    request: dict[str, Any]
    shape: tuple[object, ...]
    sources: dict[str, Entry]
    """field -> an entry whose list the field holds, item for item: the tools' memo entry, the message history."""
    memoized: frozenset[str]
    """The fields whose entry is a memo's, kept across requests: their JSON is kept with the entry."""


#: id of a request canonicalization returned -> what :func:`built` checks. Canonicalization refused any NaN or
#: Infinity in it, so it holds none while it is as built: its top level and its arrays' items are checked, and so
#: is each null of those items; deeper objects are the memos' own, read-only by contract.
BUILT: Memo[int, Built] = Memo(256, 1 << 20)
#: id of a memo entry -> the entry (so the id is not reused while it is here) and its value's canonical JSON.
SERIALIZED: Memo[int, tuple[Entry, bytes]] = Memo(256, 256 << 20)


def holds(value: Any, entry: Entry) -> bool:
    """Whether ``value`` is a list of ``entry``'s very items, in its order: what is known of the entry (its JSON, its
    nulls) is then known of ``value``."""
    return type(value) is list and len(value) == len(entry.value) and all(map(operator.is_, value, entry.value))


def kept_sources(request: dict[str, Any], sources: dict[str, Entry]) -> dict[str, Entry]:
    """The entries of ``sources`` whose field in ``request`` still :func:`holds` the entry's items (relocating
    volatile lines may have replaced a message)."""
    return {key: entry for key, entry in sources.items() if holds(request.get(key), entry)}


def record_built(request: dict[str, Any], sources: dict[str, Entry], memoized: frozenset[str]) -> dict[str, Any]:
    """Record ``request`` as what canonicalization just returned, with its :func:`kept_sources`, for
    :func:`built`."""
    BUILT.put(id(request), Built(request, _shape(request), sources, memoized), 1)
    return request


def built(value: Any) -> Built | None:
    """What :func:`record_built` recorded for ``value``, if it is still as built: same fields, same array items of
    the same sizes, and a None at each null of its sources."""
    if type(value) is not dict:
        return None
    known = BUILT.get(id(value))
    if known is None or known.request is not value or known.shape != _shape(value):
        return None
    if not all(entry.fits(value[key]) for key, entry in known.sources.items()):
        return None
    return known


def serialized(entry: Entry, dump: Callable[[Any], bytes]) -> bytes:
    """``dump(entry.value)``, computed once per memo entry: tools re-sent every turn are serialized once."""
    known = SERIALIZED.get(id(entry))
    if known is None or known[0] is not entry:
        raw = dump(entry.value)
        known = (entry, raw)
        SERIALIZED.put(id(entry), known, len(raw))
    return known[1]


def proven_nulls(value: Any) -> int:
    """How many Nones ``value`` is shown to hold, each at its own place, without walking what canonicalization built.

    A value :func:`remember` recorded counts its recorded nulls when each is still a None (an edit elsewhere in it
    shows as more null tokens than Nones). Other containers are walked; subclasses are not, so they count nothing.
    """
    if value is None:
        return 1
    kind = type(value)
    if kind is not dict and kind is not list and kind is not tuple:
        return 0
    known = KNOWN_NULLS.get(id(value))
    if known is not None and known.value is value and known.fits(value):
        return len(known.nulls)
    return sum(map(proven_nulls, value.values() if kind is dict else value))


@dataclass(frozen=True)
class Entry:
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


class History(NamedTuple):
    """The last message list: its compact JSON, where each message ends in it, and the canonical messages.

    Agents re-send their history every turn with a turn or two added, so the leading messages whose bytes match
    the last list are reused with one comparison instead of a serialization and a memo lookup each.
    """

    raw: bytes
    ends: list[int]
    values: list[Any]
    nulls: list[tuple[int, tuple[str | int, ...]]]
    """(message index, path) of each null, in message order: where an equal-bytes list may hold NaN/Infinity."""

    def output(self, count: int) -> Entry:
        """The first ``count`` canonical messages as an entry, with the nulls their inputs had."""
        return Entry(self.values[:count], [(index, *path) for index, path in self.nulls if index < count])

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


#: The history of a thread that has none yet (its lists are only ever sliced, never edited).
NO_HISTORY = History(b"[]", [], [], [])


class Histories:
    """The last message list of each thread (a conversation, as the caller names it), so that conversations
    interleaved on one canonicalizer each extend their own. The least recently extended are dropped once the lists'
    JSON passes ``max_bytes``; the last one is kept whatever its size. Thread-safe."""

    def __init__(self, max_bytes: int) -> None:
        self._kept: OrderedDict[str, History] = OrderedDict()
        self._last = NO_HISTORY
        self._bytes = 0
        self._max_bytes = max_bytes
        self._lock = threading.Lock()

    def get(self, thread: str) -> History:
        """The last list of ``thread``; for a thread not kept, the last list of any (conversations often begin
        alike: one system prompt)."""
        found = self._kept.get(thread)
        return self._last if found is None else found

    def put(self, thread: str, history: History) -> None:
        """Keep ``history`` as the last list of ``thread``, and of any."""
        with self._lock:
            kept = self._kept.pop(thread, None)
            self._bytes += len(history.raw) - (0 if kept is None else len(kept.raw))
            self._kept[thread] = self._last = history
            while self._bytes > self._max_bytes and len(self._kept) > 1:
                self._bytes -= len(self._kept.popitem(last=False)[1].raw)

    def __len__(self) -> int:
        return len(self._kept)
