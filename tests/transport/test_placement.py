"""Canonicalization never sends a body the server's template refuses: the relocated volatile lines move into the
last user message when the template wants alternating roles, and the agent's request goes out as written when
nothing canonical is accepted."""

from __future__ import annotations

import itertools
import json
from typing import Any

import httpx

from agentcache.canon import CanonicalPolicy, canonicalize
from agentcache.servers import ChatTemplate, ServerPrompt
from agentcache.tokens import get_tokenizer
from agentcache.transport.middleware import CacheMiddleware
from agentcache.transport.placement import Placement, accepted_placement, place_volatile
from agentcache.transport.session import SESSION_HEADER
from agentcache.transport.sticky import RelocationMemory, appended_index

ALTERNATING = """\
{%- for m in messages if m.role != 'system' -%}
{%- if (m.role == 'user') != (loop.index0 % 2 == 0) -%}{{ raise_exception('roles must alternate') }}{%- endif -%}
[{{ m.role }}]{{ m.content }}
{%- endfor -%}"""
"""Mistral-Nemo's rule, reduced: after the system messages, user and assistant take turns."""
REFUSES_NOW = (
    "{% for m in messages %}{% if 'Now:' in m.content %}{{ raise_exception('no timestamps') }}{% endif %}{% endfor %}"
)
POLICY = CanonicalPolicy(relocate_volatile=True, volatile_role="user")
ORIGINAL: dict[str, Any] = {
    "model": "m",
    "messages": [
        {"role": "system", "content": "You plan days.\nNow: 2026-12-01T09:00:00Z\nBe brief."},
        {"role": "user", "content": "Plan my day."},
    ],
}


def prompt(source: str) -> ServerPrompt:
    return ServerPrompt("llama.cpp", ChatTemplate(source, float_format="cpp"), get_tokenizer("o200k_base"))


def placed(template: ServerPrompt | None, original: dict[str, Any], policy: CanonicalPolicy = POLICY) -> Placement:
    canonical = canonicalize(original, policy)
    return accepted_placement(template, canonical, appended_index(canonical, original), original)


def test_a_template_that_wants_alternating_roles_gets_the_lines_in_the_last_user_message() -> None:
    canonical = canonicalize(ORIGINAL, POLICY)
    assert [m["role"] for m in canonical["messages"]] == ["system", "user", "user"]
    placement = placed(prompt(ALTERNATING), ORIGINAL)
    sent = placement.body
    assert placement.refused is None and placement.folded
    assert sent["messages"][1] == {"role": "user", "content": "Plan my day.\n\nNow: 2026-12-01T09:00:00Z"}
    assert "Now:" not in sent["messages"][0]["content"]
    assert placement.relocated_path == "$.messages[1]"


def test_a_canonical_body_the_template_takes_is_kept() -> None:
    canonical = canonicalize(ORIGINAL, CanonicalPolicy(relocate_volatile=True))
    placement = placed(prompt("{{ messages | length }}"), ORIGINAL, CanonicalPolicy(relocate_volatile=True))
    assert (placement.body, placement.refused, placement.folded) == (canonical, None, False)
    assert placement.relocated_path == "$.messages[2]"


def test_when_no_placement_is_accepted_the_original_goes_out_with_the_reason() -> None:
    placement = placed(prompt(REFUSES_NOW), ORIGINAL)
    assert placement.body is ORIGINAL and placement.relocated is None
    assert placement.refused is not None and "no timestamps" in placement.refused


HOISTS = (
    "{% for m in messages if m.role == 'system' %}{{ m.content }}\n{% endfor %}"
    "{% for m in messages if m.role != 'system' %}[{{ m.role }}]{{ m.content }}\n{% endfor %}"
)
"""DeepSeek's habit, reduced: every system message is gathered at the top of the prompt."""
AFTER_TOOL: dict[str, Any] = {
    "model": "m",
    "messages": [
        *ORIGINAL["messages"],
        {"role": "assistant", "content": "Checking the calendar."},
        {"role": "tool", "tool_call_id": "c1", "content": "3 meetings"},
    ],
}


