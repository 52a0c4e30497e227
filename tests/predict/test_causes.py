"""Cause naming on the offline path (``explain``) for the drifts bench/causes.py found misnamed: whitespace in
tools and in nested message blocks, and counters that gain or lose a digit."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from agentcache import get_tokenizer
from agentcache.drift import TurnReport, explain

TOKENIZER = get_tokenizer("o200k_base")
SCHEMA = {"type": "object", "properties": {"path": {"type": "string", "description": "The file to read."}}}
DESCRIPTION = "Read a file.\n\nIt returns the text."


def openai() -> dict[str, Any]:
    tools = [
        {"type": "function", "function": {"name": n, "description": DESCRIPTION, "parameters": copy.deepcopy(SCHEMA)}}
        for n in ("read", "write")
    ]
    system = {"role": "system", "content": "You are careful.\nRetries: 12 retries left\nUse Python 3 and version 12."}
    return {"model": "m", "tools": tools, "messages": [system, {"role": "user", "content": "Fix cart.py"}]}


def anthropic() -> dict[str, Any]:
    tools = [{"name": n, "description": DESCRIPTION, "input_schema": copy.deepcopy(SCHEMA)} for n in ("read", "write")]
    use = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "cart.py"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def total(cart):\n    return sum(cart)\n"}
    question = {"type": "text", "text": "Fix the  cart total.", "cache_control": {"type": "ephemeral"}}
    messages = [
        {"role": "user", "content": [question]},
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    return {"model": "m", "system": "You are careful.", "tools": tools, "messages": messages}


def second_turn(first: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> TurnReport:
    """The report of a turn that appends a message to ``first`` and makes one ``change``."""
    second = copy.deepcopy(first)
    second["messages"].append({"role": "assistant", "content": "Done."})
    change(second)
    return explain([first, second], TOKENIZER)[1]


def description(request: dict[str, Any], name: str) -> dict[str, Any]:
    """The dict that holds the ``description`` of tool ``name``, in either body format."""
    for tool in request["tools"]:
        holder: dict[str, Any] = tool.get("function", tool)
        if holder["name"] == name:
            return holder
    raise KeyError(name)


def edit_description(text: Callable[[str], str], name: str = "write") -> Callable[[dict[str, Any]], None]:
    def change(request: dict[str, Any]) -> None:
        holder = description(request, name)
        holder["description"] = text(holder["description"])

    return change


def edit_property(request: dict[str, Any]) -> None:
    holder = description(request, "read")
    schema = holder["parameters"] if "parameters" in holder else holder["input_schema"]
    schema["properties"]["path"]["description"] = "The file  to read."


@pytest.mark.parametrize("body", [openai, anthropic])
@pytest.mark.parametrize(
    ("change", "detail"),
    [
        (edit_description(lambda s: s + " "), "trailing space added at line 3 of {desc} in tool write: Canonical"),
        (edit_description(lambda s: s + "\t"), "trailing tab added at line 3 of {desc} in tool write"),
        (
            edit_description(lambda s: s.replace("\n\n", "\n\n\n")),
            "blank line added at line 3 of {desc} in tool write: Canonical",
        ),
        (edit_property, "run of spaces changed at line 1 of {props}.path.description in tool read: agentcache sends"),
    ],
)
def test_whitespace_only_in_a_tool_is_whitespace_with_where_and_the_fix(
    body: Callable[[], dict[str, Any]], change: Callable[[dict[str, Any]], None], detail: str
) -> None:
    """It was tool_changed. The opt-in policy is named as the fix only where it makes both the same (trailing
    blanks, blank-line runs), not for a run of spaces inside a line."""
    report = second_turn(body(), change)
    fields = ("function.", "parameters") if body is openai else ("", "input_schema")
    where = detail.format(desc=f"{fields[0]}description", props=f"{fields[0]}{fields[1]}.properties")
    assert (report.cause, report.detail[: len(where)]) == ("whitespace", where)


@pytest.mark.parametrize("body", [openai, anthropic])
def test_a_tool_change_beyond_blanks_is_still_tool_changed(body: Callable[[], dict[str, Any]]) -> None:
    reworded = second_turn(body(), edit_description(lambda s: s.replace("returns", "gives back") + " "))
    assert (reworded.cause, reworded.detail) == ("tool_changed", "definition changed: write")

    def two_tools(request: dict[str, Any]) -> None:
        edit_description(lambda s: s + " ", "read")(request)
        edit_description(lambda s: "Write a file.", "write")(request)

    both = second_turn(body(), two_tools)
    assert (both.cause, both.detail) == ("tool_changed", "definition changed: read, write")


def edit_system(old: str, new: str) -> Callable[[dict[str, Any]], None]:
    def change(request: dict[str, Any]) -> None:
        system = request["messages"][0]
        assert old in system["content"]
        system["content"] = system["content"].replace(old, new, 1)

    return change


@pytest.mark.parametrize(
    ("old", "new", "cause", "detail"),
    [
        ("12 retries", "1 retries", "volatile_value", "counter in the system prompt: 12 -> 1"),
        ("12 retries", "125 retries", "volatile_value", "counter in the system prompt: 12 -> 125"),
        ("12 retries", "13 retries", "volatile_value", "counter in the system prompt: 12 -> 13"),
        ("Python 3 ", "Python 3.12 ", "system_edited", "system prompt text changed"),  # a version, not a counter
        ("version 12.", "version 1.2.", "system_edited", "system prompt text changed"),
        ("Python 3 ", "Python 3a ", "system_edited", "system prompt text changed"),
    ],
)
def test_a_counter_that_gains_or_loses_a_digit_is_volatile(old: str, new: str, cause: str, detail: str) -> None:
    """The first difference of "12" -> "1" is just past the end of the new number: it was system_edited."""
    report = second_turn(openai(), edit_system(old, new))
    assert (report.cause, report.detail[: len(detail)]) == (cause, detail)


def tool_result_text(text: Callable[[str], str]) -> Callable[[dict[str, Any]], None]:
    def change(request: dict[str, Any]) -> None:
        block = request["messages"][2]["content"][0]
        block["content"] = text(block["content"])

    return change


def question_as_string(text: str) -> Callable[[dict[str, Any]], None]:
    """The first message re-sent as a plain string, its breakpoint moved on (and maybe its blanks changed)."""

    def change(request: dict[str, Any]) -> None:
        request["messages"][0]["content"] = text

    return change


@pytest.mark.parametrize(
    ("change", "cause", "detail"),
    [
        (
            tool_result_text(lambda s: s.replace("):", "): ")),
            "whitespace",
            "trailing space added at line 1 of $.messages[2].content[0].content",
        ),
        (
            tool_result_text(lambda s: s.replace("    ", "\t")),
            "whitespace",
            "tab added at line 2 of $.messages[2].content[0].content",
        ),
        (
            tool_result_text(lambda s: s.replace("sum", "total")),
            "history_rewritten",
            "earlier message $.messages[2].content[0].content edited",
        ),
        (question_as_string("Fix the  cart total."), "none", "extends the previous request"),
        (
            question_as_string("Fix the cart total."),
            "whitespace",
            "run of spaces changed at line 1 of $.messages[0].content",
        ),
        (question_as_string("Fix the  cart sum."), "history_rewritten", "earlier message $.messages[0].content"),
    ],
)
def test_whitespace_in_nested_blocks_and_across_a_moved_breakpoint(
    change: Callable[[dict[str, Any]], None], cause: str, detail: str
) -> None:
    """Blank changes are looked for in every string of the message, compared as the prompt renders it (no
    ``cache_control``, text blocks as their text). They were history_rewritten."""
    report = second_turn(anthropic(), change)
    assert report.cause == cause
    assert detail in report.detail
