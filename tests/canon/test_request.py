"""Each documented canonicalization rule on a request built to exercise it."""

from __future__ import annotations

import collections
import json
import re
from typing import Any

import pytest

from agentcache import CanonicalPolicy, canonical_json, canonicalize
from agentcache.canon.memo import NO_HISTORY, Histories, History
from agentcache.canon.request import Canonicalizer
from agentcache.errors import DuplicateToolError, InvalidValueError


def tool(name: str, parameters: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name, "description": f"{name} tool"}
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function, **extra}


def request(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "hi"}], **fields}


def test_tools_sorted_by_name() -> None:
    out = canonicalize(request(tools=[tool("zeta"), tool("alpha"), tool("mid")]))
    assert [t["function"]["name"] for t in out["tools"]] == ["alpha", "mid", "zeta"]


def test_tools_keep_order_when_policy_says_so() -> None:
    out = canonicalize(request(tools=[tool("zeta"), tool("alpha")]), CanonicalPolicy(sort_tools=False))
    assert [t["function"]["name"] for t in out["tools"]] == ["zeta", "alpha"]


def test_duplicate_tool_names_are_an_error_naming_both() -> None:
    with pytest.raises(DuplicateToolError, match=r"\$\.tools\[2\].*\$\.tools\[0\]"):
        canonicalize(request(tools=[tool("a"), tool("b"), tool("a")]))


def test_anthropic_cache_control_tool_keeps_its_index() -> None:
    tools = [
        {"name": "d", "input_schema": {"type": "object"}},
        {"name": "c", "input_schema": {"type": "object"}},
        {"name": "b", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}},
        {"name": "a", "input_schema": {"type": "object"}},
    ]
    out = canonicalize({"model": "claude", "max_tokens": 5, "system": "s", "tools": tools, "messages": []})
    assert [t["name"] for t in out["tools"]] == ["c", "d", "b", "a"]
    assert out["tools"][2]["cache_control"] == {"type": "ephemeral"}


def test_nameless_builtin_tools_sort_deterministically() -> None:
    first = canonicalize(request(tools=[{"type": "web_search"}, tool("a"), {"type": "file_search"}]))
    second = canonicalize(request(tools=[{"type": "file_search"}, {"type": "web_search"}, tool("a")]))
    assert canonical_json(first) == canonical_json(second)
    assert first["tools"][0]["function"]["name"] == "a"


def test_schema_keys_sorted_and_set_like_arrays_sorted() -> None:
    params = {"type": "object", "required": ["b", "a"], "properties": {"b": {"type": ["string", "null"]}, "a": {}}}
    out = canonicalize(request(tools=[tool("t", params)]))["tools"][0]["function"]["parameters"]
    assert list(out) == ["properties", "required", "type"]
    assert list(out["properties"]) == ["a", "b"]
    assert out["required"] == ["a", "b"]
    assert out["properties"]["b"]["type"] == ["null", "string"]


@pytest.mark.parametrize("keyword", ["enum", "anyOf", "oneOf", "allOf", "prefixItems", "examples", "items"])
def test_ordered_keywords_keep_their_order(keyword: str) -> None:
    values: list[Any] = [{"type": "string"}, {"type": "integer"}] if keyword != "enum" else ["z", "a"]
    if keyword == "examples":
        values = ["z", "a"]
    out = canonicalize(request(tools=[tool("t", {keyword: values})]))
    assert out["tools"][0]["function"]["parameters"][keyword] == values


def test_keyword_names_as_property_names_or_data_are_not_interpreted() -> None:
    params = {
        "type": "object",
        "properties": {"required": {"type": "string", "description": "a\r\nb"}},
        "default": {"required": ["z", "a"], "description": "x\r\ny"},
    }
    out = canonicalize(request(tools=[tool("t", params)]))["tools"][0]["function"]["parameters"]
    assert out["properties"]["required"]["description"] == "a\nb"
    assert out["default"] == {"description": "x\r\ny", "required": ["z", "a"]}


def test_dependencies_array_form_is_a_set() -> None:
    params = {
        "dependentRequired": {"card": ["zip", "cvv"]},
        "dependencies": {"a": ["y", "x"], "b": {"required": ["q", "p"]}},
    }
    out = canonicalize(request(tools=[tool("t", params)]))["tools"][0]["function"]["parameters"]
    assert out["dependentRequired"] == {"card": ["cvv", "zip"]}
    assert out["dependencies"] == {"a": ["x", "y"], "b": {"required": ["p", "q"]}}


