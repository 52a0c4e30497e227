"""Injected drift: is each prefix break named with its real cause? agentcache against ``cachelint``.

Run: ``python bench/causes.py`` (``--sessions 60 --turns 12 --seed 18``; ``--no-peer`` for agentcache alone).
Target (issue 18): agentcache names the cause of >= 95% of drifted turns, with 0 false alarms on the no-drift
controls. Exits 1 when a target is missed.

Sessions are generated from a seeded RNG, half as OpenAI chat bodies and half as Anthropic Messages bodies: a
system prompt of varied rules holding a few volatile lines (a timestamp, a UUID, a provider id...), a handful of
tools with rich schemas, and a history that grows by a tool call and its result, or an answer and a new question,
every turn. Each turn after the first carries exactly one known drift (or none: the controls), picked so that
every class gets about the same number of turns. agentcache's figures come from ``agentcache.explain`` on the
trace, the path ``agentcache explain trace.jsonl`` runs. ``cachelint`` (``PEER``) is installed in a venv of its
own under the user's cache, and fed each pair of consecutive requests through its Python API in a subprocess;
its findings are read as causes by :func:`peer_cause` (the table is in docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import base64
import copy
import datetime
import json
import os
import random
import string
import subprocess
import sys
import unicodedata
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).parent))
import workload

from agentcache import explain
from agentcache.drift import Trace, TraceRecord
from agentcache.predict import causes

T = TypeVar("T")
PEER = "cachelint==0.1.0a2"
CONTROLS = ("control", "sampling_changed")
"""Turns with no drift of the prompt: the request only extends the previous one (``sampling_changed`` changes
``temperature``, ``top_p`` or ``max_tokens``, which are not part of the prompt). Any cause but ``none`` is a false
alarm."""
_WEIGHT = {"control": 4}
"""Plain controls are drawn four times as often as a drift class, so a false alarm rate is measured on more turns."""

_BASE62 = string.ascii_letters + string.digits
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_MODELS = {"openai": ["gpt-4.1", "gpt-4.1-mini", "gpt-4o"], "anthropic": ["claude-sonnet-4-5", "claude-haiku-4-5"]}
_AGENTS = ["Atlas", "Juniper", "Quill", "Harbor", "Sable", "Orbit"]
_ROLES = ["a coding agent", "a support assistant", "a data analyst", "a release engineer", "an SRE on call"]
_PROJECTS = ["the billing service", "the mobile app", "the search cluster", "the docs site", "the ingest pipeline"]
_RULES = [
    "Read the relevant files before you change anything.",
    "Prefer small, reviewable changes over large rewrites.",
    "Never print secrets, tokens or customer data in your answers.",
    "Run the tests after each change and report what failed.",
    "Ask before deleting data or rewriting published history.",
    "Explain each change in one short paragraph.",
    "Keep the existing style of the code you touch.",
    "When a tool returns an error, read it and fix the arguments.",
    "Cite the file and line for every claim about the code.",
    "Answer in the language the user writes in.",
    "Use the search tool before guessing where something lives.",
    "Summarize long tool output instead of pasting it.",
]
_SWAPS = {"small": "tiny", "short": "brief", "tests": "checks", "files": "sources", "error": "failure"}
_QUESTIONS = [
    "Why does the nightly job fail on the {n} step?",
    "Can you find where the {n} is validated and tighten it?",
    "Please list what changed in the {n} handling last week.",
    "The {n} export is slow; what is it waiting on?",
]
_NOUNS = ["invoice", "session", "upload", "schedule", "report", "webhook", "index", "quota"]
_ANSWERS = [
    "I found the cause and changed the {n} check; the tests pass now.",
    "The {n} code retries without a limit. I added a bound and a log line.",
    "Nothing in the {n} path changed; the slowdown comes from the new index.",
]
_TOOL_POOL = workload.tools(24, seed=18)
_ANTHROPIC_KEYS = {"parameters": "input_schema"}

#: The volatile lines a system prompt may hold: kind -> the labels its line may have. Each session holds three.
_LABELS = {
    "timestamp": ["Current time", "Now", "Generated at"],
    "uuid": ["Session id", "Conversation", "Run"],
    "provider_id": ["Last response", "Request", "Previous message"],
    "ulid": ["Trace", "Job", "Event id"],
    "jwt": ["Auth", "Bearer", "Identity token"],
    "epoch": ["Started at", "Cache epoch", "Deadline"],
    "snowflake": ["Channel message", "Build", "Snowflake"],
    "relative_time": ["Last sync", "Index refreshed", "Heartbeat"],
    "date": ["Today", "Current date", "Local time"],
    "counter": ["Tool budget", "Plan", "Retries"],
}
_ACCENTED = [
    "Names like Zoë, José and Françoise must keep their accents.",
    "The café and crème brûlée menus are in the résumé folder.",
    "Naïve datetimes from the Zürich office are local time.",
]


def _base62(rng: random.Random, length: int) -> str:
    """Random base62 with a digit and both cases, as provider ids have (and their guard asks for)."""
    while True:
        value = "".join(rng.choice(_BASE62) for _ in range(length))
        if any(c.isdigit() for c in value) and any(c.islower() for c in value) and any(c.isupper() for c in value):
            return value


def _moment(rng: random.Random) -> datetime.datetime:
    start = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    return start + datetime.timedelta(seconds=rng.randrange(3 * 365 * 86400))


def _pick(choices: list[T], style: int) -> T:
    return choices[style % len(choices)]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _value(kind: str, style: int, rng: random.Random) -> str:
    """A fresh value of a volatile kind, in the format ``style`` picks: an application keeps its format."""
    moment = _moment(rng)
    if kind == "timestamp":
        return moment.strftime(_pick(["%Y-%m-%dT%H:%M:%SZ", "%a %b %d %H:%M:%S UTC %Y", "%Y-%m-%d %H:%M:%S"], style))
    if kind == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if kind == "provider_id":
        prefix, length = _pick(
            [("chatcmpl-", 29), ("req_011C", 18), ("msg_01", 22), ("run_", 24), ("resp_", 28)], style
        )
        return prefix + _base62(rng, length)
    if kind == "ulid":
        ms = int(moment.timestamp() * 1000)
        time_part = "".join(_CROCKFORD[(ms >> (5 * i)) & 31] for i in reversed(range(10)))
        return time_part + "".join(rng.choice(_CROCKFORD) for _ in range(16))
    if kind == "jwt":
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        stamp = int(moment.timestamp())
        payload = _b64(json.dumps({"sub": str(rng.randrange(10**6)), "iat": stamp, "exp": stamp + 3600}).encode())
        return f"{header}.{payload}.{_b64(rng.randbytes(32))}"
    if kind == "epoch":
        seconds = int(moment.timestamp())
        return str(_pick([seconds, seconds * 1000 + rng.randrange(1000)], style))
    if kind == "snowflake":
        ms = int(moment.timestamp() * 1000) - 1_288_834_974_657
        return str((ms << 22) | rng.getrandbits(22))
    if kind == "relative_time":
        return f"{rng.randrange(2, 900)} {_pick(['ms', 'seconds', 'minutes'], style)} ago"
    if kind == "date":
        return moment.strftime(_pick(["%A, %B %d, %Y", "%Y-%m-%d", "%d %B %Y", "%H:%M UTC"], style))
    if kind == "counter":
        total = _pick([10, 20, 50], style)
        template = _pick(["{n} of {m} calls used", "step {n} of {m}", "{n} retries left"], style // 3)
        return template.format(n=rng.randrange(1, total), m=total)
    raise ValueError(kind)


@dataclass
class Session:
    """One session's state in a neutral form, rendered into either body format each turn."""

    name: str
    format: str
    model: str
    tools: list[dict[str, Any]]
    """``{name, description, parameters}``, key order as the agent sends it."""
    lines: list[str]
    """The system prompt's lines; a volatile line is ``"{label}: {value}"`` and recorded in ``volatile``."""
    volatile: dict[str, int]
    """kind -> index of its line in ``lines``."""
    styles: dict[str, int]
    """kind -> the format of its values (see :func:`_value`)."""
    layout: int = 0
    """How the body is laid out, fixed for the session (see :meth:`body`)."""
    newline: str = "\n"
    history: list[dict[str, Any]] = field(default_factory=list)
    """``{"kind": "user"|"answer", "text"}`` or ``{"kind": "call"|"result", "id", "name", "args"|"text"}``."""
    params: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        """The request. ``layout`` picks, per session, among the shapes clients send: OpenAI's ``system`` or
        ``developer`` role with a string or a list of parts; Anthropic's system as a string, one block, or a
        static block and the rest, user text as a string or a block, and a ``cache_control`` breakpoint that moves
        to the last message each turn (a string becomes a block to carry it)."""
        system = self.newline.join(self.lines)
        if self.format == "openai":
            tools: list[dict[str, Any]] = [{"type": "function", "function": tool} for tool in self.tools]
            content: Any = [{"type": "text", "text": system}] if self.layout & 1 else system
            first = {"role": "developer" if self.layout & 2 else "system", "content": content}
            messages = [first] + [_openai(m) for m in self.history]
            return {"model": self.model, "messages": messages, "tools": tools, **self.params}
        tools = [{_ANTHROPIC_KEYS.get(key, key): value for key, value in tool.items()} for tool in self.tools]
        shape = self.layout % 3
        rest = self.newline.join(self.lines[2:])  # lines[1] is the blank line after the first
        blocks: Any = [system, [_text(system)], [_text(self.lines[0]), _text(rest)]][shape]
        messages = [_anthropic(m, blocks=bool(self.layout & 8)) for m in self.history]
        if self.layout & 4:
            last = messages[-1]
            blocks_of_last = last["content"] if isinstance(last["content"], list) else [_text(last["content"])]
            last["content"] = [*blocks_of_last[:-1], {**blocks_of_last[-1], "cache_control": {"type": "ephemeral"}}]
        return {"model": self.model, "system": blocks, "messages": messages, "tools": tools, **self.params}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _openai(message: dict[str, Any]) -> dict[str, Any]:
    if message["kind"] == "user":
        return {"role": "user", "content": message["text"]}
    if message["kind"] == "answer":
        return {"role": "assistant", "content": message["text"]}
    if message["kind"] == "call":
        arguments = json.dumps(message["args"], separators=(",", ":") if message["compact"] else None)
        call = {"id": message["id"], "type": "function", "function": {"name": message["name"], "arguments": arguments}}
        reasoning = {"reasoning_content": message["reasoning"]} if message["reasoning"] else {}
        return {"role": "assistant", "content": None, **reasoning, "tool_calls": [call]}
    return {"role": "tool", "tool_call_id": message["id"], "content": message["text"]}


