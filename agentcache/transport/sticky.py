"""Earlier turns' relocated volatile lines, kept in the history where they were sent.

``relocate_volatile`` moves the system prompt's clock into a message at the end of the request. The agent never
wrote that message, so its next request lacks it: the server's cached prefix breaks right there, and the answer the
server cached after it is prefilled again, every turn. Remembered per session and put back where it was sent, each
turn's relocated message becomes history, byte-identical to what the server holds; the model reads each turn's
clock beside the turn it dated, the current one last.

A request is matched to the remembered turn whose messages (the relocated ones aside) its own start with, the
longest, so that tree-search siblings, a retry and interleaved sessions under one id each find their parent. Lines
the history already holds last (a date that has not changed) are not added again. Only a digest of each turn's
messages is kept, with the few messages relocation made.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import Any

import orjson

from agentcache.canon.rules import message_text

__all__ = ["Edit", "Recalled", "RelocationMemory", "appended_index"]


@dataclass(frozen=True)
class Edit:
    """A message relocation made, placed by the agent's own messages: inserted before the message at ``at``, or
    replacing it (``replaces``: the lines were folded into it)."""

    at: int
    message: dict[str, Any]
    replaces: bool = False
    lines: str = ""
    """The relocated lines themselves: a later request whose lines are the same adds none."""


@dataclass(frozen=True)
class _Turn:
    length: int
    """How many of the agent's messages the turn had."""
    digest: bytes
    """Of those messages' canonical bytes, in order."""
    edit: Edit | None
    """The turn's own relocation (None: it added none)."""
    kept: _Turn | None
    """The turn whose relocations it kept, and so on back: the turns share their chain, each holds one edit."""

    def edits(self) -> tuple[Edit, ...]:
        """The relocations the turn's request carried, in order."""
        chain: list[Edit] = []
        turn: _Turn | None = self
        while turn is not None:
            if turn.edit is not None:
                chain.append(turn.edit)
            turn = turn.kept
        return tuple(reversed(chain))


@dataclass(frozen=True)
class Recalled:
    """A request with its session's earlier relocated messages put back, and what remembering it needs."""

    session: str
    body: dict[str, Any]
    """The canonical body with the earlier turns' edits applied, this turn's relocated message included."""
    index: int | None
    """Where this turn's relocated message is in ``body["messages"]``; None when nothing was relocated."""
    edits: tuple[Edit, ...]
    """The earlier turns' edits that were applied."""
    kept: _Turn | None
    """The remembered turn they are the edits of."""
    origins: tuple[int | None, ...]
    """For each message of the body, its index among the agent's messages; None for one relocation made."""
    length: int
    digest: bytes
    lines: str = ""
    """This turn's relocated lines."""


def appended_index(canonical: dict[str, Any], original: dict[str, Any]) -> int | None:
    """Index of the message ``relocate_volatile`` appended to ``canonical`` (before a final assistant prefill, if
    any); None when it appended none. Canonicalization adds no other message."""
    after, before = canonical.get("messages"), original.get("messages")
    if not isinstance(after, list) or not isinstance(before, list) or len(after) <= len(before):
        return None
    last = after[-1]
    return len(after) - 2 if isinstance(last, dict) and last.get("role") == "assistant" else len(after) - 1


