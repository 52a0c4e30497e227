"""Canonicalization never sends a body the server's template refuses: the relocated volatile lines move into the
last user message when the template wants alternating roles, and the agent's request goes out as written when
nothing canonical is accepted."""

from __future__ import annotations

import json
from typing import Any

import httpx

from agentcache.canon import CanonicalPolicy, canonicalize
from agentcache.servers import ChatTemplate, ServerPrompt
from agentcache.tokens import get_tokenizer
from agentcache.transport.middleware import CacheMiddleware
from agentcache.transport.placement import accepted_placement, relocated_path

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


def test_a_template_that_wants_alternating_roles_gets_the_lines_in_the_last_user_message() -> None:
    canonical = canonicalize(ORIGINAL, POLICY)
    assert [m["role"] for m in canonical["messages"]] == ["system", "user", "user"]
    sent, refused = accepted_placement(prompt(ALTERNATING), canonical, ORIGINAL)
    assert refused is None
    assert sent["messages"][1] == {"role": "user", "content": "Plan my day.\n\nNow: 2026-12-01T09:00:00Z"}
    assert "Now:" not in sent["messages"][0]["content"]
    assert relocated_path(sent, ORIGINAL) == "$.messages[1]"


def test_a_canonical_body_the_template_takes_is_kept() -> None:
    canonical = canonicalize(ORIGINAL, CanonicalPolicy(relocate_volatile=True))
    sent, refused = accepted_placement(prompt("{{ messages | length }}"), canonical, ORIGINAL)
    assert (sent, refused) == (canonical, None)
    assert relocated_path(sent, ORIGINAL) == "$.messages[2]"


def test_when_no_placement_is_accepted_the_original_goes_out_with_the_reason() -> None:
    canonical = canonicalize(ORIGINAL, POLICY)
    sent, refused = accepted_placement(prompt(REFUSES_NOW), canonical, ORIGINAL)
    assert sent is ORIGINAL
    assert refused is not None and "no timestamps" in refused


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
    sent, refused = accepted_placement(template, canonicalize(ORIGINAL, relocating), ORIGINAL)
    assert refused is None and [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert sent["messages"][1]["content"].endswith("\n\nNow: 2026-12-01T09:00:00Z")
    sent, refused = accepted_placement(template, canonicalize(AFTER_TOOL, relocating), AFTER_TOOL)
    assert refused is None and [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool", "user"]
    text = template.text(sent)
    assert text.startswith("You plan days.\nBe brief.\n") and text.index("Now:") > text.index("3 meetings")
    assert relocated_path(sent, AFTER_TOOL) == "$.messages[4]"


def test_without_a_model_folder_the_lines_are_folded_at_once() -> None:
    canonical = canonicalize(ORIGINAL, POLICY)
    sent, refused = accepted_placement(None, canonical, ORIGINAL)
    assert refused is None and len(sent["messages"]) == 2
    assert sent["messages"][1]["content"].endswith("\n\nNow: 2026-12-01T09:00:00Z")


def test_the_middleware_sends_the_agents_request_when_its_template_refuses_every_canonical_form() -> None:
    middleware = CacheMiddleware(server="llama.cpp", prompt=prompt(REFUSES_NOW), policy=POLICY, telemetry=False)
    body = json.dumps(ORIGINAL).encode()
    request = httpx.Request("POST", "http://server/v1/chat/completions", content=body)
    call = middleware.begin(request)
    assert call.request.content == body
    assert call.passthrough is not None and "no timestamps" in call.passthrough