def test_enum_values_are_never_normalized() -> None:
    params = {"type": "string", "enum": ["e\u0301", "a\r\nb"]}
    out = canonicalize(request(tools=[tool("t", params)]))
    assert out["tools"][0]["function"]["parameters"]["enum"] == ["e\u0301", "a\r\nb"]


def test_system_prompt_line_endings_and_nfc() -> None:
    text = "caf\u0065\u0301\r\nline\rend"
    messages = [{"role": role, "content": text} for role in ("system", "developer", "user", "assistant", "tool")]
    out = canonicalize(request(messages=messages))
    assert [m["content"] for m in out["messages"]] == ["caf\u00e9\nline\nend"] * 2 + [text] * 3


def test_trailing_whitespace_only_when_asked() -> None:
    body = request(messages=[{"role": "system", "content": "a  \nb\t"}, {"role": "user", "content": "a  \nb\t"}])
    assert canonicalize(body)["messages"][0]["content"] == "a  \nb\t"
    stripped = canonicalize(body, CanonicalPolicy(strip_trailing_whitespace=True))
    assert [m["content"] for m in stripped["messages"]] == ["a\nb", "a  \nb\t"]


def test_tool_call_arguments_reserialized_when_json() -> None:
    call = {"id": "1", "type": "function", "function": {"name": "f", "arguments": '{ "b": 1, "a": [1, 2.5] }'}}
    out = canonicalize(request(messages=[{"role": "assistant", "content": None, "tool_calls": [call]}]))
    assert out["messages"][0]["tool_calls"][0]["function"]["arguments"] == '{"a":[1,2.5],"b":1}'


@pytest.mark.parametrize(
    "arguments",
    [
        '{"a": 1, "a": 2}',
        '{"a": 1',
        "not json",
        '{"n": 123456789012345678901234567890}',
        '{"x": 1e999}',
        "NaN",
        '{"x": 0.1000000000000000000001}',  # written back as 0.1: another number
        '{"x": 1e-400}',
        '{"x": [-0]}',
    ],
)
def test_tool_call_arguments_left_alone_when_canonical_form_would_lose_something(arguments: str) -> None:
    call = {"id": "1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    out = canonicalize(request(messages=[{"role": "assistant", "content": None, "tool_calls": [call]}]))
    assert out["messages"][0]["tool_calls"][0]["function"]["arguments"] == arguments


def test_legacy_functions_and_function_call() -> None:
    body = request(
        functions=[{"name": "z", "parameters": {"required": ["b", "a"]}}, {"name": "a"}],
        messages=[{"role": "assistant", "content": None, "function_call": {"name": "z", "arguments": '{"b":1,"a":2}'}}],
    )
    out = canonicalize(body)
    assert [f["name"] for f in out["functions"]] == ["a", "z"]
    assert out["functions"][1]["parameters"]["required"] == ["a", "b"]
    assert out["messages"][0]["function_call"]["arguments"] == '{"a":2,"b":1}'


def test_thinking_blocks_are_never_touched() -> None:
    thinking = {"type": "thinking", "thinking": "step\r\none e\u0301", "signature": "abc"}
    body = {"model": "c", "max_tokens": 1, "messages": [{"role": "assistant", "content": [thinking]}]}
    assert canonicalize(body)["messages"][0]["content"][0] == thinking


def test_anthropic_blocks() -> None:
    body = {
        "model": "c",
        "max_tokens": 1,
        "system": [{"type": "text", "text": "rules\r\n", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"b": 1, "a": 2}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "out\r\n"}]},
        ],
    }
    out = canonicalize(body)
    assert out["system"] == [{"cache_control": {"type": "ephemeral"}, "text": "rules\n", "type": "text"}]
    assert list(out["messages"][0]["content"][0]["input"]) == ["a", "b"]
    assert out["messages"][1]["content"][0]["content"] == "out\r\n"  # a tool's output, as the tool wrote it


def test_response_format_schema_is_canonical() -> None:
    schema = {"type": "object", "required": ["b", "a"], "properties": {"b": {}, "a": {}}}
    out = canonicalize(request(response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}))
    assert out["response_format"]["json_schema"]["schema"]["required"] == ["a", "b"]


