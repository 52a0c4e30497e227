"""explain() on sessions built to show each cause; divergence positions checked against whole-prompt tokens."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache import get_tokenizer
from agentcache.cache.prefix import common_prefix
from agentcache.drift import CacheOptions, Trace, TraceRecord, explain
from agentcache.predict.prompt import render
from tests.canon.strategies import openai_requests, shuffled

TOKENIZER = get_tokenizer("o200k_base")


def tool(name: str, **props: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}
    return {"type": "function", "function": {"name": name, "description": f"The {name} tool.", "parameters": schema}}


def base() -> dict[str, Any]:
    return {
        "model": "m",
        "tools": [tool("read", path="string"), tool("write", path="string", text="string"), tool("run", cmd="string")],
        "messages": [
            {"role": "system", "content": "You are careful. Plan step 3 of 9.\nToday: 2026-11-30T10:00:00Z\n" * 3},
            {"role": "user", "content": "Fix the bug in cart.py, please. " * 10},
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "Let me think about the cart.",
                "tool_calls": [
                    {"id": "1", "type": "function", "function": {"name": "read", "arguments": '{"path":"x"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "1", "content": "def total(cart):\n    return sum(cart)\n" * 20},
        ],
    }


def grown(request: dict[str, Any], text: str = "next") -> dict[str, Any]:
    out = copy.deepcopy(request)
    out["messages"].append({"role": "user", "content": text})
    return out


def whole_prompt_tokens(request: dict[str, Any]) -> list[int]:
    return [t for segment in render(request) for t in TOKENIZER.encode(segment.text)]


def second_turn(change: Any) -> Any:
    first = base()
    second = grown(first)
    change(second)
    return explain([first, second], TOKENIZER)[1]


def test_append_only_turn_is_fully_predicted() -> None:
    first = base()
    reports = explain([first, grown(first)], TOKENIZER)
    assert reports[0].cause == "new_session" and reports[0].predicted_cached == 0
    assert reports[1].cause == "none" and reports[1].divergence is None and reports[1].wasted_tokens == 0
    assert reports[1].predicted_cached == len(whole_prompt_tokens(first))
    assert reports[1].predicted_prompt_tokens == len(whole_prompt_tokens(grown(first)))


def reorder_tools(request: dict[str, Any]) -> None:
    request["tools"].reverse()


def reorder_keys(request: dict[str, Any]) -> None:
    function = request["tools"][1]["function"]
    request["tools"][1]["function"] = dict(reversed(list(function.items())))


def add_tool(request: dict[str, Any]) -> None:
    request["tools"].insert(1, tool("delete", path="string"))


def remove_tool(request: dict[str, Any]) -> None:
    del request["tools"][2]


def change_tool(request: dict[str, Any]) -> None:
    request["tools"][2]["function"]["description"] = "Runs a shell command."


def new_timestamp(request: dict[str, Any]) -> None:
    system = request["messages"][0]
    system["content"] = system["content"].replace("2026-11-30T10:00:00Z", "2026-11-30T10:05:00Z", 1)


def counter(request: dict[str, Any]) -> None:
    request["messages"][0]["content"] = request["messages"][0]["content"].replace("step 3", "step 4", 1)


def crlf(request: dict[str, Any]) -> None:
    request["messages"][3]["content"] = request["messages"][3]["content"].replace("\n", "\r\n")


def edit_system(request: dict[str, Any]) -> None:
    request["messages"][0]["content"] = request["messages"][0]["content"].replace("careful", "fast")


def strip_reasoning(request: dict[str, Any]) -> None:
    del request["messages"][2]["reasoning_content"]


def truncate_output(request: dict[str, Any]) -> None:
    request["messages"][3]["content"] = request["messages"][3]["content"][:50] + "..."


def compact(request: dict[str, Any]) -> None:
    request["messages"][1:] = [{"role": "user", "content": "Summary: we looked at cart.py."}]


def change_format(request: dict[str, Any]) -> None:
    request["response_format"] = {"type": "json_object"}


def change_model(request: dict[str, Any]) -> None:
    request["model"] = "other"


@pytest.mark.parametrize(
    ("change", "cause", "detail", "part"),
    [
        (reorder_tools, "tool_order", "another order", "tools"),
        (reorder_keys, "schema_key_order", "keys in another order", "tools"),
        (add_tool, "tool_added", "added: delete", "tools"),
        (remove_tool, "tool_removed", "removed: run", "tools"),
        (change_tool, "tool_changed", "definition changed: run", "tools"),
        (
            new_timestamp,
            "volatile_value",
            "timestamp in the system prompt: '2026-11-30T10:00:00Z' -> '2026-11-30T10:05:00Z'",
            "system",
        ),
        (counter, "volatile_value", "counter in the system prompt: 3 -> 4", "system"),
        (crlf, "whitespace", "line endings changed (CRLF, CR, LF) from line 1 of $.messages[3]", "messages"),
        (edit_system, "system_edited", "system prompt text changed", "system"),
        (strip_reasoning, "history_rewritten", "reasoning stripped from $.messages[2]", "messages"),
        (truncate_output, "history_rewritten", "truncated", "messages"),
        (compact, "history_rewritten", "compacted", "messages"),
        (change_format, "params_changed", "response_format changed", "params"),
        (change_model, "model_changed", "nothing can be reused", None),
    ],
)
def test_each_cause(change: Any, cause: str, detail: str, part: str | None) -> None:
    first = base()
    second = grown(first)
    change(second)
    report = explain([first, second], TOKENIZER)[1]
    assert report.cause == cause
    assert detail in report.detail
    assert report.divergence is not None
    if part is not None:
        assert report.divergence.part == part
    # Another model shares no KV, whatever the text: nothing is cached.
    shared = common_prefix(whole_prompt_tokens(first), whole_prompt_tokens(second))
    expected = 0 if cause == "model_changed" else shared
    assert report.divergence.token_index == expected
    assert report.wasted_tokens == len(whole_prompt_tokens(first)) - expected
    assert report.predicted_cached == expected


def test_divergence_names_the_json_path_and_character() -> None:
    report = second_turn(new_timestamp)
    assert report.divergence is not None
    assert report.divergence.path == "$.messages[0].content"
    offset = report.divergence.char_offset
    old_system = render(base())[3].text
    assert old_system[offset - 15 : offset + 4] == "2026-11-30T10:00:00"  # "10:00" became "10:05"
    assert old_system[:offset].endswith("T10:0")


def test_canonicalization_removes_the_drift_it_can() -> None:
    first = base()
    second = grown(first)
    reorder_tools(second)
    new_timestamp(second)
    report = explain([first, second], TOKENIZER)[1]
    assert report.predicted_cached < report.canonical_cached
    assert report.canonical_cached > 0.9 * report.predicted_prompt_tokens


def test_server_reporting_fewer_than_predicted_is_eviction() -> None:
    first = base()
    records = [
        TraceRecord(1, "s", first),
        TraceRecord(2, "s", grown(first), {"prompt_tokens_details": {"cached_tokens": 5}}),
    ]
    report = explain(Trace(records, []), TOKENIZER)[1]
    assert report.cause == "evicted" and report.reported_cached == 5


def test_below_hosted_minimum() -> None:
    small = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    reports = explain([small, grown(small)], TOKENIZER, CacheOptions("openai"))
    assert [r.cause for r in reports] == ["below_minimum", "below_minimum"]


def test_sessions_are_separate_but_share_the_server_cache() -> None:
    first = base()
    records = [TraceRecord(1, "a", first), TraceRecord(2, "b", grown(first)), TraceRecord(3, "a", grown(first))]
    reports = explain(Trace(records, []), TOKENIZER)
    assert [(r.session, r.turn, r.cause) for r in reports] == [
        ("a", 1, "new_session"),
        ("b", 1, "new_session"),
        ("a", 2, "none"),
    ]
    assert reports[1].predicted_cached == len(whole_prompt_tokens(first))


@settings(max_examples=100, deadline=None)
@given(openai_requests(), st.randoms(use_true_random=False))
def test_divergence_token_is_the_first_differing_token(request: dict[str, Any], rng: random.Random) -> None:
    variant = shuffled(request, rng)
    variant["messages"] = [*variant["messages"], {"role": "user", "content": "more"}]
    report = explain([request, variant], TOKENIZER)[1]
    before, after = whole_prompt_tokens(request), whole_prompt_tokens(variant)
    shared = common_prefix(before, after)
    if shared == len(before):
        assert report.divergence is None
    else:
        assert report.divergence is not None and report.divergence.token_index == shared


def test_legacy_functions_are_rendered_at_their_own_path() -> None:
    request = {"model": "m", "functions": [{"name": "f"}], "messages": []}
    assert [segment.path for segment in render(request)] == ["$.functions[0]"]


def test_moving_an_anthropic_breakpoint_is_not_an_edit() -> None:
    def body(marked: int, turns: int) -> dict[str, Any]:
        messages: list[dict[str, Any]] = []
        for i in range(turns):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"output {i} " * 50}
            if i == marked:
                block["cache_control"] = {"type": "ephemeral"}
            messages += [
                {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": "f", "input": {}}]},
                {"role": "user", "content": [block]},
            ]
        return {"model": "claude", "system": [{"type": "text", "text": "rules " * 1500}], "messages": messages}

    reports = explain([body(0, 1), body(1, 2)], TOKENIZER, CacheOptions("anthropic"))
    assert reports[1].cause == "none"
    assert reports[1].predicted_cached > reports[0].predicted_prompt_tokens - 10


def test_empty_and_model_changing_requests_do_not_stop_the_analysis() -> None:
    first = base()
    reports = explain([{"model": "a", "messages": []}, {"model": "b", "messages": []}, first], TOKENIZER)
    assert [r.cause for r in reports] == ["new_session", "model_changed", "model_changed"]
    openai = explain([{"model": "a", "messages": []}, first], TOKENIZER, CacheOptions("openai"))
    assert openai[1].cause == "model_changed"


def test_edits_that_cannot_be_canonicalized_are_not_whitespace() -> None:
    first = {"model": "m", "messages": ["hello", {"role": "user", "content": "x"}]}
    second = {"model": "m", "messages": ["completely different", {"role": "user", "content": "x"}]}
    assert explain([first, second], TOKENIZER)[1].cause == "history_rewritten"


def test_a_moved_builtin_tool_is_a_reorder() -> None:
    first = {"model": "m", "tools": [tool("a"), {"type": "web_search"}], "messages": []}
    second = {"model": "m", "tools": [{"type": "web_search"}, tool("a")], "messages": []}
    assert explain([first, second], TOKENIZER)[1].cause == "tool_order"


def test_big_integers_in_a_trace_are_rendered() -> None:
    request = {"model": "m", "messages": [{"role": "user", "content": "hi", "n": 10**25}]}
    assert explain([request, grown(request)], TOKENIZER)[1].cause == "none"


def test_reported_counts_in_another_tokenizer_are_not_eviction() -> None:
    first = base()
    usage = {"prompt_tokens": 10_000, "prompt_tokens_details": {"cached_tokens": 5}}
    records = [TraceRecord(1, "s", first), TraceRecord(2, "s", grown(first), usage)]
    report = explain(Trace(records, []), TOKENIZER)[1]
    assert (report.cause, report.reported_cached, report.reported_prompt_tokens) == ("none", 5, 10_000)


def _system_edit(edit: Any) -> Any:
    def change(request: dict[str, Any]) -> None:
        request["messages"][0]["content"] = edit(request["messages"][0]["content"])

    return change


@pytest.mark.parametrize(
    ("edit", "detail"),
    [
        (lambda s: s.replace("9.\n", "9. \n", 1), "trailing space added at line 1 of the system prompt"),
        (lambda s: s.replace("9.\n", "9.\t\n", 1), "trailing tab added at line 1 of the system prompt"),
        (lambda s: s.replace("Z\n", "Z\n\n", 2), "blank line added at line 3 of the system prompt"),
        (lambda s: s.replace("Plan step", "Plan  step", 1), "run of spaces changed at line 1 of the system prompt"),
        (lambda s: s.replace("Plan step", "Plan\tstep", 1), "tab added at line 1 of the system prompt"),
        (lambda s: s.replace("careful.", "caf\u00e9.", 1), None),  # a real edit stays system_edited
    ],
)
def test_whitespace_in_the_system_prompt_is_named_with_what_changed(edit: Any, detail: str | None) -> None:
    first = base()
    second = grown(first)
    _system_edit(edit)(second)
    report = explain([first, second], TOKENIZER)[1]
    if detail is None:
        assert report.cause == "system_edited"
    else:
        assert report.cause == "whitespace"
        assert detail in report.detail


def test_unicode_form_in_a_message_is_named() -> None:
    first = base()
    first["messages"][1]["content"] = "Fix the caf\u00e9 bug."
    second = grown(first)
    second["messages"][1]["content"] = "Fix the cafe\u0301 bug."
    report = explain([first, second], TOKENIZER)[1]
    assert (report.cause, report.detail.split(":")[0]) == (
        "whitespace",
        "Unicode normalization form changed at line 1 of $.messages[1].content",
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("chatcmpl-AbCdEf1234567890XyZqRsTuVw", "chatcmpl-Zz9YxWv8UtSr7QpOn6MlKjIh5G"),
        ("req_011CV5jvmzxN4fh7gRXDpe2J", "req_011CV5kQ2pLm8sTnW4rYb9xZ"),
        ("01ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAW"),
    ],
)
def test_provider_ids_and_ulids_in_the_system_prompt_are_volatile_and_relocated(old: str, new: str) -> None:
    """Issue 18: these were system_edited, and canonicalization left them in place."""
    first = base()
    first["messages"][0]["content"] += f"Last request: {old}\n"
    second = grown(first)
    second["messages"][0]["content"] = second["messages"][0]["content"].replace(old, new)
    reports = explain([first, second], TOKENIZER)
    assert reports[1].cause == "volatile_value"
    assert reports[1].canonical_cached > reports[1].predicted_cached