def _anthropic(message: dict[str, Any], blocks: bool) -> dict[str, Any]:
    if message["kind"] == "user":
        return {"role": "user", "content": [_text(message["text"])] if blocks else message["text"]}
    if message["kind"] == "answer":
        return {"role": "assistant", "content": [_text(message["text"])]}
    if message["kind"] == "call":
        use = {"type": "tool_use", "id": message["id"], "name": message["name"], "input": message["args"]}
        if not message["reasoning"]:
            return {"role": "assistant", "content": [use]}
        thinking = {"type": "thinking", "thinking": message["reasoning"], "signature": message["id"] + "sig"}
        return {"role": "assistant", "content": [thinking, use]}
    result = {"type": "tool_result", "tool_use_id": message["id"], "content": message["text"]}
    return {"role": "user", "content": [result]}


def new_session(index: int, rng: random.Random) -> Session:
    fmt = "openai" if index % 2 == 0 else "anthropic"
    lines = [f"You are {rng.choice(_AGENTS)}, {rng.choice(_ROLES)} for {rng.choice(_PROJECTS)}.", ""]
    lines += [f"- {rule}" for rule in [*rng.sample(_RULES, rng.randint(4, 7)), rng.choice(_ACCENTED)]]
    volatile: dict[str, int] = {}
    styles = {kind: rng.randrange(12) for kind in _LABELS}
    for kind in rng.sample(sorted(_LABELS), 3):
        at = rng.randint(2, len(lines))
        lines.insert(at, f"{rng.choice(_LABELS[kind])}: {_value(kind, styles[kind], rng)}")
        volatile = {k: i + (i >= at) for k, i in volatile.items()}
        volatile[kind] = at
    tools = [copy.deepcopy(tool["function"]) for tool in rng.sample(_TOOL_POOL, rng.randint(3, 6))]
    session = Session(
        f"s{index:03d}", fmt, rng.choice(_MODELS[fmt]), tools, lines, volatile, styles, layout=rng.randrange(16)
    )
    session.params = {"temperature": 0.2, "max_tokens": 1024} if fmt == "openai" else {"max_tokens": 2048}
    session.history.append({"kind": "user", "text": rng.choice(_QUESTIONS).format(n=rng.choice(_NOUNS))})
    return session