def test_unknown_fields_pass_through_untouched() -> None:
    extra = {"z": [3, 1, 2], "a": "x\r\n"}
    out = canonicalize(request(metadata=extra, stream=True))
    assert out["metadata"] is extra
    assert out["stream"] is True


def test_input_is_not_modified() -> None:
    body = request(
        tools=[tool("z", {"required": ["b", "a"]}), tool("a")],
        messages=[{"role": "system", "content": "Now: 2026-11-30T10:00:00Z\nrules"}],
    )
    before = json.dumps(body)
    canonicalize(body, CanonicalPolicy(relocate_volatile=True))
    assert json.dumps(body) == before


def test_memoized_tools_give_the_same_result_as_a_cold_run() -> None:
    params = {"properties": {"y": {"type": "string"}, "x": {"type": ["null", "integer"]}}, "required": ["y", "x"]}
    body = request(tools=[tool("b", params), tool("a")])
    warm = [canonical_json(canonicalize(json.loads(json.dumps(body)))) for _ in range(3)]
    from agentcache.canon.request import Canonicalizer

    cold = canonical_json(Canonicalizer(CanonicalPolicy()).canonicalize(body))
    assert warm == [cold] * 3


def test_relocate_volatile_openai() -> None:
    system = (
        "You are an agent.\nCurrent time: 2026-11-30T10:00:00Z\nSession 550e8400-e29b-41d4-a716-446655440000\nBe brief."
    )
    body = request(messages=[{"role": "system", "content": system}, {"role": "user", "content": "hi"}])
    out = canonicalize(body, CanonicalPolicy(relocate_volatile=True))
    assert out["messages"][0]["content"] == "You are an agent.\nBe brief."
    assert out["messages"][-1] == {
        "content": "Current time: 2026-11-30T10:00:00Z\nSession 550e8400-e29b-41d4-a716-446655440000",
        "role": "system",
    }
    assert canonical_json(canonicalize(out, CanonicalPolicy(relocate_volatile=True))) == canonical_json(out)


def test_relocate_volatile_keeps_the_stable_prefix_across_turns() -> None:
    policy = CanonicalPolicy(relocate_volatile=True)
    turns = [
        canonicalize(
            request(
                messages=[
                    {"role": "system", "content": f"Rules.\nDate: 2026-11-{day}\n"},
                    {"role": "user", "content": "hi"},
                ]
            ),
            policy,
        )
        for day in (29, 30)
    ]
    assert turns[0]["messages"][:2] == turns[1]["messages"][:2]
    assert turns[0]["messages"][2] != turns[1]["messages"][2]


def test_relocate_volatile_anthropic_uses_a_user_turn_and_keeps_cache_control() -> None:
    body = {
        "model": "c",
        "max_tokens": 1,
        "system": [
            {"type": "text", "text": "Rules.\nToday is November 30, 2026.", "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": "user", "content": "hi"}],
    }
    out = canonicalize(body, CanonicalPolicy(relocate_volatile=True))
    assert out["system"] == [{"cache_control": {"type": "ephemeral"}, "text": "Rules.", "type": "text"}]
    assert out["messages"][-1] == {"content": [{"text": "Today is November 30, 2026.", "type": "text"}], "role": "user"}


def test_relocate_volatile_is_off_by_default() -> None:
    body = request(messages=[{"role": "system", "content": "Now: 2026-11-30T10:00:00Z"}])
    assert canonicalize(body)["messages"] == body["messages"]


@pytest.mark.parametrize(
    "required",
    [["a", "a b"], ["a b", "a"], ["a!", "a"], ["a,b", "a"], ["b", 'a"q'], ["é", "z"], ["z", "é"], ["type", "a"]],
)
def test_required_is_sorted_like_python_strings(required: list[str]) -> None:
    params = {"type": "object", "properties": {name: {"type": "string"} for name in required}, "required": required}
    out = canonicalize(request(tools=[tool("t", params)]))
    assert out["tools"][0]["function"]["parameters"]["required"] == sorted(required)


