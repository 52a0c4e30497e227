"""The abstract domain: what the analysis knows about a value (where it may come from, whether it is a set, its
text, the layout of a string being built), how values combine, and the scopes that bind them to names."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, replace

from agentcache.lint.python.syntax import code

#: Kinds of :class:`Origin`: the first five differ between calls (SHUFFLE: ``random.shuffle``'s order, ARRIVAL: the
#: order concurrent tasks finished in, :mod:`~agentcache.lint.python.arrival`); PROCESS (a
#: process's or a thread's id), ORDER (a set's iteration order), KEYS (that order as the order of a dict's keys,
#: which sorting the keys removes) and KEY_ORDER (``json.dumps`` without ``sort_keys`` of data ordered by a set)
#: differ between processes.
CLOCK, RANDOM, FRESH_ID, SHUFFLE, ARRIVAL, PROCESS = "clock", "random", "id", "shuffle", "arrival", "process"
ORDER, KEYS, KEY_ORDER = "order", "keys", "key-order"
#: The order concurrent tasks finished in, as the order of a dict's keys (``d[name] = client``), held as
#: :attr:`Value.unordered` until the dict is iterated: ``json.dumps(d, sort_keys=True)`` removes it.
ARRIVAL_KEYS = "arrival-keys"
_ORDERS = frozenset({ORDER, KEYS, KEY_ORDER})
#: A parameter's value, where a function is run to learn what it returns of its arguments (a summary): neither
#: volatile nor an order, so no sink reports it; its label is the parameter's name.
PARAM = "param"
_NOT_VOLATILE = _ORDERS | {PARAM}
#: What a module exports that is a set not yet iterated (a kind of export, no :class:`Origin`'s): in the module that
#: reads it, it is a set, whose order is taken where it is iterated.
SET = "set"
#: What a module exports that is a collection filled in the order concurrent tasks finished, not yet iterated: it
#: takes that order where it is iterated, as a set takes its hash order.
ARRIVED = "arrived"
#: Elements a tuple value keeps one by one (:attr:`Value.items`): enough for a function's several results.
MAX_ITEMS = 8
#: The kinds that are a sequence's order, not its items': an item read from the sequence does not carry them.
_DRAWN_ORDERS = frozenset({SHUFFLE, ARRIVAL})
_SEQUENCE_ORDERS = _DRAWN_ORDERS | {ORDER, KEYS}


@dataclass(frozen=True, order=True)
class Origin:
    """Where a value that differs between calls comes from. ``column`` is ast's UTF-8 byte offset."""

    line: int
    column: int
    kind: str
    label: str

    @classmethod
    def at(cls, node: ast.expr, kind: str) -> Origin:
        return cls(node.lineno, node.col_offset, kind, code(node))


@dataclass(slots=True, unsafe_hash=True)
class Value:
    """What the analysis knows about a value.

    ``origins`` are the sources it may derive from; ``unordered`` is set when the value is itself a set (where
    it was made): iterating it injects hash order. ``text`` is its exact text when it is a constant string, so
    ``TEMPLATE.format(...)`` can be laid out. ``shape`` is the layout of a string being built: runs of stable
    characters (an int, the count when known) and interpolated values; AC105 reads it.

    Immutable by convention (never assigned after it is made: values are shared between scopes and memo keys),
    not ``frozen``: a frozen dataclass's ``__init__`` costs three times as much, and a lint run makes millions.
    """

    origins: frozenset[Origin] = frozenset()
    unordered: Origin | None = None
    text: str | None = None
    shape: tuple[int | Value, ...] | None = None
    items: tuple[Value, ...] | None = None
    """A short tuple's elements, one value each (``return state, prompt``), so that unpacking it gives each name
    its own: the tuple as a whole still carries all their origins. Kept up to :data:`MAX_ITEMS` elements: values
    are memo keys, hashed on every call."""
    entries: tuple[tuple[str, Value], ...] | None = None
    """A dict's items under constant keys that differ or are sets (``{"date": today}``, ``d["date"] = today``),
    so that a template given the dict reads only the variables it prints: the dict as a whole still carries all
    their origins, and those no entry holds may be under any key (:func:`unattributed`)."""
    cls: str | None = None
    """The class an object was made of (``pkg.mod.Budget`` of ``Budget(...)`` or ``Budget.for_model(...)``), when
    the analysis knows something of it: ``obj.field`` reads the field a class of the module sets, ``obj.method(...)``
    follows a summary another module exports; a Jinja template of a text not found is a ``jinja2.Template``, and a
    dict whose values are sets a ``builtins.dict[set]`` (:data:`~.vocabulary.SETS`), names no module defines. What
    the object carries as a whole is what it was given (``origins``), not its fields."""


CLEAN = Value()


