"""Template-made drift: each construct that rewrites the history is named by rendering, with its template line,
and the replay reports it as the turn's cause. The templates here are minimal ones, each doing one thing; the
real models' templates are audited in tests/servers/test_template_audit.py."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta
from typing import Any

import pytest

from agentcache.cache.options import CacheOptions
from agentcache.predict import causes
from agentcache.predict.prompt import PromptTokenizer
from agentcache.predict.replay import Replay
from agentcache.predict.template_drift import renders_reasoning, template_drift
from agentcache.servers import ChatTemplate, ServerPrompt
from agentcache.servers.template import fixed_clock
from agentcache.tokens import get_tokenizer

MESSAGES = "{% for m in messages %}<{{ m.role }}>\n{{ m.content }}\n{% endfor %}"
GENERATION = "{% if add_generation_prompt %}<assistant>\n{% endif %}"
LAST_USER = (
    "{% set last = namespace(i=0) %}{% for m in messages %}{% if m.role == 'user' %}{% set last.i = loop.index0 %}"
    "{% endif %}{% endfor %}"
)
MOVES_TOOLS = (
    LAST_USER + "{% for m in messages %}\n"
    "{% if tools and loop.index0 == last.i %}[TOOLS]{{ tools | tojson }}[/TOOLS]{% endif %}\n"
    "<{{ m.role }}>\n{{ m.content }}\n{% endfor %}" + GENERATION
)
MOVES_SYSTEM = (
    LAST_USER + "{% for m in messages if m.role != 'system' %}\n"
    "{% if m.role == 'user' and m is sameas messages[last.i] and messages[0].role == 'system' %}"
    "<user>\n{{ messages[0].content }} {{ m.content }}\n{% else %}<{{ m.role }}>\n{{ m.content }}\n{% endif %}"
    "{% endfor %}" + GENERATION
)
DROPS_REASONING = (
    LAST_USER + "{% for m in messages %}\n"
    "{% if m.reasoning_content and loop.index0 > last.i %}<think>{{ m.reasoning_content }}</think>{% endif %}\n"
    "<{{ m.role }}>\n{{ m.content }}\n{% endfor %}" + GENERATION
)
DATE = "Today is {{ strftime_now('%d %B %Y') }}.\n" + MESSAGES + GENERATION
THINKING_GENERATION = MESSAGES + "{% if add_generation_prompt %}<assistant>\n<think>{% endif %}"
CLEAN = MESSAGES + GENERATION
TOOL = {"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {}}}


def prompt(source: str) -> ServerPrompt:
    return ServerPrompt("sglang", ChatTemplate(source, name="test template"), get_tokenizer("o200k_base"))


def conversation(reasoning: bool = False) -> list[dict[str, Any]]:
    """Three requests of a perfect agent: each extends the previous one."""
    first = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}]
    reply: dict[str, Any] = {"role": "assistant", "content": "Sunny."}
    if reasoning:
        reply["reasoning_content"] = "The user asks about the weather, a fact I should look up."
    second = [*first, reply, {"role": "tool", "content": "18 C"}]
    third = [*second, {"role": "assistant", "content": "18 C."}, {"role": "user", "content": "And Rome?"}]
    return [{"messages": m, "tools": [TOOL]} for m in (first, second, third)]


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), start=1) if text in line)


@pytest.mark.parametrize(
    ("source", "reasoning", "cause", "construct"),
    [
        (MOVES_TOOLS, False, causes.TEMPLATE_MOVES_TOOLS, "[TOOLS]"),
        (MOVES_SYSTEM, False, causes.TEMPLATE_MOVES_SYSTEM, "messages[0].content"),
        (DROPS_REASONING, True, causes.TEMPLATE_DROPS_REASONING, "<think>"),
    ],
)
def test_a_template_that_rewrites_history_is_named_with_its_line(
    source: str, reasoning: bool, cause: str, construct: str
) -> None:
    server = prompt(source)
    _, second, third = conversation(reasoning)
    drift = template_drift(server, second, third)
    assert drift is not None
    assert (drift.cause, drift.also, drift.line) == (cause, (), line_of(source, construct))
    before, after = server.tokens(second), server.tokens(third)
    shared = next(i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b)
    assert (drift.token, drift.lost) == (shared, len(before) - shared)
    assert f"template line {drift.line}: " in drift.detail


def test_a_template_that_extends_cleanly_has_no_drift() -> None:
    """It never renders the reasoning and its generation prompt opens no <think>: the model does not reason, so
    the reasoning field the agent sends back is not a loss."""
    server = prompt(CLEAN)
    requests = conversation(reasoning=True)
    reasons = renders_reasoning(server, requests)
    assert not reasons
    assert all(template_drift(server, a, b, reasons=reasons) is None for a, b in itertools.pairwise(requests))
    assert renders_reasoning(prompt(DROPS_REASONING), requests)


def test_the_date_is_found_only_across_midnight() -> None:
    server = prompt(DATE)
    first, second, _ = conversation()
    evening = datetime(2026, 3, 1, 23, 59)
    assert template_drift(server, first, second, (evening, evening + timedelta(seconds=30))) is None
    drift = template_drift(server, first, second, (evening, evening + timedelta(minutes=2)))
    assert drift is not None
    with fixed_clock(evening):
        today = server.tokens(first)
    with fixed_clock(evening + timedelta(minutes=2)):
        tomorrow = server.tokens(second)
    shared = next(i for i, (a, b) in enumerate(zip(today, tomorrow, strict=False)) if a != b)
    assert (drift.cause, drift.line, drift.token, drift.lost) == (causes.TEMPLATE_DATE, 1, shared, len(today) - shared)


def test_a_generation_prompt_the_history_does_not_repeat() -> None:
    first, second, _ = conversation()
    drift = template_drift(prompt(THINKING_GENERATION), first, second)
    assert drift is not None
    assert drift.cause == causes.TEMPLATE_GENERATION_PROMPT
    assert 0 < drift.lost <= 3  # "<think>" and nothing before it


def test_a_reply_whose_reasoning_is_dropped_at_once_counts_when_the_model_reasons() -> None:
    """The template renders reasoning only after the last user message: a reply answered by a user turn loses it
    although the prompt extends (the server cached the reasoning it generated)."""
    server = prompt(DROPS_REASONING)
    first = [{"role": "user", "content": "Hi."}]
    reply = {"role": "assistant", "content": "Hello.", "reasoning_content": "A greeting: greet back."}
    before, after = {"messages": first}, {"messages": [*first, reply, {"role": "user", "content": "Bye."}]}
    assert template_drift(server, before, after) is None
    drift = template_drift(server, before, after, reasons=True)
    assert drift is not None
    assert drift.cause == causes.TEMPLATE_DROPS_REASONING
    assert drift.lost == len(server.tokenizer.encode("A greeting: greet back.Hello."))


def test_the_replay_names_the_template_cause_and_its_cost() -> None:
    """A perfect agent's turn under a template that moves the tools: the replay's cause is the template's, and
    the wasted tokens are the previous prompt's tokens from the divergence on."""
    server = prompt(MOVES_TOOLS)
    replay = Replay(CacheOptions("sglang"), PromptTokenizer(get_tokenizer("o200k_base")), server_prompt=server)
    _, second, third = conversation()
    replay.diagnose_turn(second, 1000.0, "s")
    predicted = replay.diagnose_turn(third, 1001.0, "s")
    before, after = server.tokens(second), server.tokens(third)
    shared = next(i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b)
    assert predicted.cause == causes.TEMPLATE_MOVES_TOOLS
    assert (predicted.divergence_token, predicted.wasted_tokens) == (shared, len(before) - shared)
    assert predicted.predicted_cached == shared


def test_the_replay_renders_each_turn_at_its_own_time() -> None:
    """Two turns either side of midnight under a template that renders the date: the cause is the date."""
    server = prompt(DATE)
    replay = Replay(CacheOptions("sglang"), PromptTokenizer(get_tokenizer("o200k_base")), server_prompt=server)
    first, second, _ = conversation()
    midnight = datetime(2026, 3, 2).timestamp()
    replay.diagnose_turn(first, midnight - 60, "s")
    assert replay.diagnose_turn(second, midnight + 60, "s").cause == causes.TEMPLATE_DATE
