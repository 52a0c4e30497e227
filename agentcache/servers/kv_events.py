"""The servers' own record of their KV cache: the KV cache events SGLang and vLLM publish over ZMQ.

Started with ``--kv-events-config`` (``{"publisher": "zmq", "endpoint": "tcp://...:P"}``; vLLM also takes
``"enable_kv_cache_events": true``), an engine publishes on a ZMQ PUB socket messages of three frames: the topic,
a sequence number (8 bytes, big-endian, from 0 per publisher, so a jump means missed messages) and a msgpack batch
``[ts, events, dp_rank]``. Each event is a map tagged by ``type`` (``BlockStored``, ``BlockRemoved``,
``AllBlocksCleared``); older vLLM releases send arrays with the tag first, which are read too.

A ``BlockStored`` names the blocks written (``block_hashes``), the block they follow (``parent_block_hash``, None
at the root) and their ``token_ids``; SGLang sends one event per page (one token on CPU), vLLM one per run of full
blocks (a request's new blocks in one scheduler step; the blocks it matched are not sent again). A
``BlockRemoved`` names evicted blocks: SGLang a whole evicted leaf, vLLM one block, as it reuses a free one. The
hashes are the engine's own and opaque here: the blocks are matched by the token ids the events carry, so the
same code reads both engines. vLLM publishes a scheduler step's events before that step's outputs go to the API
server, so they arrive about when the response does (a few milliseconds before, at times just after); SGLang
publishes them just after.

:class:`ServerBlocks` keeps one server's blocks as the events describe them: which prefix of a prompt it holds now,
and where the server evicted a path since a given moment (a sequence number). :class:`KvEventStream` subscribes to
one engine and keeps its :class:`ServerBlocks` current on a background thread. It needs ``pyzmq`` and ``msgpack``
(the ``events`` extra), imported when a stream starts.
"""

from __future__ import annotations

import bisect
import threading
import time
from collections import deque
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from agentcache.errors import EventsError

STORED, REMOVED, CLEARED = "BlockStored", "BlockRemoved", "AllBlocksCleared"
PUBLISHERS = ("sglang", "vllm")
"""The servers (``CacheOptions.kind``) that publish KV events."""
KEEPS_COPIES = ("vllm",)
"""The servers that can hold one block twice (:class:`ServerBlocks` ``copies``)."""
PUBLISHES_BEFORE_ANSWER = ("vllm",)
"""The servers that publish a step's events before that step's outputs go out (vLLM's
``Scheduler.update_from_output``), so the events that arrived by a request's answer are all the server did until
its last step; SGLang publishes a request's own events after its response."""
CONNECT_SECONDS = 5
"""How long :meth:`KvEventStream.start` waits for the publisher (an engine not up yet still gets subscribed)."""
STORE_WAIT = 0.5
"""Seconds :meth:`KvEventStream.at_match` waits for a request's own first store to arrive, when it may have made
none."""
SURE_STORE_WAIT = 15.0
"""Seconds it waits for one the request must have made (:meth:`ServerBlocks.must_store`): on a loaded machine the
engine publishes, and this process reads, later than :data:`STORE_WAIT`, and a turn taken without its own store
misses the removals published before it."""
MAX_PENDING = 65_536
"""Removals kept for the predictor to take; older ones go first when it falls that far behind."""
#: The fields of a tag-first array event, in order (vLLM's encoding before tagged maps).
ARRAY_FIELDS = {STORED: ("block_hashes", "parent_block_hash", "token_ids", "block_size"), REMOVED: ("block_hashes",)}


@dataclass(frozen=True)
class Event:
    """One KV cache event: ``kind`` is ``BlockStored``, ``BlockRemoved`` or ``AllBlocksCleared``."""

    kind: str
    hashes: tuple[Hashable, ...] = ()
    parent: Hashable | None = None
    tokens: tuple[int, ...] = ()
    block_size: int = 0
    salt: str = ""
    """``cache_salt``: the namespace of the requests that stored the blocks."""