def grow(session: Session, rng: random.Random) -> None:
    """A turn's new messages: a tool call and its result, or an answer and the next question."""
    if rng.random() < 0.7:
        tool = rng.choice(session.tools)
        call_id = "call_" + _base62(rng, 24) if session.format == "openai" else "toolu_01" + _base62(rng, 22)
        args = {"query": rng.choice(_NOUNS), "limit": rng.choice([10, 50, 200])}
        thought = f"The user asked about the {rng.choice(_NOUNS)}; {rng.choice(_RULES).lower()}"
        output = "\n".join(
            f"{rng.choice(_NOUNS)}_{i}.py:{rng.randint(1, 400)}: {rng.choice(_RULES)}"
            for i in range(rng.randint(3, 12))
        )
        session.history += [
            {"kind": "call", "id": call_id, "name": tool["name"], "args": args, "reasoning": thought, "compact": False},
            {"kind": "result", "id": call_id, "text": output},
        ]
    else:
        noun = rng.choice(_NOUNS)
        session.history += [
            {"kind": "answer", "text": rng.choice(_ANSWERS).format(n=noun)},
            {"kind": "user", "text": rng.choice(_QUESTIONS).format(n=rng.choice(_NOUNS))},
        ]


# --- the drifts: each changes one thing, in place, and returns whether it applies to the session ---------------