def combine(*values: Value) -> Value:
    """A value computed from all of these: it differs when any of them does; text and set-ness are gone."""
    origins: frozenset[Origin] | None = None
    for value in values:
        if value.origins:  # most values have none: no set is built for them
            origins = value.origins if origins is None else origins | value.origins
    return Value(origins) if origins else CLEAN


def meet(first: Value, *others: Value) -> Value:
    """What every one of these values holds, in a run that keeps only what every call reaches: the origins they
    share, and a clock, a draw or an id every one holds, read where it may be (``now = datetime.now(tz) if tz else
    datetime.now()``); a tuple's parts and a dict's entries under the keys all hold met one by one, and the text
    and class they all have kept."""
    if all(other is first for other in others):
        return first
    shared = first.origins.intersection(*(other.origins for other in others))
    kinds = {origin.kind for origin in volatile(first.origins)}.intersection(
        *({origin.kind for origin in volatile(other.origins)} for other in others)
    )
    shared |= {origin for origin in volatile(first.origins) if origin.kind in kinds}
    items = None
    if first.items is not None and all(
        other.items is not None and len(other.items) == len(first.items) for other in others
    ):
        items = tuple(meet(*parts) for parts in zip(first.items, *(other.items or () for other in others), strict=True))
    entries = None
    if first.entries is not None and all(other.entries is not None for other in others):
        held = [dict(other.entries or ()) for other in others]
        entries = tuple(
            (key, meet(value, *(each[key] for each in held)))
            for key, value in first.entries
            if all(key in each for each in held)
        )
    text = first.text if all(other.text == first.text for other in others) else None
    cls = first.cls if all(other.cls == first.cls for other in others) else None
    return Value(frozenset(shared), text=text, items=items, entries=entries, cls=cls)


def join(first: Value, second: Value) -> Value:
    """A value that is one of these two (branches that merge)."""
    if first is second or first == second:
        return first
    items = None
    if first.items is not None and second.items is not None and len(first.items) == len(second.items):
        items = tuple(map(join, first.items, second.items))
    return Value(
        first.origins | second.origins,
        first.unordered or second.unordered,
        first.text if first.text == second.text else None,
        first.shape if first.shape == second.shape else None,
        items,
        None if first.entries is None and second.entries is None else _joined_entries(first, second),
        first.cls if first.cls == second.cls else None,
    )


def _joined_entries(first: Value, second: Value) -> tuple[tuple[str, Value], ...] | None:
    """The entries of a dict that is one of two: each key's values joined. A dict whose items are not known, but
    that differs, leaves none (what it holds may be under any key, where the other's entries say otherwise)."""
    if first.entries is None or second.entries is None:
        known = first if second.entries is None else second
        other = second if known is first else first
        return known.entries if not other.origins else None
    merged = dict(first.entries)
    for key, value in second.entries:
        merged[key] = join(merged[key], value) if key in merged else value
    return tuple(merged.items())


def merged(*mappings: Value) -> tuple[tuple[str, Value], ...] | None:
    """The entries of a dict made of these dicts' items, later ones winning (``{**a, **b}``, ``a | b``,
    ``a.update(b)``); what one holds under keys no entry names stays in the origins, where it may be anywhere."""
    entries: dict[str, Value] = {}
    for mapping in mappings:
        for key, value in mapping.entries or ():
            entries[key] = value
    return tuple(entries.items()) or None


def with_entry(mapping: Value, key: str, value: Value) -> tuple[tuple[str, Value], ...] | None:
    """``mapping``'s entries once ``key`` holds ``value`` (``d[key] = value``): a clean value drops the key (what it
    held, still in the dict's origins, may then be anywhere)."""
    entries = tuple(item for item in mapping.entries or () if item[0] != key)
    if value.origins or value.unordered is not None:
        entries += ((key, value),)
    return entries or None


def under(mapping: Value, key: str) -> Value:
    """What a dict may hold under ``key``: its entry, and what it holds under keys no entry names. A parameter's
    dict, in a function run for its summary, holds there the parameter's item (``variables[diff]``): its caller
    reads that key of the dict it gives."""
    rest = unattributed(mapping)
    if given_by_caller(rest.origins):
        rest = Value(
            frozenset(
                replace(origin, label=f"{origin.label}[{key}]")
                if origin.kind == PARAM and "[" not in origin.label
                else origin
                for origin in rest.origins
            )
        )
    for name, value in mapping.entries or ():
        if name == key:
            return join(value, rest)
    return rest


def unattributed(mapping: Value) -> Value:
    """What a dict holds under keys no entry names: its origins that no entry carries."""
    if not mapping.entries:
        return Value(mapping.origins) if mapping.origins else CLEAN
    held = frozenset().union(*(value.origins for _, value in mapping.entries))
    rest = mapping.origins - held
    return Value(rest) if rest else CLEAN