def test_lines_a_template_would_hoist_to_the_top_go_after_the_history() -> None:
    """A trailing system message rendered at the top would change the prompt's start every turn: after a user
    message the lines are folded into it; after a tool result, they become a user message in place."""
    relocating = CanonicalPolicy(relocate_volatile=True)
    template = prompt(HOISTS)
    placement = placed(template, ORIGINAL, relocating)
    sent = placement.body
    assert placement.refused is None and [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert sent["messages"][1]["content"].endswith("\n\nNow: 2026-12-01T09:00:00Z")
    placement = placed(template, AFTER_TOOL, relocating)
    sent = placement.body
    assert placement.refused is None
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool", "user"]
    text = template.text(sent)
    assert text.startswith("You plan days.\nBe brief.\n") and text.index("Now:") > text.index("3 meetings")
    assert placement.relocated_path == "$.messages[4]" and not placement.folded


def test_without_a_model_folder_the_lines_are_folded_at_once() -> None:
    placement = placed(None, ORIGINAL)
    assert placement.refused is None and len(placement.body["messages"]) == 2
    assert placement.body["messages"][1]["content"].endswith("\n\nNow: 2026-12-01T09:00:00Z")


def test_the_middleware_sends_the_agents_request_when_its_template_refuses_every_canonical_form() -> None:
    middleware = CacheMiddleware(server="llama.cpp", prompt=prompt(REFUSES_NOW), policy=POLICY, telemetry=False)
    body = json.dumps(ORIGINAL).encode()
    request = httpx.Request("POST", "http://server/v1/chat/completions", content=body)
    call = middleware.begin(request)
    assert call.request.content == body
    assert call.passthrough is not None and "no timestamps" in call.passthrough


ONE_CLOCK = (
    "{%- set ns = namespace(clocks=0) -%}"
    "{%- for m in messages if 'Now:' in m.content %}{% set ns.clocks = ns.clocks + 1 %}{% endfor -%}"
    "{%- if ns.clocks > 1 %}{{ raise_exception('one clock only') }}{% endif -%}"
    "{%- for m in messages %}[{{ m.role }}]{{ m.content }}\n{% endfor -%}"
)
"""A template that takes one message with a clock, and refuses a history that keeps earlier ones."""


def turns(count: int) -> list[dict[str, Any]]:
    """The requests of a session whose system prompt's clock moves every turn."""
    requests, history = [], []
    for turn in range(count):
        stamp = {"role": "system", "content": f"You plan days.\nNow: 2026-12-01T09:{turn:02d}:00Z\nBe brief."}
        history.append({"role": "user", "content": f"Question {turn}."})
        requests.append({"model": "m", "messages": [stamp, *history]})
        history.append({"role": "assistant", "content": f"Answer {turn}."})
    return requests


def test_the_middleware_keeps_each_turn_s_folded_lines_so_the_history_is_what_was_sent() -> None:
    middleware = CacheMiddleware(server="llama.cpp", prompt=prompt(ALTERNATING), policy=POLICY, telemetry=False)
    sent = []
    for body in turns(3):
        request = httpx.Request("POST", "http://server/v1/chat/completions", json=body, headers={SESSION_HEADER: "s"})
        call = middleware.begin(request)
        assert call.passthrough is None
        sent.append(json.loads(call.request.content)["messages"])
    for before, now in itertools.pairwise(sent):
        assert now[: len(before)] == before
    assert [m["content"].count("Now:") for m in sent[-1]] == [0, 1, 0, 1, 0, 1]


def test_a_template_that_refuses_the_kept_lines_gets_the_turn_without_them() -> None:
    memory = RelocationMemory()
    relocating = CanonicalPolicy(relocate_volatile=True)
    for body in turns(3):
        placement = place_volatile(prompt(ONE_CLOCK), memory, "s", canonicalize(body, relocating), body)
        assert placement.refused is None
        assert sum("Now:" in m["content"] for m in placement.body["messages"]) == 1
        assert placement.relocated == len(placement.body["messages"]) - 1