def _rule_lines(session: Session) -> list[int]:
    """Indexes of the prompt's rule lines: text with no volatile value and no digit."""
    return [i for i, line in enumerate(session.lines) if line.startswith("- ")]


def _volatile(kind: str) -> Callable[[Session, random.Random], bool]:
    def drift(session: Session, rng: random.Random) -> bool:
        if kind not in session.volatile:
            return False
        at = session.volatile[kind]
        label, old = session.lines[at].split(": ", 1)
        new = old
        while new == old:
            new = _value(kind, session.styles[kind], rng)
        session.lines[at] = f"{label}: {new}"
        return True

    return drift


def trailing_space(session: Session, rng: random.Random) -> bool:
    at = rng.choice(_rule_lines(session))
    session.lines[at] += rng.choice([" ", "  ", "\t"])
    return True


def blank_line(session: Session, rng: random.Random) -> bool:
    at = rng.choice(_rule_lines(session))
    session.lines.insert(at + 1, "")
    session.volatile = {k: i + (i > at) for k, i in session.volatile.items()}
    return True


def line_endings(session: Session, rng: random.Random) -> bool:
    session.newline = "\r\n" if session.newline == "\n" else "\n"
    return True


def space_run(session: Session, rng: random.Random) -> bool:
    at = rng.choice(_rule_lines(session))
    words = session.lines[at].split(" ")
    gap = rng.randrange(1, len(words))
    session.lines[at] = " ".join(words[:gap]) + rng.choice(["  ", " \t"]) + " ".join(words[gap:])
    return True


def system_edited(session: Session, rng: random.Random) -> bool:
    at = rng.choice(_rule_lines(session))
    line = session.lines[at]
    swaps = [(old, new) for old, new in _SWAPS.items() if f" {old}" in line]
    if swaps and rng.random() < 0.5:
        old, new = rng.choice(swaps)
        session.lines[at] = line.replace(f" {old}", f" {new}", 1)
    else:
        rule = rng.choice([rule for rule in _RULES if f"- {rule}" not in session.lines])
        session.lines.insert(at + 1, f"- {rule}")
        session.volatile = {k: i + (i > at) for k, i in session.volatile.items()}
    return True


def tool_order(session: Session, rng: random.Random) -> bool:
    i, j = rng.sample(range(len(session.tools)), 2)
    session.tools[i], session.tools[j] = session.tools[j], session.tools[i]
    return True