class RelocationMemory:
    """Per session, the turns whose relocated messages later requests keep: ``recall`` puts them back into a new
    request, ``remember`` records what was sent. Thread-safe; bounded in sessions and in turns per session."""

    def __init__(self, sessions: int = 4096, turns: int = 64) -> None:
        self._sessions: OrderedDict[str, deque[_Turn]] = OrderedDict()
        self._limit = sessions
        self._turns = turns
        self._lock = threading.Lock()

    def recall(self, session: str, canonical: dict[str, Any], index: int | None, keep: bool = True) -> Recalled:
        """``canonical`` (whose relocated message, if any, is at ``index``) with the relocated messages of the
        remembered turn it extends put back where they were sent; none with ``keep`` false."""
        messages: list[Any] = canonical["messages"]
        lines = "" if index is None else message_text(messages[index].get("content"))
        agents = messages if index is None else [*messages[:index], *messages[index + 1 :]]
        digests = _prefix_digests(agents)
        with self._lock:
            turns = tuple(self._sessions.get(session, ())) if keep else ()
        parent = max(  # the longest; of equals, the latest (a re-sent request's)
            (t for t in reversed(turns) if t.length <= len(agents) and digests[t.length] == t.digest),
            key=lambda t: t.length,
            default=None,
        )
        kept = parent
        if parent is not None and parent.length == len(agents):  # re-sent: what came before its first sending
            kept = parent.kept
        earlier = () if kept is None else kept.edits()
        # Lines the history already holds last (a date that has not changed) are not added again.
        own = [] if index is None or (earlier and earlier[-1].lines == lines) else [Edit(index, messages[index])]
        body, origins, positions = _apply(agents, [*earlier, *own])
        at = positions[-1] if own else None
        return Recalled(
            session, {**canonical, "messages": body}, at, earlier, kept, origins, len(agents), digests[-1], lines
        )

    def remember(self, recalled: Recalled, relocated: int | None, folded: bool, body: dict[str, Any]) -> None:
        """Record the turn ``recalled`` became once placed: ``body`` was sent with the turn's relocated lines in its
        message at ``relocated``, folded into the agent's message there when ``folded``."""
        edit = None
        if relocated is not None:
            message = body["messages"][relocated]
            at = recalled.origins[relocated] if folded else _agents_before(recalled.origins, relocated)
            if at is None:  # folded into a message relocation made: nothing of the agent's to place it by
                return
            edit = Edit(at, message, folded, recalled.lines)
        turn = _Turn(recalled.length, recalled.digest, edit, recalled.kept)
        with self._lock:
            turns = self._sessions.pop(recalled.session, None) or deque(maxlen=self._turns)
            turns.append(turn)
            self._sessions[recalled.session] = turns
            while len(self._sessions) > self._limit:
                self._sessions.popitem(last=False)


def _prefix_digests(messages: list[Any]) -> list[bytes]:
    """The digest of each prefix of ``messages``, the empty one first."""
    running = hashlib.blake2b(digest_size=16)
    digests = [running.digest()]
    for message in messages:
        encoded = orjson.dumps(message, option=orjson.OPT_SORT_KEYS)
        running.update(len(encoded).to_bytes(8, "little"))
        running.update(encoded)
        digests.append(running.digest())
    return digests


def _apply(agents: list[Any], edits: list[Edit]) -> tuple[list[Any], tuple[int | None, ...], list[int]]:
    """``(messages, origins, positions)``: the agent's messages with ``edits`` applied (a later replacement of one
    message wins), each message's index among the agent's (None for an inserted one), and where each edit landed."""
    inserts: dict[int, list[int]] = {}
    replaced: dict[int, int] = {}
    for number, edit in enumerate(edits):
        if edit.replaces:
            replaced[edit.at] = number
        else:
            inserts.setdefault(edit.at, []).append(number)
    messages: list[Any] = []
    origins: list[int | None] = []
    positions = [0] * len(edits)
    for at in range(len(agents) + 1):
        for number in inserts.get(at, ()):
            positions[number] = len(messages)
            messages.append(edits[number].message)
            origins.append(None)
        if at < len(agents):
            replacement = replaced.get(at)
            if replacement is not None:
                positions[replacement] = len(messages)
            messages.append(agents[at] if replacement is None else edits[replacement].message)
            origins.append(at)
    return messages, tuple(origins), positions


def _agents_before(origins: tuple[int | None, ...], index: int) -> int:
    """How many of the agent's messages come before position ``index``: an insert there goes before that one."""
    return sum(1 for origin in origins[:index] if origin is not None)
