"""The real-template matrix's sessions, shared by the engines' matrices (``test_real_templates*.py``).

The templates are the ones llama.cpp ships with its source (``models/templates/`` of the sdist the engine script
builds llama-server from); nothing is downloaded and nothing is copied into the repository. Every template is run
through the same multi-turn sessions of many shapes (:func:`sessions`), whose assistant turns are fixed texts and
tool calls, never what the random-weight model generates, so every run sends the same requests. On every turn the
server accepts, the prediction must equal the report; a turn the client cannot render must say why, and its
request must have gone out as the agent wrote it (:attr:`Outcome.problem`).
"""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx

from agentcache.canon import CanonicalPolicy
from agentcache.httpx import CacheAwareTransport
from agentcache.servers import ServerPrompt
from agentcache.tokens import Tokenizer, get_tokenizer
from agentcache.tokens.hf import load_tokenizer_json
from agentcache.transport.ledger import Turn
from agentcache.transport.session import SESSION_HEADER
from tests.conftest import engine_script

_NAME, _VERSION = engine_script.LLAMA_CPP_PYTHON.split("==")
SDIST = engine_script.SRC / f"{_NAME.replace('-', '_')}-{_VERSION}"
TEMPLATES = SDIST / "vendor" / "llama.cpp" / "models" / "templates"

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
SEARCH = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
TOOLS = [WEATHER, SEARCH]
DEFAULT_POLICY = CanonicalPolicy()
RELOCATING = (CanonicalPolicy(relocate_volatile=True), CanonicalPolicy(relocate_volatile=True, volatile_role="user"))


class Ids:
    """Tool-call ids in the form a template requires: Mistral's are exactly 9 alphanumerics."""

    def __init__(self, source: str) -> None:
        self.mistral = "[TOOL_CALLS]" in source
        self.count = 0

    def next(self) -> str:
        self.count += 1
        return f"abc{self.count:06d}" if self.mistral else f"call_{self.count:03d}"