def decode_batch(payload: bytes) -> list[Event]:
    """The events of one published batch; an event of an unknown type is left out (newer engines add types)."""
    import msgpack

    batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    if not isinstance(batch, (list, tuple)) or len(batch) < 2 or not isinstance(batch[1], list):
        raise EventsError(f"not a KV event batch: expected [ts, events, ...], got {type(batch).__name__}")
    return [event for event in (_event(raw) for raw in batch[1]) if event is not None]


def _event(raw: Any) -> Event | None:
    if isinstance(raw, (list, tuple)) and raw and isinstance(raw[0], str):
        raw = {"type": raw[0], **dict(zip(ARRAY_FIELDS.get(raw[0], ()), raw[1:], strict=False))}
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    if kind == CLEARED:
        return Event(CLEARED)
    hashes = tuple(_hashable(h) for h in raw.get("block_hashes") or ())
    if kind == REMOVED:
        return Event(REMOVED, hashes)
    if kind == STORED:
        parent = raw.get("parent_block_hash")
        tokens = tuple(_token(t) for t in raw.get("token_ids") or ())
        parent = None if parent is None else _hashable(parent)
        return Event(STORED, hashes, parent, tokens, int(raw["block_size"]), _salt(raw))
    return None


def _salt(stored: dict[str, Any]) -> str:
    """The ``cache_salt`` of a store: SGLang names it; vLLM puts it in the first block's ``extra_keys``, which it
    sends only on a store at the root. That entry holds, in order, the LoRA name (when ``lora_name`` is set),
    ``(mm_identifier, offset)`` pairs, the salt and prompt-embeds digests (bytes): the salt is the one string left
    after the LoRA name."""
    if stored.get("cache_salt"):
        return str(stored["cache_salt"])
    keys = stored.get("extra_keys")
    if stored.get("parent_block_hash") is not None or not keys or not keys[0]:
        return ""
    texts = [key for key in keys[0] if isinstance(key, str)][1 if stored.get("lora_name") else 0 :]
    return texts[0] if texts else ""


def _hashable(value: Any) -> Hashable:
    hashable: Hashable = bytes(value) if isinstance(value, (bytearray, memoryview)) else value
    return hashable


def _token(value: Any) -> int:
    """A token id; SGLang's bigram pages send pairs, of which the first is the token."""
    return int(value[0]) if isinstance(value, (list, tuple)) else int(value)


@dataclass(frozen=True)
class Removal:
    """What one event took out of the server's cache: the tokens of the path from the root to the end of the
    blocks removed, and where the removed part starts; ``path`` empty and ``start`` 0 when everything went."""

    seq: int
    path: tuple[int, ...]
    start: int
    salt: str = ""
    """The ``cache_salt`` of the requests that stored the blocks (their namespace)."""
    order: int = 0
    """Position of the event in everything the server published since the subscription."""
    blocks: tuple[Hashable, ...] = ()
    """The removed blocks, in path order."""


@dataclass(frozen=True)
class Held:
    """What a server held of a prompt's path at one moment, by its events: the leading ``tokens`` it held, and
    whether the events know that it held no more (the next block of the path was stored only later, or removed by
    then). Without that knowledge, the path runs into blocks no event named, which the server may have held since
    before the subscription."""

    tokens: int
    known: bool


@dataclass
class _Block:
    parent: Hashable | None
    tokens: tuple[int, ...]
    depth: int
    """Tokens from the root to the block's end."""
    salt: str = ""
    """The namespace of the chain's first block (vLLM sends the salt on that block only)."""
    rooted: bool = True
    """Whether the chain of parents reaches the root through blocks seen stored: a block stored onto one stored
    before the subscription has no known path, so its tokens cannot be placed."""
    copies: int = 1
    """How many of the server's blocks hold these tokens now: one or none, or more where the engine keeps copies
    (vLLM)."""
    stores: list[tuple[int, float]] = field(default_factory=list)
    """Every store of the block: the event's position, and when its message arrived (``time.monotonic()``)."""
    removed_at: int = -1
    """Sequence number of the message that last removed the block (-1: never)."""
    history: list[tuple[int, bool]] = field(default_factory=list)
    """Every event that stored or removed the block: its position, and whether the block was held after it."""

    @property
    def live(self) -> bool:
        """Whether the server holds the block now."""
        return self.copies > 0


