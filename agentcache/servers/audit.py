"""Audit a model's chat template before deploying it: where does it break the prefix cache by itself, and which
request shapes does it refuse?

A synthetic agent runs conversations of several shapes through the template (as one server shapes them): tool
calls one at a time and in parallel with null content, reasoning in a field and inline, several system messages
with text parts and non-ASCII text, a plain chat, a system message mid-session. The agent is perfect: each request
re-sends the previous one's messages exactly and appends to them. Every turn whose prompt does not extend the
previous turn's prompt is a point the template breaks the prefix, classified by :func:`template_drift`; the same
first request rendered on two days tells whether the template renders the date. A shape the template refuses is
reported with its error, and tried once more with tool-call ids of nine letters and digits (the Mistral family
requires them), so that the rest of the shape is still audited.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from agentcache.cache.blockhash import token_array
from agentcache.errors import TokenizerError
from agentcache.predict import causes
from agentcache.predict.template_drift import TemplateDrift, renders_reasoning, template_drift
from agentcache.servers.prompt import ServerPrompt
from agentcache.servers.template import fixed_clock

#: The audit's clock: renderings are deterministic, and the date check renders the day after.
AUDIT_DAY = datetime(2026, 1, 15, 9, 30)

_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the web.",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        },
    },
]
_SYSTEM = {"role": "system", "content": "You are a careful assistant. Use the tools when they help."}

Ids = Callable[[int], str]
"""The id of the n-th tool call of a session."""


def _openai_ids(n: int) -> str:
    return f"call_{n}"


def _nine_ids(n: int) -> str:
    return f"call{n:05d}"


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _said(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": text, **extra}


class _Agent:
    """Builds one conversation: each step appends messages, and a request is sent after each step that does not
    end with the assistant's message (an agent calls the model only then)."""

    def __init__(self, ids: Ids, **fields: Any) -> None:
        self.ids = ids
        self.fields = fields
        self.calls = 0
        self.messages: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []

    def step(self, *messages: dict[str, Any]) -> _Agent:
        self.messages = [*self.messages, *messages]
        if self.messages[-1]["role"] != "assistant":
            self.requests.append({"messages": self.messages, **self.fields})
        return self

    def call(self, *cities: str, content: str | None = None, **extra: Any) -> _Agent:
        """The assistant calls ``get_weather`` once per city (in parallel when several) and gets the results."""
        calls = []
        for city in cities:
            self.calls += 1
            arguments = json.dumps({"city": city})
            calls.append(
                {
                    "id": self.ids(self.calls),
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments},
                }
            )
        results = [
            {"role": "tool", "tool_call_id": c["id"], "name": "get_weather", "content": f"{city}: 18 C, cloudy"}
            for c, city in zip(calls, cities, strict=True)
        ]
        return self.step({"role": "assistant", "content": content, "tool_calls": calls, **extra}, *results)


def shapes(ids: Ids = _openai_ids) -> dict[str, list[dict[str, Any]]]:
    """The audit's conversations, by name: each a list of requests, every one extending the one before."""
    parts = [{"type": "text", "text": "Réponds brièvement."}, {"type": "text", "text": "Ünïcødé ✓ 東京."}]
    return {
        "tools": _Agent(ids, tools=_TOOLS)
        .step(_SYSTEM, _user("Weather in Paris, then Rome?"))
        .call("Paris")
        .call("Rome")
        .step(_said("Paris 18 C, Rome 18 C."))
        .step(_user("And Oslo?"))
        .call("Oslo")
        .requests,
        "parallel_calls": _Agent(ids, tools=_TOOLS)
        .step(_SYSTEM, _user("Compare Oslo and Lima."))
        .call("Oslo", "Lima")
        .step(_said("Both 18 C."))
        .step(_user("And Cairo and Delhi?"))
        .call("Cairo", "Delhi")
        .requests,
        "reasoning": _Agent(ids, tools=_TOOLS)
        .step(_SYSTEM, _user("Is it warm in Lima?"))
        .call("Lima", content="", reasoning_content="The user wants the weather; call the tool.")
        .step(_said("Not really: 18 C.", reasoning_content="18 C is mild."))
        .step(_user("And in Cairo?"))
        .call("Cairo", content="", reasoning_content="Same tool, another city.")
        .requests,
        "inline_think": _Agent(ids, tools=_TOOLS)
        .step(_SYSTEM, _user("Is it warm in Lima?"))
        .call("Lima", content="<think>The user wants the weather; call the tool.</think>")
        .step(_said("<think>18 C is mild.</think>Not really: 18 C."))
        .step(_user("And in Cairo?"))
        .call("Cairo", content="<think>Same tool, another city.</think>")
        .requests,
        "system_messages": _Agent(ids)
        .step(_SYSTEM, {"role": "system", "content": parts}, _user("Bonjour !"))
        .step(_said("Bonjour ! 😊"))
        .step(_user("Quel temps à Zürich ?"))
        .step(_said("Je ne sais pas."))
        .step(_user("Merci."))
        .requests,
        "plain_chat": _Agent(ids)
        .step(_SYSTEM, _user("Hi."))
        .step(_said("Hello! How can I help?"))
        .step(_user("Tell me a fact."))
        .step(_said("Honey never spoils."))
        .step(_user("Another one?"))
        .requests,
        "late_system": _Agent(ids)
        .step(_user("Hi."))
        .step(_said("Hello!"))
        .step({"role": "system", "content": "Answer in one word."}, _user("Colour of sky?"))
        .step(_said("Blue."))
        .step(_user("Of grass?"))
        .requests,
    }