def call(ids: Ids, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": ids.next(), "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    return list(message.get("tool_calls") or [])


def results(assistant: dict[str, Any], texts: list[str]) -> list[dict[str, Any]]:
    """The tool messages answering each call of ``assistant``, in order."""
    return [
        {"role": "tool", "tool_call_id": c["id"], "name": c["function"]["name"], "content": text}
        for c, text in zip(calls(assistant), texts, strict=True)
    ]


@dataclass
class Session:
    """A conversation as a list of requests: each request is the previous one's messages plus what followed."""

    name: str
    requests: list[dict[str, Any]]
    policy: CanonicalPolicy = DEFAULT_POLICY


def grow(name: str, steps: list[list[dict[str, Any]]], last: int | None = None, **extra: Any) -> Session:
    """One request after each step whose last message is not the assistant's (the agent asks only then); with
    ``last``, only the last requests are sent, so a long history costs a few turns, not one per exchange."""
    messages: list[dict[str, Any]] = []
    requests = []
    for step in steps:
        messages = [*messages, *step]
        if messages[-1]["role"] != "assistant":
            requests.append({"messages": list(messages), **extra})
    return Session(name, requests[-last:] if last else requests)


def sessions(source: str) -> list[Session]:
    """The conversation shapes every template is run through."""
    ids = Ids(source)
    system = {"role": "system", "content": "You are a concise assistant. Use the tools when they help."}

    first = {"role": "assistant", "content": None, "tool_calls": [call(ids, "get_weather", {"city": "Paris"})]}
    second = {"role": "assistant", "content": None, "tool_calls": [call(ids, "search", {"query": "Louvre hours"})]}
    sequential = grow(
        "sequential_tools",
        [
            [system, {"role": "user", "content": "Weather in Paris, then the Louvre's hours?"}],
            [first, *results(first, ["18 C, cloudy"])],
            [second, *results(second, ["9:00-18:00, closed Tuesdays"])],
            [{"role": "assistant", "content": "Paris is 18 C and cloudy; the Louvre opens 9:00-18:00."}],
            [{"role": "user", "content": "Thanks. And tomorrow?"}],
        ],
        tools=TOOLS,
    )

    both = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            call(ids, "get_weather", {"city": "Oslo", "days": 2}),
            call(ids, "get_weather", {"city": "Rome"}),
        ],
    }
    parallel = grow(
        "parallel_tools",
        [
            [system, {"role": "user", "content": "Compare Oslo and Rome."}],
            [both, *results(both, ["-3 C, snow", "14 C, sun"])],
            [{"role": "assistant", "content": "Rome is 17 degrees warmer than Oslo."}],
            [{"role": "user", "content": "Which one for a beach?"}],
        ],
        tools=TOOLS,
    )

    looked = {
        "role": "assistant",
        "content": "",
        "reasoning_content": "The user wants the weather; I should call the tool.",
        "tool_calls": [call(ids, "get_weather", {"city": "Lima"})],
    }
    reasoning_field = grow(
        "reasoning_field",
        [
            [{"role": "user", "content": "Is it warm in Lima?"}],
            [looked, *results(looked, ["22 C"])],
            [{"role": "assistant", "content": "Yes, 22 C.", "reasoning_content": "22 C is warm."}],
            [{"role": "user", "content": "And at night?"}],
        ],
        tools=TOOLS,
    )

    inline_think = grow(
        "inline_think",
        [
            [system, {"role": "user", "content": "What is 17 * 3?"}],
            [{"role": "assistant", "content": "<think>17 * 3 = 51.</think>It is 51."}],
            [{"role": "user", "content": "And 51 / 3?"}],
            [{"role": "assistant", "content": "<think>Back to 17.</think>17."}],
            [{"role": "user", "content": "Good."}],
        ],
    )

    parts = grow(
        "systems_parts_unicode",
        [
            [
                system,
                {"role": "system", "content": "Réponds en français. Ünïcødé ✓ 東京."},
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "Bonjour !"}, {"type": "text", "text": "Ça va ?"}],
                },
            ],
            [{"role": "assistant", "content": "Très bien, merci. 😊"}],
            [{"role": "user", "content": [{"type": "text", "text": "Et à Zürich — quel temps ?"}]}],
        ],
    )

    choice = {"role": "assistant", "content": None, "tool_calls": [call(ids, "search", {"query": "Kyoto"})]}
    tool_choice = grow(
        "tool_choice",
        [
            [system, {"role": "user", "content": "Find Kyoto."}],
            [choice, *results(choice, ["Kyoto is in Japan."])],
            [{"role": "assistant", "content": "Kyoto is in Japan."}],
            [{"role": "user", "content": "More?"}],
        ],
        tools=TOOLS,
        tool_choice="required",
    )

    empty_tools = grow(
        "empty_tools",
        [
            [system, {"role": "user", "content": "Hello."}],
            [{"role": "assistant", "content": "Hello! How can I help?"}],
            [{"role": "user", "content": "Tell me a fact."}],
        ],
        tools=[],
    )

    plain_then_tool_steps: list[list[dict[str, Any]]] = [[system, {"role": "user", "content": "Hi."}]]
    plain_then_tool_steps.append([{"role": "assistant", "content": "Hi! Ask me about the weather."}])
    for city in ("Berlin", "Madrid", "Cairo", "Delhi", "Tokyo", "Sydney"):
        plain_then_tool_steps.append([{"role": "user", "content": f"Weather in {city}?"}])
        asked = {"role": "assistant", "content": None, "tool_calls": [call(ids, "get_weather", {"city": city})]}
        plain_then_tool_steps.append([asked, *results(asked, [f"{city}: 20 C"])])
        plain_then_tool_steps.append([{"role": "assistant", "content": f"It is 20 C in {city}."}])
    long_history = grow("long_history", plain_then_tool_steps, last=3, tools=TOOLS)

    relocated = [relocating(policy) for policy in RELOCATING]
    shapes = [sequential, parallel, reasoning_field, inline_think, parts, tool_choice, empty_tools, long_history]
    return [*shapes, *relocated]


def relocating(policy: CanonicalPolicy) -> Session:
    """A system prompt with a timestamp line that changes every turn, canonicalized with ``relocate_volatile``:
    the line moves to a trailing message of the policy's role, or into the last user message where the template
    refuses that message."""
    requests = []
    history: list[dict[str, Any]] = []
    for turn, question in enumerate(("Plan my day.", "Add lunch.", "Add a walk.")):
        stamp = {"role": "system", "content": f"You plan days.\nNow: 2026-12-01T09:{turn:02d}:00Z\nBe brief."}
        history.append({"role": "user", "content": question})
        requests.append({"messages": [stamp, *history]})
        history.append({"role": "assistant", "content": f"Step {turn + 1} planned."})
    return Session(f"relocated_{policy.volatile_role}", requests, policy)