def test_relocation_never_empties_a_block_or_a_prompt() -> None:
    policy = CanonicalPolicy(relocate_volatile=True)
    block = {"type": "text", "text": "Current time: 2026-01-01T10:00:00Z", "cache_control": {"type": "ephemeral"}}
    body = {"model": "c", "max_tokens": 1, "system": [block], "messages": [{"role": "user", "content": "hi"}]}
    assert canonicalize(body, policy)["system"] == [dict(sorted(block.items()))]
    only = request(
        messages=[{"role": "system", "content": "Now: 2026-01-01T10:00:00Z"}, {"role": "user", "content": "x"}]
    )
    assert canonicalize(only, policy)["messages"] == canonicalize(only)["messages"]


def test_relocation_keeps_an_assistant_prefill_last() -> None:
    body = {
        "model": "c",
        "max_tokens": 1,
        "system": "You are X.\nToday is 2026-01-01.",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "{"}],
    }
    out = canonicalize(body, CanonicalPolicy(relocate_volatile=True))
    assert [m["role"] for m in out["messages"]] == ["user", "user", "assistant"]
    assert out["messages"][-1]["content"] == "{"


def test_volatile_role_must_be_one_that_is_not_a_prefill() -> None:
    from agentcache.errors import PolicyError

    with pytest.raises(PolicyError, match="volatile_role must be"):
        CanonicalPolicy(volatile_role="assistant")


@pytest.mark.parametrize(
    "content",
    [
        ({"type": "text", "text": "a\r\nb"},),
        [collections.OrderedDict([("type", "text"), ("text", "a\r\nb")])],
    ],
)
def test_tuples_and_dict_subclasses_are_walked_like_lists_and_dicts(content: Any) -> None:
    out = canonicalize({"messages": [{"role": "system", "content": content}]})
    assert out["messages"][0]["content"] == [{"text": "a\nb", "type": "text"}]
    assert canonical_json(canonicalize(out)) == canonical_json(out)


def test_str_subclass_content_is_normalized() -> None:
    class Text(str):
        pass

    out = canonicalize({"messages": [{"role": "system", "content": Text("e\u0301")}]})
    assert out["messages"][0]["content"] == "\u00e9" and type(out["messages"][0]["content"]) is str


def test_messages_and_tools_may_be_tuples_but_not_null() -> None:
    from agentcache.errors import RequestShapeError

    out = canonicalize({"messages": ({"role": "user", "content": "hi"},), "tools": (tool("b"), tool("a"))})
    assert [t["function"]["name"] for t in out["tools"]] == ["a", "b"]
    with pytest.raises(RequestShapeError, match=r"^\$\.messages: expected an array of messages, got null"):
        canonicalize({"messages": None})


def test_response_format_depth_counts_from_the_request() -> None:
    nested: Any = 1
    for _ in range(6):
        nested = {"a": nested}
    canonicalize({"messages": [], "response_format": nested}, CanonicalPolicy(max_depth=8))


def cold_bytes(body: dict[str, Any]) -> bytes:
    from agentcache.canon.request import Canonicalizer

    return canonical_json(Canonicalizer(CanonicalPolicy()).canonicalize(body))


def test_message_lists_that_extend_shorten_or_edit_the_last_one_give_the_cold_bytes() -> None:
    from agentcache.canon.request import Canonicalizer

    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"b": 1, "a": null}'}}
    base: list[dict[str, Any]] = [
        {"role": "system", "content": "rules\r\n"},
        {"role": "user", "content": "cafe\u0301"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "out\r\n"}]},
    ]
    turns = [
        base,
        [*base, {"role": "user", "content": "next"}],
        base[:2],  # a retry drops the last turns
        [*base[:2], {"role": "user", "content": "edited"}],
        [base[0], {"role": "user", "content": "cafe\u0301 "}, *base[2:]],  # an edit in the middle
        [],
        [*base, {"role": "user", "content": "next"}],
    ]
    warm = Canonicalizer(CanonicalPolicy())
    for messages in turns:
        body = json.loads(json.dumps(request(messages=messages)))
        assert canonical_json(warm.canonicalize(body)) == cold_bytes(body)


def test_edits_made_in_place_are_never_served_from_the_memo() -> None:
    """The memo is keyed by content, not identity: the same objects edited between calls give fresh results."""
    from agentcache.canon.request import Canonicalizer

    params = {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}
    body = request(
        tools=[tool("b", params), tool("a")],
        messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok"}],
    )
    warm = Canonicalizer(CanonicalPolicy())
    warm.canonicalize(body)
    params["properties"]["x"]["type"] = "integer"
    params["properties"]["y"] = {"type": "string"}
    params["required"] = ["y", "x"]
    body["messages"][0]["content"] = "cafe\u0301"
    out = warm.canonicalize(body)
    assert out["tools"][1]["function"]["parameters"]["required"] == ["x", "y"]
    assert canonical_json(out) == cold_bytes(body)