class ServerBlocks:
    """One server's cached blocks as its KV events tell them, matched by token ids from the root.

    ``copies`` is for an engine that can hold the same block twice: vLLM computes a block again when the one
    before it was evicted (its lookup stops at the first miss), and keeps both copies under one hash. Each store
    then adds a copy, each removal takes one away, and the block is gone with its last copy. SGLang's tree holds
    each block once: a removal takes it."""

    def __init__(self, copies: bool = False) -> None:
        self.copies = copies
        self._blocks: dict[Hashable, _Block] = {}
        self._children: dict[tuple[Hashable | None, tuple[int, ...]], Hashable] = {}
        self._sizes: set[int] = set()
        self.seq = -1
        """Sequence number of the last message applied."""
        self.cleared_at = -1
        """Sequence number of the last ``AllBlocksCleared`` (-1: never)."""
        self.order = 0
        """Events applied so far: the next event's position."""

    def apply(self, events: Iterable[Event], seq: int, now: float = 0.0) -> list[Removal]:
        """Apply one message's events; returns what they removed. A removal of blocks whose path is not known
        (stored before the subscription, or onto blocks that were) cannot be placed and is left out: subscribe
        before the server's first request, or flush its cache once subscribed."""
        removals = []
        for event in events:
            self.order += 1
            if event.kind == CLEARED:
                for block in self._blocks.values():
                    block.copies, block.removed_at = 0, seq
                    block.history.append((self.order, False))
                self.cleared_at = seq
                removals.append(Removal(seq, (), 0, order=self.order))
            elif event.kind == REMOVED:
                known = [(key, self._blocks[key]) for key in event.hashes if key in self._blocks]
                for _, block in known:
                    block.copies = max(block.copies - 1, 0) if self.copies else 0
                    if not block.live:
                        block.removed_at = seq
                    block.history.append((self.order, block.live))
                placed = sorted(((k, b) for k, b in known if b.rooted), key=lambda item: item[1].depth)
                if placed:
                    first, deepest = placed[0][1], placed[-1][1]
                    path, keys = self._tokens_to(deepest), tuple(key for key, _ in placed)
                    start = first.depth - len(first.tokens)
                    removals.append(Removal(seq, path, start, deepest.salt, self.order, keys))
            else:
                self._store(event, now)
        self.seq = seq
        return removals

    def _tokens_to(self, block: _Block) -> tuple[int, ...]:
        """The tokens from the root to the end of ``block``."""
        pieces = [block.tokens]
        while block.parent is not None and block.parent in self._blocks:
            block = self._blocks[block.parent]
            pieces.append(block.tokens)
        return tuple(token for piece in reversed(pieces) for token in piece)

    def _store(self, event: Event, now: float) -> None:
        size = event.block_size or len(event.tokens)
        self._sizes.add(size)
        parent = event.parent
        above = self._blocks.get(parent) if parent is not None else None
        depth = 0 if above is None else above.depth
        rooted = parent is None or (above is not None and above.rooted)
        salt = event.salt if above is None else above.salt
        for index, key in enumerate(event.hashes):
            tokens = event.tokens[index * size : (index + 1) * size]
            depth += len(tokens)
            block = self._blocks.get(key)
            if block is None:
                block = self._blocks[key] = _Block(parent, tokens, depth, salt, rooted, copies=0)
            block.copies = block.copies + 1 if self.copies else 1
            block.stores.append((self.order, now))
            block.history.append((self.order, True))
            self._children[(parent, tokens)] = key
            parent = key

    def _path(self, tokens: Sequence[int]) -> Iterable[tuple[int, _Block]]:
        """The blocks on ``tokens``' path from the root, live or not, with the token count at each block's end."""
        size = min(self._sizes, default=0)
        parent: Hashable | None = None
        end = 0
        while size and end + size <= len(tokens):
            key = self._children.get((parent, tuple(tokens[end : end + size])))
            if key is None:
                return
            end += size
            yield end, self._blocks[key]
            parent = key

    def held(self, tokens: Sequence[int]) -> int:
        """How many leading tokens of ``tokens`` the server holds now, in whole blocks."""
        return self.held_before(tokens, self.order + 1).tokens

    def held_before(self, tokens: Sequence[int], before: int) -> Held:
        """What the server held of ``tokens``' path just before event ``before`` (see :class:`Held`)."""
        held = 0
        for end, block in self._path(tokens):
            index = bisect.bisect_left(block.history, (before,))
            if index == 0 or not block.history[index - 1][1]:  # stored only later, or removed by then
                return Held(held, known=True)
            held = end
        return Held(held, known=False)

    def evicted_since(self, tokens: Sequence[int], seq: int) -> int | None:
        """Where the server evicted ``tokens``' path after message ``seq``: the token count before the first block
        removed since then (None when no block of the path was)."""
        start = 0
        for end, block in self._path(tokens):
            if block.removed_at > seq:
                return start
            start = end
        return None

    def still_gone(self, removal: Removal, before: int) -> Removal | None:
        """``removal`` without its leading blocks the server stored again before event ``before`` (a request whose
        match came after that re-store could read them); None when none is still gone. Where the engine keeps
        copies, the removal is whole: it took one copy, and the model that served the re-store holds that copy
        too, so dropping one there gives the same count in either order."""
        if self.copies:
            return replace(removal, blocks=())
        start = removal.start
        for key in removal.blocks:
            block = self._blocks[key]
            if not any(removal.order < order < before for order, _ in block.stores):
                break
            start += len(block.tokens)
        return None if start >= len(removal.path) else replace(removal, start=start, blocks=())

    def must_store(self, tokens: Sequence[int], matched: int) -> bool:
        """Whether a request whose prompt is ``tokens``, of which the server matched ``matched``, stored a block
        these events will show: a whole block of the prompt lies past the match (both engines store each block
        they compute); the events know the prompt's path through the match and its first block, so ``tokens`` are
        the server's own and the store will be found on that path; and they do not hold every whole block of it
        already (a prompt sent before is matched short of its end, to compute one token, and SGLang then stores
        nothing of it again)."""
        size = min(self._sizes, default=0)
        if not size or len(tokens) - matched < size:
            return False
        known = held = 0
        for end, block in self._path(tokens):
            known = end
            if block.live and held == end - len(block.tokens):
                held = end
        return known >= max(matched, size) and held < len(tokens) - len(tokens) % size

    def stores_after(self, tokens: Sequence[int], after: float, beyond: int = 0) -> list[int]:
        """The positions, in order, of the events that stored a block of ``tokens``' path past token ``beyond`` and
        arrived after ``after`` (``time.monotonic()``): for a request sent then that the server says matched
        ``beyond`` tokens, the candidates for its own first store, which the server makes right after matching its
        prefix. An earlier request's store can be among them when its message arrived late (the stream read behind
        the server): :meth:`KvEventStream.at_match` tells them apart by what the server held before each."""
        orders = {
            order for end, block in self._path(tokens) if end > beyond for order, at in block.stores if at > after
        }
        return sorted(orders)

    def matched_at(self, tokens: Sequence[int], before: int, matched: int) -> bool:
        """Whether just before event ``before`` the events held exactly ``matched`` tokens of ``tokens``' path, as
        the server did when it matched that many: the test that places a request's match in the event order."""
        return self.held_before(tokens, before).tokens == matched

    def held_exactly(self, tokens: Sequence[int], since: int, matched: int) -> int | None:
        """The first position from event ``since`` on (up to the next event) before which the events held exactly
        ``matched`` tokens of ``tokens``' path, as the server did when it matched them; None when there is none.
        What the events hold of the path changes only at the events that stored or removed one of its blocks, so
        only the positions just after those are looked at."""
        positions = {since, self.order + 1}
        for _, block in self._path(tokens):
            positions.update(order + 1 for order, _ in block.history if order >= since)
        return next((p for p in sorted(positions) if self.matched_at(tokens, p, matched)), None)

    def stats(self) -> dict[str, int]:
        live = sum(len(b.tokens) for b in self._blocks.values() if b.live)
        return {"seq": self.seq, "blocks": len(self._blocks), "live_tokens": live}