@dataclass(frozen=True)
class DriftPoint:
    """A turn whose prompt does not extend the previous turn's, though its request does."""

    shape: str
    turn: int
    """The request's 1-based position in its conversation (turn N+1)."""
    drift: TemplateDrift


@dataclass(frozen=True)
class Refusal:
    """A request shape the template refuses (the server answers an error)."""

    shape: str
    turn: int
    message: str
    accepted_with_nine_ids: bool
    """Whether the shape went through with nine-character tool-call ids: the refusal is of the id form."""


@dataclass(frozen=True)
class Audit:
    """What :func:`audit_template` found."""

    turns: int
    """Consecutive pairs of turns rendered and compared."""
    drifts: tuple[DriftPoint, ...]
    refusals: tuple[Refusal, ...]
    date: TemplateDrift | None
    """How the prompt differs when the same request comes the next day: the template renders the date."""


def audit_template(prompt: ServerPrompt) -> Audit:
    """Run every shape through ``prompt`` (a model's template as one server shapes requests) and collect the
    points where the template breaks the prefix and the shapes it refuses."""
    turns, drifts, refusals = 0, [], []
    nine = shapes(_nine_ids)
    for name, requests in shapes().items():
        refused = _refusal(prompt, requests)
        if refused is not None:
            again = _refusal(prompt, nine[name])
            refusals.append(Refusal(name, refused[0], refused[1], again is None))
            if again is not None:
                continue
            requests = nine[name]
        for turn, drift in _drifts(prompt, requests):
            drifts.append(DriftPoint(name, turn, drift))
        turns += len(requests) - 1
    return Audit(turns, tuple(drifts), tuple(refusals), _date(prompt))


def _refusal(prompt: ServerPrompt, requests: list[dict[str, Any]]) -> tuple[int, str] | None:
    """``(turn, error)`` of the first request the template refuses, or None."""
    for turn, request in enumerate(requests, start=1):
        try:
            with fixed_clock(AUDIT_DAY):
                prompt.text(request)
        except TokenizerError as exc:
            return turn, str(exc).removeprefix(f"{prompt.template.name}: ")
    return None


def _drifts(prompt: ServerPrompt, requests: list[dict[str, Any]]) -> Iterator[tuple[int, TemplateDrift]]:
    with fixed_clock(AUDIT_DAY):
        tokens = [token_array(prompt.tokens(request)) for request in requests]
        reasons = renders_reasoning(prompt, requests)
    times = (AUDIT_DAY, AUDIT_DAY)
    for turn in range(1, len(requests)):
        before, after = requests[turn - 1], requests[turn]
        drift = template_drift(prompt, before, after, times, tokens[turn - 1], tokens[turn], reasons=reasons)
        if drift is not None:
            yield turn + 1, drift


def _date(prompt: ServerPrompt) -> TemplateDrift | None:
    """The first accepted shape's last request, sent on the audit's day and again the next day."""
    for requests in shapes().values():
        try:
            found = template_drift(prompt, requests[-1], requests[-1], (AUDIT_DAY, AUDIT_DAY + timedelta(days=1)))
        except TokenizerError:
            continue
        return found if found is not None and found.cause == causes.TEMPLATE_DATE else None
    return None


def template_file(model_dir: str | Path) -> Path:
    """The file the template is read from: ``chat_template.jinja`` when present, else ``tokenizer_config.json``
    (as :meth:`ChatTemplate.from_pretrained` reads them)."""
    folder = Path(model_dir)
    jinja = folder / "chat_template.jinja"
    return jinja if jinja.is_file() else folder / "tokenizer_config.json"