def schema_key_order(session: Session, rng: random.Random) -> bool:
    tool = rng.choice(session.tools)
    props = tool["parameters"]["properties"]
    target = rng.choice([tool, tool["parameters"], props[rng.choice(list(props))]])
    keys = list(target)
    order = keys
    while order == keys:
        order = rng.sample(keys, len(keys))
    items = dict(target)
    target.clear()
    target.update((key, items[key]) for key in order)
    return True


def tool_added(session: Session, rng: random.Random) -> bool:
    names = {tool["name"] for tool in session.tools}
    new = rng.choice([tool["function"] for tool in _TOOL_POOL if tool["function"]["name"] not in names])
    session.tools.insert(rng.randint(0, len(session.tools)), copy.deepcopy(new))
    return True


def tool_removed(session: Session, rng: random.Random) -> bool:
    used = {m["name"] for m in session.history if m["kind"] == "call"}
    removable = [i for i, tool in enumerate(session.tools) if tool["name"] not in used]
    if len(session.tools) < 3 or not removable:
        return False
    del session.tools[rng.choice(removable)]
    return True


def tool_changed(session: Session, rng: random.Random) -> bool:
    tool = rng.choice(session.tools)
    text = tool["description"]
    edits = [text.replace("returns", "gives back", 1), text + " " + rng.choice(_RULES), text.split("; ")[0] + "."]
    tool["description"] = rng.choice([edit for edit in edits if edit != text])
    return True


def tool_whitespace(session: Session, rng: random.Random) -> bool:
    tool = rng.choice(session.tools)
    words = tool["description"].split(" ")
    gap = rng.randrange(1, len(words))
    tool["description"] = rng.choice(
        [tool["description"] + " ", " ".join(words[:gap]) + "  " + " ".join(words[gap:]), tool["description"] + "\n"]
    )
    return True


def _earlier(session: Session, kinds: tuple[str, ...]) -> list[int]:
    """Messages the previous request already held (this turn appended the last two), of the given kinds."""
    return [i for i, m in enumerate(session.history[:-2]) if m["kind"] in kinds]


def tool_schema_edit(session: Session, rng: random.Random) -> bool:
    tool = rng.choice(session.tools)
    props = tool["parameters"]["properties"]
    if rng.random() < 0.5:
        props[f"note_{len(props)}"] = {"type": "string", "description": "A free-form note kept with the call."}
    else:
        prop = props[rng.choice(list(props))]
        prop["description"] = prop.get("description", "") + " Deprecated: use the newer field."
    return True


def unicode_form(session: Session, rng: random.Random) -> bool:
    at = next(i for i, line in enumerate(session.lines) if not line.isascii())
    line = session.lines[at]
    nfc = unicodedata.is_normalized("NFC", line)
    session.lines[at] = unicodedata.normalize("NFD", line) if nfc else unicodedata.normalize("NFC", line)
    return True


def arguments_reserialized(session: Session, rng: random.Random) -> bool:
    """An earlier tool call sent again with its arguments serialized another way (the framework re-encodes them):
    compact JSON for OpenAI's string, keys in another order for Anthropic's object."""
    calls = _earlier(session, ("call",))
    if not calls:
        return False
    message = session.history[rng.choice(calls)]
    if session.format == "openai":
        message["compact"] = not message["compact"]
    else:
        message["args"] = dict(reversed(message["args"].items()))
    return True


def reasoning_stripped(session: Session, rng: random.Random) -> bool:
    calls = [i for i in _earlier(session, ("call",)) if session.history[i]["reasoning"]]
    if not calls:
        return False
    session.history[rng.choice(calls)]["reasoning"] = None
    return True