class KvEventStream:
    """A subscription to one engine's KV events, applied to :attr:`blocks` on a background thread.

    ``missed`` counts the messages a jump in sequence numbers showed were lost (a subscriber joining late, or a
    slow one the publisher dropped): after a loss, :attr:`blocks` may lack stores and removals, and what it says
    is a lower bound on what the server evicted."""

    def __init__(self, endpoint: str, topic: str = "", copies: bool = False) -> None:
        self.endpoint = endpoint
        self.topic = topic
        self.blocks = ServerBlocks(copies)
        self.missed = 0
        self.last_message = 0.0
        """``time.monotonic()`` when the last message arrived (0.0: none yet)."""
        self.error: str | None = None
        """Why the stream stopped reading, or None while it reads."""
        self._removals: deque[tuple[float, Removal]] = deque(maxlen=MAX_PENDING)
        self._arrivals: deque[tuple[float, int]] = deque(maxlen=MAX_PENDING)
        """``(time.monotonic(), the last event's position)`` of each message, oldest first."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    def start(self) -> KvEventStream:
        try:
            import msgpack  # noqa: F401
            import zmq  # noqa: F401
        except ImportError as exc:
            raise EventsError(
                f"KV events need pyzmq and msgpack ({exc.name} is missing): pip install 'agentcache[events]'"
            ) from exc
        self._thread = threading.Thread(target=self._run, name=f"agentcache-kv-events {self.endpoint}", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def _run(self) -> None:
        import zmq

        context: zmq.Context[zmq.Socket[bytes]] = zmq.Context.instance()
        socket = context.socket(zmq.SUB)
        try:
            socket.setsockopt(zmq.LINGER, 0)
            socket.setsockopt_string(zmq.SUBSCRIBE, self.topic)
            self._connect(socket)
            self._ready.set()
            while not self._stop.is_set():
                if not socket.poll(100):
                    continue
                frames = socket.recv_multipart()
                if len(frames) != 3:
                    continue
                self.receive(int.from_bytes(frames[1], "big"), decode_batch(frames[2]), time.monotonic())
        except Exception as exc:  # the stream is advice: a broken one says why and stops, the requests go on
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self._ready.set()
            socket.close()

    def receive(self, seq: int, events: list[Event], now: float) -> None:
        """Apply one message (sequence number ``seq``) that arrived at ``now`` (``time.monotonic()``)."""
        with self._lock:
            if self.blocks.seq >= 0 and seq > self.blocks.seq + 1:
                self.missed += seq - self.blocks.seq - 1
            self.last_message = now
            self._removals.extend((now, removal) for removal in self.blocks.apply(events, seq, now))
            self._arrivals.append((now, self.blocks.order))

    def _connect(self, socket: Any) -> None:
        """Connect, and wait (up to a few seconds) until the handshake with the publisher is done, so the events
        of a request sent once :meth:`start` returns are not lost to ZMQ's late subscriber."""
        import zmq

        monitor = socket.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        try:
            socket.connect(self.endpoint)
            if monitor.poll(CONNECT_SECONDS * 1000):
                monitor.recv_multipart()
                time.sleep(0.05)  # the subscription follows the handshake
        finally:
            socket.disable_monitor()
            monitor.close()

    def settle(self, quiet: float = 0.3, timeout: float = 10.0) -> bool:
        """Wait until no message has arrived for ``quiet`` seconds, counted from this call at the earliest: an engine
        publishes a request's events just after its response (SGLang streams the output first), so they may still
        be on their way. False when messages still came after ``timeout``."""
        began = time.monotonic()
        deadline = began + timeout
        while time.monotonic() < deadline:
            with self._lock:
                since = time.monotonic() - max(self.last_message, began)
            if since >= quiet:
                return True
            time.sleep(0.05)
        return False

    def held(self, tokens: Sequence[int]) -> int:
        with self._lock:
            return self.blocks.held(tokens)

    def evicted_since(self, tokens: Sequence[int], seq: int) -> int | None:
        with self._lock:
            return self.blocks.evicted_since(tokens, seq)

    def at_match(
        self,
        tokens: Sequence[int],
        sent: float,
        matched: int | None = None,
        answered: float | None = None,
        wait: float = STORE_WAIT,
    ) -> tuple[list[Removal], Held]:
        """The server's cache when it matched the request sent at ``sent`` (``time.monotonic()``) whose prompt is
        ``tokens``, as of the request's own first store (past the ``matched`` tokens the server reported cached,
        when it did): the removals published before it, not taken yet, less the blocks stored again before it;
        and what the server held of the prompt's path then.

        The own store is the first store past the match, arrived after ``sent``, before which the events held
        exactly ``matched`` tokens of the path, as the server did when it matched them. A store that arrived after
        ``sent`` but before which the events held more or less was made before the match and read late (a reader
        behind the server, on a loaded machine): taken for the request's own, it placed the match before the
        removals that shortened it. SGLang publishes that store just after the response, so it is waited for, up
        to ``wait`` seconds, or :data:`SURE_STORE_WAIT` when the request must have stored one
        (:meth:`ServerBlocks.must_store`) and the stream still reads.

        A request that stored no new block has none: its match is placed at the first moment after ``sent`` when
        the events held exactly ``matched`` tokens of its path, however late they were read. Where the stream lost
        messages or the server reported no match, the events cannot be checked so: then the first store past the
        match, else the events that arrived by ``answered``, when the request's answer came from a server that
        publishes before it answers (:data:`PUBLISHES_BEFORE_ANSWER`; a block the request matched is freed, and
        can be evicted, only after its answer), else the events that arrived so far."""
        with self._lock:
            sure = matched is not None and self.error is None and self.blocks.must_store(tokens, matched)
        deadline = time.monotonic() + max(wait, SURE_STORE_WAIT if sure else 0.0)
        checked = -1
        while True:
            with self._lock:
                exact = matched is not None and not self.missed
                stores = self.blocks.stores_after(tokens, sent, matched or 0)
                limit = None
                for order in stores:
                    if order > checked:
                        checked = order
                        if not exact or self.blocks.matched_at(tokens, order, matched or 0):
                            limit = order
                            break
                if limit is None and time.monotonic() >= deadline:
                    limit = self._fallback(tokens, sent, matched if exact else None, answered, stores)
                if limit is not None:
                    return self._take(limit), self.blocks.held_before(tokens, limit)
            time.sleep(0.005)

    def _fallback(
        self, tokens: Sequence[int], sent: float, matched: int | None, answered: float | None, stores: list[int]
    ) -> int:
        """Where a request is matched when no own store was found by the deadline (see :meth:`at_match`)."""
        since = None if matched is None else self.blocks.held_exactly(tokens, self._order_by(sent), matched)
        if since is not None:
            return since
        return stores[0] if stores else self._order_by(answered)

    def _order_by(self, moment: float | None) -> int:
        """The position just past the last event that arrived by ``moment`` (None: by now)."""
        if moment is None:
            return self.blocks.order + 1
        # Newest first: the moment is a just-answered request's, so the walk stops within the last few messages.
        last = next((order for arrived, order in reversed(self._arrivals) if arrived <= moment), 0)
        return last + 1

    def _take(self, limit: int) -> list[Removal]:
        taken = []
        while self._removals and self._removals[0][1].order < limit:
            removal = self._removals.popleft()[1]
            if not removal.path:
                taken.append(replace(removal, blocks=()))
            elif (kept := self.blocks.still_gone(removal, limit)) is not None:
                taken.append(kept)
        return taken

    @property
    def seq(self) -> int:
        with self._lock:
            return self.blocks.seq

    def close(self, wait: float = 5.0) -> None:
        """Stop reading (the thread ends within its next poll), waiting up to ``wait`` seconds for it to end."""
        self._stop.set()
        if self._thread is not None and wait > 0:
            self._thread.join(wait)

    def __enter__(self) -> KvEventStream:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