@dataclass
class Outcome:
    """What one turn of one session came to."""

    session: str
    turn: Turn
    original: dict[str, Any]
    sent: dict[str, Any]
    original_status: int | None
    """The server's answer to the agent's own request, asked only when the sent one was refused."""

    @property
    def problem(self) -> str | None:
        t = self.turn
        if t.status is None or not 200 <= t.status < 300:
            if self.original_status is not None and 200 <= self.original_status < 300:
                return f"status {t.status} on the sent request, {self.original_status} on the agent's own"
            return None  # the server refuses the agent's own request: nothing to predict
        if t.predicted_cached is None:
            if not t.prediction_error:
                return "no prediction and no reason given"
            if self.sent != self.original:
                return f"no prediction ({t.prediction_error}) yet the request was changed"
            return None
        if (t.predicted_prompt_tokens, t.predicted_cached) != (t.reported_prompt_tokens, t.reported_cached):
            return (
                f"predicted {t.predicted_prompt_tokens}/{t.predicted_cached} "
                f"reported {t.reported_prompt_tokens}/{t.reported_cached} ({t.cause})"
            )
        return None


class Wire(httpx.HTTPTransport):
    """The plain transport, keeping each body as it went on the wire."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[dict[str, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        return super().handle_request(request)


def run_sessions(
    url: str,
    prompt: ServerPrompt,
    empty_cache: Callable[[], None],
    extra: dict[str, Any] | None = None,
    **options: Any,
) -> list[Outcome]:
    """Every session through a cache-aware transport of its own (``options`` for it beside the prompt), from an
    empty server cache; ``extra`` goes into every request (a chat template of the request's own)."""
    outcomes = []
    encoder = get_tokenizer("o200k_base")
    for session in sessions(prompt.template.source if extra is None else template_source(extra)):
        empty_cache()
        wire = Wire()
        transport = CacheAwareTransport(
            wire, server=prompt.profile.name, prompt=prompt, tokenizer=encoder, policy=session.policy,
            telemetry=False, **options,
        )
        fixed = {"model": engine_script.SERVED_NAME, "max_tokens": 1, "temperature": 0, **(extra or {})}
        originals = [{**fixed, **request} for request in session.requests]
        with httpx.Client(transport=transport, base_url=url, timeout=120) as http:
            for original in originals:
                http.post("/v1/chat/completions", json=original, headers={SESSION_HEADER: session.name})
        refused = {}
        with httpx.Client(base_url=url, timeout=120) as plain:
            for turn, original in zip(transport.ledger.turns(), originals, strict=True):
                if turn.status is None or not 200 <= turn.status < 300:
                    refused[turn.turn] = plain.post("/v1/chat/completions", json=original).status_code
        for turn, original, sent in zip(transport.ledger.turns(), originals, wire.bodies, strict=True):
            outcomes.append(Outcome(session.name, turn, original, sent, refused.get(turn.turn)))
    return outcomes


def template_source(extra: dict[str, Any]) -> str:
    """The chat template a request carries, top-level or in ``chat_template_kwargs``."""
    source = extra.get("chat_template") or extra.get("chat_template_kwargs", {}).get("chat_template")
    assert isinstance(source, str)
    return source


def templates() -> list[Path]:
    return sorted(TEMPLATES.glob("*.jinja")) if TEMPLATES.is_dir() else []


@cache
def tokenizer() -> Tokenizer:
    """The test model's tokenizer, loaded once: every template's folder shares it."""
    return load_tokenizer_json(engine_script.MODEL_DIR / "tokenizer.json")


def chosen(names: list[str] | None = None) -> list[Path]:
    """The templates to run: ``names`` (stems) or all, narrowed by ``AGENTCACHE_TEMPLATES=GLOB``."""
    pattern = os.environ.get("AGENTCACHE_TEMPLATES", "*")
    return [t for t in templates() if (names is None or t.stem in names) and fnmatch.fnmatch(t.stem, pattern)]


def problems(template: Path, outcomes: list[Outcome]) -> list[str]:
    return [f"{template.stem} {o.session} turn {o.turn.turn}: {o.problem}" for o in outcomes if o.problem]
