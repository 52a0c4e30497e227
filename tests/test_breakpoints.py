"""agentcache.breakpoints: never over the API's budget (the caller's markers counted), never under the model's
minimum, every placement explained, and a session replayed through the client-side model caches more for less."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache.breakpoints import markers, place
from agentcache.cache.rules import MAX_BREAKPOINTS, RULES
from agentcache.drift import CacheOptions, explain

OPUS = "claude-opus-4-8"
SYSTEM = "You are a careful agent. " + " ".join(f"Rule {i}: read item {i} before changing it." for i in range(300))
TOOLS = [{"name": f"tool_{i}", "description": f"does {i}", "input_schema": {"type": "object"}} for i in range(4)]


def session(turns: int, blocks_per_turn: int = 2, remarks: bool = False) -> list[dict[str, Any]]:
    """An agent loop in Anthropic's dialect: each turn adds tool calls and their results; with ``remarks``, each call
    follows a text block, which breaks the run of calls (a run is one lookback position, each remark one more)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing test."}]
    requests = []
    for turn in range(turns):
        tools = [dict(tool) for tool in TOOLS]
        requests.append({"model": OPUS, "max_tokens": 64, "tools": tools, "system": SYSTEM, "messages": messages})
        call = [
            block
            for b in range(blocks_per_turn)
            for block in (
                *([{"type": "text", "text": f"Now n={b}."}] if remarks else []),
                {"type": "tool_use", "id": f"t{turn}_{b}", "name": "tool_0", "input": {"n": b}},
            )
        ]
        result = [
            {"type": "tool_result", "tool_use_id": f"t{turn}_{b}", "content": f"out {turn}.{b}"}
            for b in range(blocks_per_turn)
        ]
        messages = [*messages, {"role": "assistant", "content": call}, {"role": "user", "content": result}]
    return requests


@st.composite
def marked_requests(draw: st.DrawFn) -> dict[str, Any]:
    """A request of the session with some of its blocks already marked by the caller (at most the API's limit)."""
    request = copy.deepcopy(session(draw(st.integers(1, 4)), draw(st.integers(1, 3)))[-1])
    blocks: list[dict[str, Any]] = [*request["tools"]] + [b for m in request["messages"][1:] for b in m["content"]]
    chosen = draw(st.lists(st.sampled_from(range(len(blocks))), unique=True, max_size=MAX_BREAKPOINTS))
    for index in chosen:
        blocks[index]["cache_control"] = {"type": "ephemeral"}
    if len(chosen) < MAX_BREAKPOINTS and draw(st.booleans()):
        request["cache_control"] = {"type": "ephemeral"}
    return request


@settings(max_examples=60, deadline=None)
@given(marked_requests())
def test_never_over_the_budget_and_never_under_the_minimum(request: dict[str, Any]) -> None:
    before = markers(request)
    plan = place(request, "anthropic")
    assert markers(request) == before  # the caller's request is left as it was
    assert markers(plan.request) == before + len(plan.placed) == plan.total
    assert plan.total <= MAX_BREAKPOINTS
    assert all(p.tokens >= RULES["anthropic", OPUS].min_tokens for p in plan.placed)
    assert all(p.reason for p in plan.placed) and all(why for _, why in plan.skipped)