def test_results_share_no_list_with_the_memo() -> None:
    """Callers may reuse the lists they get back; the next result must not see that."""
    body = request(tools=[tool("b"), tool("a")], messages=[{"role": "user", "content": "hi"}])
    first = canonicalize(json.loads(json.dumps(body)))
    first["tools"].clear()
    first["messages"].append({"role": "user", "content": "injected"})
    assert canonical_json(canonicalize(json.loads(json.dumps(body)))) == cold_bytes(body)


@pytest.mark.parametrize("kind", [["text"], {"type": "text"}])
def test_a_block_type_that_is_not_a_string_marks_no_prose(kind: Any) -> None:
    body = {
        "messages": [{"role": "user", "content": [{"type": kind, "text": "a\r\n"}]}],
        "system": [{"type": kind, "text": "Rules.\nNow: 2026-01-01T10:00:00Z"}],
    }
    for policy in (CanonicalPolicy(), CanonicalPolicy(relocate_volatile=True)):
        out = canonicalize(body, policy)
        assert out["messages"][0]["content"][0]["text"] == "a\r\n"
        assert out["system"][0]["text"] == "Rules.\nNow: 2026-01-01T10:00:00Z"


def test_an_enum_block_type_is_read_as_its_value() -> None:
    """orjson sends an Enum member as its value, so the server sees a text block: its text is prose."""
    import enum

    class Kind(enum.Enum):
        TEXT = "text"

    out = canonicalize({"messages": [{"role": "system", "content": [{"type": Kind.TEXT, "text": "a\r\nb"}]}]})
    assert out["messages"][0]["content"][0] == {"text": "a\nb", "type": "text"}
    assert canonical_json(canonicalize(out)) == canonical_json(out)


def test_editing_a_request_after_canonicalizing_it_does_not_change_later_results() -> None:
    """The memo keeps private copies: objects the caller still holds, and may reuse, are never kept."""
    block = {"text": "hi", "type": "text"}  # already canonical: a walk could have returned these very objects
    body = {"messages": [{"content": [block], "role": "user"}], "model": "m"}
    expected = json.loads(json.dumps(body))
    canonicalize(body)
    block["text"] = "edited"
    body["messages"][0]["role"] = "assistant"
    assert canonicalize(json.loads(json.dumps(expected))) == expected


def test_normalize_whitespace_touches_the_system_prompt_and_descriptions_only() -> None:
    """Opt-in: trailing blanks and blank-line runs go from prose; user text, tool output and code keep them."""
    messy = "Rules: \n\n\n\nBe brief.\t\n```py\nx = 1  \n\n\n\ny = 2\n```\n"
    request = {
        "messages": [
            {"role": "system", "content": messy},
            {"role": "user", "content": messy},
            {"role": "tool", "tool_call_id": "1", "content": messy},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "description": messy, "parameters": {}}}],
    }
    out = canonicalize(request, CanonicalPolicy(normalize_whitespace=True))
    tidy = "Rules:\n\nBe brief.\n```py\nx = 1  \n\n\n\ny = 2\n```\n"
    assert out["messages"][0]["content"] == tidy
    assert out["tools"][0]["function"]["description"] == tidy
    assert out["messages"][1]["content"] == messy and out["messages"][2]["content"] == messy
    assert canonicalize(request)["messages"][0]["content"] == messy  # off by default
    again = canonicalize(out, CanonicalPolicy(normalize_whitespace=True))
    assert again["messages"][0]["content"] == tidy


def _tool_call_history() -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    return {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "it returned null"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"default": None}}}],
    }


def test_canonical_json_of_a_canonical_body_does_not_walk_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 18: a tool call's "content": null made canonical_json walk the whole body in Python."""
    out = canonicalize(_tool_call_history())

    def walked(*args: Any) -> None:
        raise AssertionError("walked")

    monkeypatch.setattr("agentcache.canon.jsonvalue.locate", walked)
    assert json.loads(canonical_json(out))["messages"][1]["content"] is None