def history_edited(session: Session, rng: random.Random) -> bool:
    at = rng.choice(_earlier(session, ("user", "result", "answer")))
    message = session.history[at]
    text = message["text"]
    message["text"] = (
        text[: len(text) // 2] + " [truncated]"
        if rng.random() < 0.5
        else text.replace(" the ", " this ", 1) + " (edited)"
    )
    return True


def message_whitespace(session: Session, rng: random.Random) -> bool:
    """An earlier user message or tool output re-sent with other blanks: a trailing space, CRLF, a double space."""
    message = session.history[rng.choice(_earlier(session, ("user", "result")))]
    text = message["text"]
    edits = [text + " ", text.replace(" ", "  ", 1), text.replace("\n", "\r\n"), text.replace(": ", ":\t", 1)]
    message["text"] = rng.choice([edit for edit in edits if edit != text])
    return True


def message_removed(session: Session, rng: random.Random) -> bool:
    calls = [i for i in _earlier(session, ("call",)) if i + 1 < len(session.history) - 2]
    if not calls:
        return False
    at = rng.choice(calls)
    del session.history[at : at + 2]  # a call and its result: the history stays well formed
    return True


def model_changed(session: Session, rng: random.Random) -> bool:
    session.model = rng.choice([model for model in _MODELS[session.format] if model != session.model])
    return True


def response_format(session: Session, rng: random.Random) -> bool:
    if session.format != "openai":
        return False  # Anthropic's structured output is not a prompt part agentcache renders
    old = session.params.get("response_format")
    while session.params.get("response_format") == old:
        fields = rng.sample(["answer", "files", "confidence", "summary", "next_step"], 3)
        schema = {"type": "object", "properties": {f: {"type": "string"} for f in fields}, "required": fields[:1]}
        session.params["response_format"] = {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}
    return True


def sampling_changed(session: Session, rng: random.Random) -> bool:
    key = rng.choice(["temperature", "top_p", "max_tokens"])
    old = session.params.get(key)
    while session.params.get(key) == old:
        session.params[key] = rng.choice([256, 1024, 4096]) if key == "max_tokens" else rng.choice([0.0, 0.3, 0.7, 1.0])
    return True


def control(session: Session, rng: random.Random) -> bool:
    return True


#: class -> (drift, the cause agentcache must name).
CLASSES: dict[str, tuple[Callable[[Session, random.Random], bool], str]] = {
    "tool_order": (tool_order, causes.TOOL_ORDER),
    "schema_key_order": (schema_key_order, causes.SCHEMA_KEY_ORDER),
    "tool_added": (tool_added, causes.TOOL_ADDED),
    "tool_removed": (tool_removed, causes.TOOL_REMOVED),
    "tool_description_edit": (tool_changed, causes.TOOL_CHANGED),
    "tool_description_whitespace": (tool_whitespace, causes.WHITESPACE),
    "tool_schema_edit": (tool_schema_edit, causes.TOOL_CHANGED),
    **{f"volatile_{kind}": (_volatile(kind), causes.VOLATILE_VALUE) for kind in _LABELS},
    "trailing_space": (trailing_space, causes.WHITESPACE),
    "blank_line": (blank_line, causes.WHITESPACE),
    "line_endings": (line_endings, causes.WHITESPACE),
    "space_run": (space_run, causes.WHITESPACE),
    "unicode_form": (unicode_form, causes.WHITESPACE),
    "system_edited": (system_edited, causes.SYSTEM_EDITED),
    "history_edited": (history_edited, causes.HISTORY_REWRITTEN),
    "message_removed": (message_removed, causes.HISTORY_REWRITTEN),
    "reasoning_stripped": (reasoning_stripped, causes.HISTORY_REWRITTEN),
    "message_whitespace": (message_whitespace, causes.WHITESPACE),
    "arguments_reserialized": (arguments_reserialized, causes.WHITESPACE),
    "model_changed": (model_changed, causes.MODEL_CHANGED),
    "response_format": (response_format, causes.PARAMS_CHANGED),
    "sampling_changed": (sampling_changed, causes.NONE),
    "control": (control, causes.NONE),
}


@dataclass(frozen=True)
class Turn:
    session: str
    format: str
    drift: str
    expected: str
    before: dict[str, Any]
    after: dict[str, Any]


def generate(sessions: int, turns: int, seed: int) -> list[Turn]:
    """Every drifted or control turn of ``sessions`` sessions of ``turns`` requests, sessions interleaved turn by
    turn as a server sees them. Each turn's class is one of the least used so far (for its weight) that applies to its
    session."""
    rng = random.Random(seed)
    states = [new_session(i, rng) for i in range(sessions)]
    previous = {s.name: s.body() for s in states}
    counts: Counter[str] = Counter()
    out = []
    for _ in range(1, turns):
        for session in states:
            grow(session, rng)
            for name in sorted(CLASSES, key=lambda c: (counts[c] / _WEIGHT.get(c, 1), rng.random())):
                trial = copy.deepcopy(session)
                if CLASSES[name][0](trial, rng):
                    break
            session.__dict__.update(trial.__dict__)
            counts[name] += 1
            body = session.body()
            out.append(Turn(session.name, session.format, name, CLASSES[name][1], previous[session.name], body))
            previous[session.name] = body
    return out


def agentcache_causes(turns: list[Turn]) -> list[tuple[str, str]]:
    """(cause, detail) of each turn, from ``agentcache.explain`` on the trace the turns make: each session's first
    request, then every turn's request."""
    firsts = {t.session: t.before for t in reversed(turns)}
    records = [TraceRecord(i, session, body) for i, (session, body) in enumerate(firsts.items())]
    records += [TraceRecord(len(firsts) + i, t.session, t.after) for i, t in enumerate(turns)]
    reports = explain(Trace(records, []))[len(firsts) :]
    return [(report.cause, report.detail) for report in reports]


# --- the peer ---------------------------------------------------------------------------------------------------

_PEER_DRIVER = """
import json, sys
from cachelint import IncomparableRequestsError, InvalidRequestError, canonicalize_request, compare_requests
for line in sys.stdin:
    job = json.loads(line)
    try:
        before = canonicalize_request(job["before"], provider=job["provider"])
        after = canonicalize_request(job["after"], provider=job["provider"])
        result = compare_requests([before, after])
        d = result.first_divergence
        out = {"status": result.prompt_status, "common": result.common_prefix_segments,
               "segments": len(before.segments), "path": d and d.path, "kind": d and d.kind,
               "context": [c.category for c in result.context_differences]}
    except (IncomparableRequestsError, InvalidRequestError) as error:
        out = {"error": type(error).__name__, "reason": error.reason}
    print(json.dumps(out), flush=True)
"""


def peer_python(venv: Path) -> tuple[Path | None, str]:
    """The interpreter of a venv holding ``PEER``, created on first use; or None and why not."""
    python = venv / "bin" / "python"
    try:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=300)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", PEER], check=True, capture_output=True, timeout=600
        )
        return python, ""
    except (OSError, subprocess.SubprocessError) as exc:
        stderr = getattr(exc, "stderr", b"") or b""
        return None, f"{exc}: {stderr.decode(errors='replace').strip()[-300:]}"