def segments(value: Value) -> tuple[int | Value, ...]:
    """The layout of ``value`` as text: its shape, or one run for a constant or for an unknown value."""
    if value.shape is not None:
        return value.shape
    if value.text is not None:
        return (len(value.text),)
    return (Value(value.origins),) if value.origins else (0,)


def concat(values: Sequence[Value]) -> Value:
    """Text made of these values one after another (f-strings, ``+``, ``.format``, ``.join``)."""
    parts: list[int | Value] = []
    for value in values:
        for part in segments(value):
            if isinstance(part, int) and parts and isinstance(parts[-1], int):
                parts[-1] += part
            else:
                parts.append(part)
    texts = [value.text for value in values]
    text = "".join(t for t in texts if t is not None) if None not in texts else None
    return Value(combine(*values).origins, None, text, tuple(parts))


def is_part(origin: Origin) -> bool:
    """Whether a parameter's origin is that of a part read of it (``agent.system``), not of the parameter."""
    return origin.label.endswith(".")


def made_set(node: ast.expr, *values: Value) -> Value:
    """A set made at ``node`` of ``values`` (``set(names)``, a set comprehension, an item of a dict of sets): it
    carries what differs of them, and the hash order it is iterated in, taken where it is."""
    return Value(volatile(combine(*values).origins), Origin.at(node, ORDER))


def volatile(origins: frozenset[Origin]) -> frozenset[Origin]:
    """The origins that differ from call to call (hash order differs only between processes)."""
    return frozenset(origin for origin in origins if origin.kind not in _NOT_VOLATILE)


def order_free(origins: frozenset[Origin]) -> frozenset[Origin]:
    """The origins left when the order of what was read is dropped (``sorted``, ``.sort()``, ``sum``): a set's
    order and a shuffle's go, clocks, draws and ids stay."""
    return frozenset(origin for origin in origins if origin.kind not in _ORDERS and origin.kind not in _DRAWN_ORDERS)


def given_by_caller(origins: frozenset[Origin]) -> bool:
    """Whether a value comes from a parameter of a function run for its summary (:data:`PARAM`)."""
    return any(origin.kind == PARAM for origin in origins)


def orders(value: Value, taken: bool = False) -> frozenset[Origin]:
    """Where ``value`` took, or (unless ``taken``) would take when iterated, the hash order of a set (not the
    order concurrent tasks finished in: :func:`changing`)."""
    found = frozenset(origin for origin in value.origins if origin.kind in _ORDERS)
    if value.unordered is None or taken or arrival(value) is not None:
        return found
    return found | {value.unordered}


def changing(value: Value, taken: bool = False) -> frozenset[Origin]:
    """What of ``value`` differs between calls: its volatile origins, and (unless ``taken``) the order of a
    collection filled as concurrent tasks finished, which it is read in (``tools=self.collected``)."""
    found = volatile(value.origins)
    arrived = None if taken else arrival(value)
    return found if arrived is None else found | {arrived}


def arrival(value: Value) -> Origin | None:
    """The order concurrent tasks finished in that a collection not yet iterated holds, as an origin."""
    held = value.unordered
    if held is None or held.kind not in (ARRIVAL, ARRIVAL_KEYS):
        return None
    return held if held.kind == ARRIVAL else replace(held, kind=ARRIVAL)


def kind_rank(kind: str) -> tuple[int, str]:
    """Which of two kinds an export keeps: what differs between calls before a set's order, before a set."""
    return (2 if kind in (SET, ARRIVED) else 1 if kind in _ORDERS else 0, kind)


def export_kind(value: Value) -> str | None:
    """What another module learns of ``value`` (:mod:`~agentcache.lint.python.project`): the first kind of its
    volatile origins, else of the set orders it took, else :data:`SET` for a set; None for a stable value."""
    kinds = [origin.kind for origin in value.origins if origin.kind != PARAM]
    if value.unordered is not None:
        kinds.append(SET if arrival(value) is None else ARRIVED)
    return min(kinds, key=kind_rank, default=None)


def read_export(kind: str, node: ast.expr) -> Value:
    """A name another module exports as ``kind`` (:func:`export_kind`), read at ``node``."""
    if kind in (SET, ARRIVED):
        return Value(unordered=Origin.at(node, ORDER if kind == SET else ARRIVAL))
    return Value(frozenset({Origin.at(node, kind)}))


def stable_tail(value: Value) -> tuple[frozenset[Origin], int, int] | None:
    """(origins of the first volatile part of a string, stable characters before it, stable characters after)."""
    parts = segments(value)
    for index, part in enumerate(parts):
        if isinstance(part, Value) and volatile(part.origins):
            before = sum(p for p in parts[:index] if isinstance(p, int))
            after = sum(p for p in parts[index + 1 :] if isinstance(p, int))
            return volatile(part.origins), before, after
    return None