@pytest.mark.parametrize(
    ("edit", "path"),
    [
        (lambda out: out["messages"][1].__setitem__("content", float("nan")), "$.messages[1].content"),
        (lambda out: out["messages"][0].__setitem__("extra", float("inf")), "$.messages[0].extra"),
        (
            lambda out: out["tools"][0]["function"]["parameters"].__setitem__("default", float("nan")),
            "$.tools[0].function.parameters.default",
        ),
        (lambda out: out.__setitem__("messages", [*out["messages"], {"n": [None, float("nan")]}]), "$.messages[3]"),
        (lambda out: out["messages"].append({"n": [None, float("nan")]}), "$.messages[3]"),
        (lambda out: out.__setitem__("temperature", float("nan")), "$.temperature"),
    ],
)
def test_canonical_json_still_names_a_nan_put_into_a_canonical_body(edit: Any, path: str) -> None:
    """The recorded nulls are a hint: a NaN edited into the memo's own objects where a null was, into a message as
    a new key, or next to them, is still found."""
    out = Canonicalizer(CanonicalPolicy()).canonicalize(_tool_call_history())  # objects no other test shares
    edit(out)
    with pytest.raises(InvalidValueError, match=re.escape(path)):
        canonical_json(out)


def _conversation(name: str, turns: int) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}]
    for turn in range(turns):
        messages += [{"role": "user", "content": f"{name} {turn}"}, {"role": "assistant", "content": f"ok {turn}"}]
    return request(messages=messages)


def test_interleaved_threads_each_extend_their_own_history(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two conversations sent turn about: each request's earlier messages are its own thread's history, compared
    as bytes, not memo lookups; the bytes are those of a canonicalizer that saw nothing else."""
    canonicalizer = Canonicalizer(CanonicalPolicy())
    looked_up: list[bytes] = []
    get = canonicalizer.message_memo.get
    monkeypatch.setattr(canonicalizer.message_memo, "get", lambda raw: looked_up.append(raw) or get(raw))
    for turn in range(1, 5):
        for name in ("a", "b"):
            looked_up.clear()
            body = _conversation(name, turn)
            out = canonicalizer.build(body, thread=name)[0]
            assert canonical_json(out) == canonical_json(Canonicalizer(CanonicalPolicy()).canonicalize(body))
            assert len(looked_up) == (3 if (turn, name) == (1, "a") else 2)  # the new turn's messages only
            assert canonicalizer.histories.get(name).raw == json.dumps(body["messages"], separators=(",", ":")).encode()


def test_histories_keep_the_last_extended_within_their_budget() -> None:
    histories = Histories(max_bytes=100)
    assert histories.get("a") is NO_HISTORY
    lists = {thread: History(f"[{thread * 40}]".encode(), [], [], []) for thread in "abcde"}
    for thread in "abc":
        histories.put(thread, lists[thread])
    assert len(histories) == 2 and histories.get("b") is lists["b"]  # 3 x 42 bytes: the least recent dropped
    assert histories.get("a") is lists["c"]  # a thread not kept starts from the last list of any
    histories.put("b", lists["b"])  # b extended again: c is now the least recent
    histories.put("d", lists["d"])
    assert [histories.get(t) is lists[t] for t in "bcd"] == [True, False, True]
    large = History(b"[" + b"1" * 200 + b"]", [], [], [])
    histories.put("e", large)
    assert histories.get("e") is large and len(histories) == 1  # the last one is kept whatever its size


@pytest.mark.parametrize(
    "edit", [lambda tools: tools.reverse(), lambda tools: tools.pop(), lambda tools: tools.append(tool("new"))]
)
def test_built_bytes_follow_a_tool_list_changed_after_it_was_built(edit: Any) -> None:
    """The tools' JSON kept with their memo entry is written only while the body still holds that entry's tools."""
    from agentcache.canon.jsonvalue import sourced_json
    from agentcache.canon.request import TOOL_SET

    canonicalizer = Canonicalizer(CanonicalPolicy())
    body = request(tools=[tool("b"), tool("a")])
    canonicalizer.build(body)
    out, sources = canonicalizer.build(body)  # the second time, from the memo
    edit(out["tools"])
    assert sourced_json(out, sources, TOOL_SET) == json.dumps(out, sort_keys=True, separators=(",", ":")).encode()