def peer_findings(python: Path, turns: list[Turn]) -> list[dict[str, Any]]:
    jobs = "".join(json.dumps({"before": t.before, "after": t.after, "provider": t.format}) + "\n" for t in turns)
    done = subprocess.run(
        [str(python), "-c", _PEER_DRIVER], input=jobs, capture_output=True, text=True, check=True, timeout=600
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def peer_cause(finding: dict[str, Any], turn: Turn) -> str:
    """cachelint's finding read as one of agentcache's causes (docs/benchmarks.md has the table).

    cachelint names where the modeled prompt first differs (a path and a kind of difference) and which request
    context changed; it refuses to compare two models. It compares whole requests, so a request that only appends
    reports an insertion right after the previous request's last segment: that is the prefix holding.
    """
    if "error" in finding:
        return causes.MODEL_CHANGED if finding["error"] == "IncomparableRequestsError" else "error"
    path, kind = finding["path"] or "", finding["kind"]
    if finding["status"] == "identical" or (kind == "inserted" and finding["common"] == finding["segments"]):
        return causes.PARAMS_CHANGED if "response_format" in finding["context"] else causes.NONE
    if path.startswith("tools"):
        return {"inserted": causes.TOOL_ADDED, "removed": causes.TOOL_REMOVED}.get(kind, causes.TOOL_CHANGED)
    openai_system = turn.format == "openai" and path.startswith("messages[0]")
    if path.startswith("system") or openai_system:
        return causes.SYSTEM_EDITED
    return causes.HISTORY_REWRITTEN


# --- the report -------------------------------------------------------------------------------------------------


def _quiet(cause: str) -> bool:
    return cause in (causes.NONE, causes.NEW_SESSION)


def score(turns: list[Turn], named: list[str]) -> dict[str, dict[str, int]]:
    """Per class: turns, detected (a drift was reported), correct (the cause named is the expected one)."""
    out: dict[str, dict[str, int]] = {}
    for turn, cause in zip(turns, named, strict=True):
        row = out.setdefault(turn.drift, {"turns": 0, "detected": 0, "correct": 0})
        row["turns"] += 1
        row["detected"] += not _quiet(cause)
        row["correct"] += cause == turn.expected
    return out


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:5.1f}%" if whole else "     -"