def ordered(value: Value, site: ast.expr) -> Value:
    """``value`` read in iteration order at ``site`` (a sequence, a loop, printed): a set leaves hash order, and a
    dict whose keys came in a set's order gives a sequence in that order."""
    if value.unordered is not None:
        return Value(value.origins | {arrival(value) or Origin.at(site, ORDER)})
    if value.origins and any(origin.kind == KEYS for origin in value.origins):
        return Value(
            frozenset(replace(origin, kind=ORDER) if origin.kind == KEYS else origin for origin in value.origins)
        )
    return value


def arrival_of(order: frozenset[Origin]) -> tuple[frozenset[Origin], Origin | None]:
    """A loop's ``order`` without the order concurrent tasks finish in, and that order as a dict's key order (None:
    not in it): the keys a dict is given in it come in that order where it is iterated, while an item looked up by
    its key is the same."""
    arrived = min((origin for origin in order if origin.kind == ARRIVAL), default=None)
    if arrived is None:
        return order, None
    return order - {arrived}, replace(arrived, kind=ARRIVAL_KEYS)


def keyed(origins: frozenset[Origin]) -> frozenset[Origin]:
    """A set's order that ``origins`` hold, as the order of the keys of a dict built in it (a dict comprehension
    over a set, ``d[k] = v`` in a loop over one): ``json.dumps(d, sort_keys=True)`` removes it."""
    return frozenset(replace(origin, kind=KEYS) if origin.kind == ORDER else origin for origin in origins)


def unkeyed(value: Value) -> Value:
    """``value`` with its dicts' keys sorted: the set orders its keys took are gone, and so is the order concurrent
    tasks added them in."""
    held = None if value.unordered is not None and value.unordered.kind == ARRIVAL_KEYS else value.unordered
    if held is value.unordered and not any(origin.kind == KEYS for origin in value.origins):
        return value
    return Value(frozenset(origin for origin in value.origins if origin.kind != KEYS), held)


def element(iterable: Value) -> Value:
    """An item of ``iterable``: it carries the origins of the iterable's items, but not the iterable's order (each
    item of a set, or of a shuffled list, is the same whatever order they come in; what is built from them in
    that order carries it: see :func:`sequence_order`)."""
    kept = frozenset(origin for origin in iterable.origins if origin.kind not in _SEQUENCE_ORDERS)
    return Value(kept) if kept else CLEAN


def sequence_order(iterable: Value, site: ast.expr) -> frozenset[Origin]:
    """The order iterating ``iterable`` at ``site`` yields its items in, where it is not defined: a set's hash
    order, or the order of a set or shuffle it was made from (empty for a defined order)."""
    return frozenset(origin for origin in ordered(iterable, site).origins if origin.kind in _SEQUENCE_ORDERS)


class Scope:
    """Names bound in one function (or the module, or a comprehension); reads fall back to the parent."""

    __slots__ = ("parent", "vars")

    def __init__(self, parent: Scope | None = None) -> None:
        self.parent = parent
        self.vars: dict[str, Value] = {}

    def binder(self, name: str) -> Scope | None:
        """The scope that binds ``name``, this one or an enclosing one (None: none does)."""
        scope: Scope | None = self
        while scope is not None and name not in scope.vars:
            scope = scope.parent
        return scope

    def lookup(self, name: str) -> Value | None:
        scope = self.binder(name)
        return scope.vars[name] if scope is not None else None

    def update(self, name: str, value: Value) -> None:
        """Rebind ``name`` where it lives: a mutation (``append``, item assignment) changes that object."""
        (self.binder(name) or self).vars[name] = value

    def fork(self) -> Scope:
        """A copy for one branch; :meth:`merge` joins the branches back."""
        copy = Scope(self.parent)
        copy.vars = dict(self.vars)
        return copy

    def meet(self, first: Scope, *others: Scope) -> None:
        """Bind each name to what it holds in every branch (a run that keeps only what every call reaches:
        :func:`meet`); a name some branch does not bind is not known."""
        met: dict[str, Value] = {}
        for name, value in first.vars.items():
            values = [branch.vars[name] for branch in others if name in branch.vars]
            if len(values) == len(others):
                met[name] = meet(value, *values)
        self.vars = met

    def merge(self, first: Scope, *others: Scope) -> None:
        """Bind each name to the join of its values in the branches that bind it (forks of one scope share most
        values: a name bound to the same value everywhere is kept as it is)."""
        merged = dict(first.vars)
        for branch in others:
            for name, value in branch.vars.items():
                known = merged.get(name)
                if known is None:
                    merged[name] = value
                elif known is not value:
                    merged[name] = join(known, value)
        self.vars = merged