def test_a_prefix_under_the_minimum_is_not_marked_and_the_plan_says_why() -> None:
    request = {"model": "claude-opus-4-6", "system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}
    plan = place(request, "anthropic")
    assert plan.placed == []
    assert [path for path, _ in plan.skipped] == ["$.system", "$.messages[0]"]
    assert all("minimum of 4,096" in why for _, why in plan.skipped)


def test_a_full_budget_places_nothing() -> None:
    request = session(3)[-1]
    for block in request["messages"][1]["content"] + request["messages"][2]["content"]:
        block["cache_control"] = {"type": "ephemeral"}
    plan = place(request, "anthropic")
    assert (plan.existing, plan.placed) == (MAX_BREAKPOINTS, [])
    assert all("no breakpoint left" in why for _, why in plan.skipped)


def test_a_turn_adding_more_blocks_than_the_lookback_marks_the_previous_end() -> None:
    requests = session(2, blocks_per_turn=12, remarks=True)  # 24 calls and remarks, one run of results: 25 positions
    plan = place(requests[1], "anthropic", previous=requests[0])
    last = len(requests[0]["messages"]) - 1
    assert f"$.messages[{last}]" in [p.path for p in plan.placed]


def test_a_run_of_parallel_calls_is_one_lookback_position() -> None:
    requests = session(2, blocks_per_turn=12)  # 12 calls, 12 results: two runs, two positions
    plan = place(requests[1], "anthropic", previous=requests[0])
    last = len(requests[0]["messages"]) - 1
    assert f"$.messages[{last}]" not in [p.path for p in plan.placed]


def costs(requests: list[dict[str, Any]], placed: bool) -> tuple[int, float]:
    """Cached tokens and cost of the session on the client-side model of claude-opus-4-8, with or without
    agentcache's placement."""
    bodies = []
    for i, request in enumerate(requests):
        bodies.append(
            place(request, "anthropic", previous=requests[i - 1] if i else None).request if placed else request
        )
    reports = explain(bodies, cache=CacheOptions("anthropic", model=OPUS))
    return sum(r.predicted_cached for r in reports), sum(r.predicted_cost or 0.0 for r in reports)


def test_placed_breakpoints_make_a_session_cheaper_on_the_model() -> None:
    requests = session(6)
    (bare_cached, bare_cost), (cached, cost) = costs(requests, False), costs(requests, True)
    assert bare_cached == 0  # no marker, no cache on Anthropic
    assert cached > 0 and cost < bare_cost


def test_openai_gets_an_explicit_breakpoint_on_the_stable_system_message() -> None:
    def chat(question: str) -> dict[str, Any]:
        return {
            "model": "gpt-5.6",
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
        }

    requests = [chat("first question"), chat("another question")]
    plan = place(requests[0], "openai")
    assert plan.existing == 1  # the implicit breakpoint
    assert [p.path for p in plan.placed] == ["$.messages[0]"]
    options = CacheOptions("openai", model="gpt-5.6")
    bare = explain(requests, cache=options)
    marked = explain([place(r, "openai").request for r in requests], cache=options)
    assert bare[1].predicted_cached == 0 < marked[1].predicted_cached


def test_automatic_caching_before_gpt_56_needs_no_placement() -> None:
    plan = place({"model": "gpt-4o", "messages": [{"role": "user", "content": SYSTEM}]}, "openai")
    assert plan.placed == [] and "automatic" in plan.skipped[0][1]


def placed_session(requests: list[dict[str, Any]]) -> list[Any]:
    """The plans of a session, each placed with the previous plan's shape as the transport does."""
    plans, shape = [], None
    for request in requests:
        plan = place(request, "anthropic", previous=shape)
        plans.append(plan)
        shape = plan.shape
    return plans


def test_a_system_prompt_whose_tail_changes_every_turn_is_marked_before_the_change() -> None:
    """The agent's state is the system prompt's last block: from the second turn the marker ends the block before
    it, and once two turns in a row changed, nothing after the change is written (it would never be read)."""
    requests = session(5)
    for step, request in enumerate(requests):
        request["system"] = [{"type": "text", "text": SYSTEM}, {"type": "text", "text": f"State: step {step}."}]
    plans = placed_session(requests)
    end = [f"$.messages[{len(r['messages']) - 1}]" for r in requests]
    assert {"$.system[1]", end[0]} <= {p.path for p in plans[0].placed}  # no history yet: the whole prefix
    for step, plan in enumerate(plans[1:], start=1):
        paths = {p.path for p in plan.placed}
        assert "$.system[0]" in paths and "$.system[1]" not in paths
        assert ("$.system[1]" in dict(plan.skipped)) and (end[step] in paths) == (step == 1)
    naive = [place(r, "anthropic").request for r in requests]  # the whole prefix and the conversation, every turn
    options = CacheOptions("anthropic", model=OPUS)
    smart = explain([p.request for p in plans], cache=options)
    plain = explain(naive, cache=options)
    assert sum(r.predicted_cost or 0.0 for r in smart) < sum(r.predicted_cost or 0.0 for r in plain)
    assert sum(r.predicted_cached for r in smart) > sum(r.predicted_cached for r in plain)


def test_remarked_tool_calls_past_the_lookback_are_read_through_the_previous_end() -> None:
    """Turns of 12 calls, each after a remark (25 lookback positions each): one trailing marker cannot reach the
    previous entry, the marker on the previous end reads it, so the conversation is read every turn."""
    requests = session(4, blocks_per_turn=12, remarks=True)
    plans = placed_session(requests)
    for previous, plan in zip(requests, plans[1:], strict=False):
        assert f"$.messages[{len(previous['messages']) - 1}]" in {p.path for p in plan.placed}
        assert plan.total <= MAX_BREAKPOINTS