def totals(rows: dict[str, dict[str, int]]) -> tuple[int, int, int, int, int]:
    """(drifted turns, detected, correct, control turns, false alarms)."""
    drift = [r for name, r in rows.items() if name not in CONTROLS]
    controls = [r for name, r in rows.items() if name in CONTROLS]
    return (
        sum(r["turns"] for r in drift),
        sum(r["detected"] for r in drift),
        sum(r["correct"] for r in drift),
        sum(r["turns"] for r in controls),
        sum(r["turns"] - r["correct"] for r in controls),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=60)
    parser.add_argument("--turns", type=int, default=12, help="requests per session")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--no-peer", action="store_true", help="agentcache alone: do not install cachelint")
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    parser.add_argument("--peer-venv", type=Path, default=cache / "agentcache" / "bench" / "cachelint-0.1.0a2")
    parser.add_argument("--misses", type=int, default=10, help="agentcache misses to print, with their detail")
    args = parser.parse_args()

    turns = generate(args.sessions, args.turns, args.seed)
    ours = agentcache_causes(turns)
    named = {"agentcache": [cause for cause, _ in ours]}
    if not args.no_peer:
        python, why = peer_python(args.peer_venv)
        if python is None:
            print(f"cachelint could not be installed or run, so only agentcache is measured: {why}\n")
        else:
            try:
                findings = peer_findings(python, turns)
                named["cachelint"] = [peer_cause(f, t) for f, t in zip(findings, turns, strict=True)]
            except (OSError, subprocess.SubprocessError, ValueError) as exc:
                print(f"cachelint could not be run, so only agentcache is measured: {exc}\n")
    rows = {tool: score(turns, said) for tool, said in named.items()}

    formats = Counter(t.format for t in turns)
    print(
        f"{len(turns)} turns of {args.sessions} sessions ({formats['openai']} OpenAI chat, "
        f"{formats['anthropic']} Anthropic Messages), seed {args.seed}; recall = a drift reported, "
        "accuracy = the right cause named (controls: the share named `none`)\n"
    )
    header = f"{'class':<28} {'expected':<18} {'turns':>5}" + "".join(
        f" {t + ' rec':>15} {t + ' acc':>15}" for t in rows
    )
    print(header)
    print("-" * len(header))
    for name, (_, expected) in CLASSES.items():
        count = rows["agentcache"].get(name, {}).get("turns", 0)
        cells = "".join(
            f" {_pct(r[name]['detected'], count):>15} {_pct(r[name]['correct'], count):>15}" for r in rows.values()
        )
        if count:
            print(f"{name:<28} {expected:<18} {count:>5}{cells}")
    print()
    failed = False
    for tool, said in named.items():
        drifted, detected, correct, controls, alarms = totals(rows[tool])
        by_format = []
        for fmt in ("openai", "anthropic"):
            mine = [(t, c) for t, c in zip(turns, said, strict=True) if t.format == fmt]
            part = totals(score([t for t, _ in mine], [c for _, c in mine]))
            by_format.append(f"{fmt} {_pct(part[2], part[0]).strip()} ({part[4]} false alarms)")
        print(
            f"{tool}: recall {_pct(detected, drifted)}, accuracy {_pct(correct, drifted)} on {drifted} drifted turns; "
            f"{alarms} false alarms on {controls} control turns; accuracy by format: {', '.join(by_format)}"
        )
        if tool == "agentcache":
            failed = correct < 0.95 * drifted or alarms > 0
    misses = [(t, c, d) for t, (c, d) in zip(turns, ours, strict=True) if c != t.expected]
    for turn, cause, detail in misses[: args.misses]:
        print(f"  miss: {turn.drift} ({turn.format}) expected {turn.expected}, got {cause}: {detail}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
