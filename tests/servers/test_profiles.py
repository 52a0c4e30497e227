"""ServerProfile's request reshaping, and ServerPrompt's token ids against each engine's own.

The engine tests send every request of :data:`CASES` to each server's tokenize endpoint and compare its ids with
``ServerPrompt.from_pretrained(model_dir, profile).tokens(request)``. Where a server refuses a request the test
asserts the refusal instead (:data:`REFUSED`). The unit tests check the reshaping rules listed in the table of
``agentcache/servers/profiles.py``, one rule at a time, without an engine.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from tokenizers import Tokenizer

from agentcache.backends import OpenAICompatClient
from agentcache.errors import InputError, TokenizerError
from agentcache.servers import (
    ANTHROPIC,
    LLAMA_CPP,
    OPENAI,
    PROFILES,
    SGLANG,
    VLLM,
    ChatTemplate,
    ServerPrompt,
    get_profile,
)
from tests.conftest import EngineInfo

WEATHER = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}, "days": {"type": "integer"}},
    "required": ["city"],
}
BOOKING = {
    "type": "object",
    "properties": {"party": {"type": "integer"}, "time": {"type": "string"}},
    "required": ["party", "time"],
    "additionalProperties": False,
}
FORECAST = {
    "type": "function",
    "function": {"name": "forecast", "description": "Weather forecast", "parameters": WEATHER},
}


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool_turns(arguments: str) -> list[dict[str, Any]]:
    """A user turn, an assistant turn calling ``forecast`` with ``arguments``, and the tool's answer."""
    return [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call("call_1", "forecast", arguments)]},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    ]


def text(*parts: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": p} for p in parts]


CASES: dict[str, dict[str, Any]] = {
    "odd_key_order_and_strict": {
        "messages": [{"role": "system", "content": "You plan trips."}, {"role": "user", "content": "Plan Sunday."}],
        "tools": [
            {
                "function": {"parameters": WEATHER, "description": "Weather forecast", "name": "forecast"},
                "type": "function",
            },
            {
                "type": "function",
                "function": {"strict": True, "name": "book", "parameters": BOOKING, "description": "Book a table"},
            },
        ],
    },
    "tools_without_description_or_parameters": {
        "messages": [{"role": "user", "content": "ping"}],
        "tools": [
            {"type": "function", "function": {"name": "ping"}},
            {"type": "function", "function": {"name": "now", "description": "Current time"}},
        ],
    },
    "non_ascii": {
        "messages": [{"role": "user", "content": "Quel temps à Zürich — et à 東京? 🌧"}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "météo",
                    "description": "Prévisions für Städte / 都市の天気 🌦",
                    "parameters": {
                        "type": "object",
                        "properties": {"ville": {"type": "string", "description": "Ville"}},
                    },
                },
            }
        ],
    },
    "tool_calls_with_compact_json_arguments": {
        "messages": [
            {"role": "system", "content": "You shop."},
            {"role": "user", "content": "Find cheap umbrellas."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    call(
                        "call_1",
                        "search",
                        '{"q":"umbrella","max_price":1.50,"limit":1e3,"filters":{"colors":["red","blue"],'
                        '"size":{"min":0.5,"max":2}},"in_stock":true,"brand":null}',
                    ),
                    call("call_2", "forecast", '{"city":"Paris","days":3}'),
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "[]"},
            {"role": "tool", "tool_call_id": "call_2", "content": "rain"},
            {"role": "user", "content": "Thanks"},
        ],
        "tools": [
            FORECAST,
            {"type": "function", "function": {"name": "search", "description": "Search", "parameters": WEATHER}},
        ],
    },
    "arguments_that_are_not_json": {"messages": tool_turns('{"city": "Par'), "tools": [FORECAST]},
    "arguments_that_are_json_but_not_an_object": {"messages": tool_turns("[1,2]"), "tools": [FORECAST]},
    "content_as_text_parts": {
        "messages": [
            {"role": "system", "content": text("Rule one.", "Rule two.")},
            {"role": "user", "content": text("Part A", "Part B")},
            {"role": "assistant", "content": text("Reply", "continued")},
            {"role": "user", "content": "And the weather?"},
            {"role": "assistant", "content": "", "tool_calls": [call("call_9", "forecast", '{"city":"Oslo"}')]},
            {"role": "tool", "tool_call_id": "call_9", "content": text("line 1", "line 2")},
        ],
        "tools": [FORECAST],
    },
    "empty_tools_list": {
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "tools": [],
    },
    # Requests real agents send that are easy to get wrong: floats as llama.cpp writes them, tool_choice, extra keys.
    "floats_with_more_than_six_digits": {
        "messages": tool_turns('{"city":"Paris","lat":48.856614,"lon":2.3522219,"population":2148271.0}'),
        "tools": [FORECAST],
    },
    "float_bounds_in_a_tool_schema": {
        "messages": [{"role": "user", "content": "Rate it."}],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "rate",
                    "description": "Give a score",
                    "parameters": {
                        "type": "object",
                        "properties": {"score": {"type": "number", "minimum": 0.0, "maximum": 1.0}},
                    },
                },
            }
        ],
    },
    "tool_choice_none": {
        "messages": [{"role": "user", "content": "Just chat."}],
        "tools": [FORECAST],
        "tool_choice": "none",
    },
    "tool_choice_naming_one_tool": {
        "messages": [{"role": "user", "content": "Weather?"}],
        "tools": [
            FORECAST,
            {"type": "function", "function": {"name": "ping", "description": "Ping", "parameters": {}}},
        ],
        "tool_choice": {"type": "function", "function": {"name": "forecast"}},
    },
    "unknown_function_key": {
        "messages": [{"role": "user", "content": "Weather?"}],
        "tools": [
            {
                "type": "function",
                "function": {"name": "forecast", "description": "Forecast", "parameters": WEATHER, "x-owner": "team-a"},
            }
        ],
    },
}

REFUSED = {
    ("arguments_that_are_not_json", "sglang"): 400,  # "Assistant tool call function.arguments must be valid JSON."
    ("arguments_that_are_not_json", "llama.cpp"): 500,  # "Failed to parse tool call arguments as JSON" (its 500)
    ("arguments_that_are_json_but_not_an_object", "sglang"): 400,  # "... arguments must be a JSON object."
}
"""(case, profile) -> the HTTP status the server refuses that request with."""

ENGINES = [
    pytest.param("sglang", "sglang", marks=pytest.mark.sglang, id="sglang"),
    pytest.param("vllm", "vllm", marks=pytest.mark.vllm, id="vllm"),
    pytest.param("llama_server", "llama.cpp", marks=pytest.mark.llama_server, id="llama.cpp"),
]


@functools.cache
def server_prompt(model_dir: Path, profile: str) -> ServerPrompt:
    """Loaded once per profile: reading the 200k-token tokenizer.json takes a second or more."""
    return ServerPrompt.from_pretrained(model_dir, profile)


def server_tokens(engine: EngineInfo, profile: str, request: dict[str, Any]) -> httpx.Response:
    """The server's prompt token ids for a chat request, in the response's ``tokens``, or its refusal."""
    with httpx.Client(base_url=engine.url, timeout=120) as http:
        if profile == "llama.cpp":  # renders and tokenizes in two steps, as its chat endpoint does
            rendered = http.post("/apply-template", json=request)
            if rendered.status_code != 200:
                return rendered
            body = {"content": rendered.json()["prompt"], "add_special": False, "parse_special": True}
            return http.post("/tokenize", json=body)
        path = "/v1/tokenize" if profile == "sglang" else "/tokenize"
        return http.post(path, json={"model": engine.model, **request, "add_generation_prompt": True})


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize(("fixture", "profile"), ENGINES)
def test_prompt_tokens_match_the_server(
    request: pytest.FixtureRequest, model_dir: Path, fixture: str, profile: str, case: str
) -> None:
    engine: EngineInfo = request.getfixturevalue(fixture)
    body = CASES[case]
    answer = server_tokens(engine, profile, body)
    refused = REFUSED.get((case, profile))
    if refused is not None:
        assert answer.status_code == refused, answer.text
        return
    assert answer.status_code == 200, answer.text
    prompt = server_prompt(model_dir, profile)
    expected = answer.json()["tokens"]
    predicted = prompt.tokens(body)
    if predicted != expected:  # show where the texts part, which the ids alone do not
        served = Tokenizer.from_file(str(model_dir / "tokenizer.json")).decode(expected, skip_special_tokens=False)
        mine = prompt.text(body)
        assert served != mine, "same text, different ids: the client's tokenizer is not the server's"
        at = next(
            (i for i, (a, b) in enumerate(zip(served, mine, strict=False)) if a != b), min(len(served), len(mine))
        )
        start = max(at - 40, 0)
        pytest.fail(f"{profile} renders {served[start : at + 80]!r}\n  predicted {mine[start : at + 80]!r}")


@pytest.mark.parametrize(("fixture", "profile"), ENGINES)
def test_chat_completion_counts_the_predicted_tokens(
    request: pytest.FixtureRequest, model_dir: Path, fixture: str, profile: str
) -> None:
    engine: EngineInfo = request.getfixturevalue(fixture)
    body = CASES["tool_calls_with_compact_json_arguments"]
    with OpenAICompatClient(engine.url, model=engine.model) as client:
        result = client.chat({**body, "max_tokens": 1, "temperature": 0})
    assert result.usage is not None
    assert result.usage.prompt_tokens == len(server_prompt(model_dir, profile).tokens(body))


# Unit tests of the reshaping rules (no engine).


def tools_of(profile: str, *tools: dict[str, Any]) -> list[dict[str, Any]]:
    shaped = get_profile(profile).template_inputs({"messages": [], "tools": list(tools)})[1]
    assert shaped is not None
    return shaped


def test_sglang_keeps_function_keys_as_sent_then_adds_null_description_and_parameters() -> None:
    [tool] = tools_of("sglang", {"function": {"strict": True, "name": "f"}, "type": "function"})
    assert list(tool) == ["type", "function", "defer_loading"]
    assert tool["defer_loading"] is None
    assert list(tool["function"].items()) == [
        ("strict", True),
        ("name", "f"),
        ("description", None),
        ("parameters", None),
    ]
    [full] = tools_of(
        "sglang", {"type": "function", "function": {"parameters": WEATHER, "description": "d", "name": "g"}}
    )
    assert list(full["function"]) == ["parameters", "description", "name"]


def test_vllm_orders_function_keys_and_keeps_strict_only_when_sent() -> None:
    plain, strict = tools_of(
        "vllm",
        {"function": {"parameters": WEATHER, "name": "f"}, "type": "function", "cache_control": {"type": "ephemeral"}},
        {"type": "function", "function": {"strict": True, "description": "d", "name": "g"}},
    )
    assert plain == {"type": "function", "function": {"name": "f", "description": None, "parameters": WEATHER}}
    assert list(plain["function"]) == ["name", "description", "parameters"]
    assert list(strict["function"].items()) == [
        ("name", "g"),
        ("description", "d"),
        ("parameters", None),
        ("strict", True),
    ]


def test_llama_cpp_drops_strict_and_writes_a_missing_description_as_empty() -> None:
    [tool] = tools_of(
        "llama.cpp", {"function": {"strict": True, "parameters": WEATHER, "name": "f"}, "type": "function"}
    )
    assert tool == {"type": "function", "function": {"name": "f", "description": "", "parameters": WEATHER}}
    assert list(tool["function"]) == ["name", "description", "parameters"]


@pytest.mark.parametrize("profile", ["openai", "anthropic"])
def test_hosted_profiles_keep_tools_and_messages_as_sent(profile: str) -> None:
    body = CASES["content_as_text_parts"]
    messages, tools = get_profile(profile).template_inputs(body)
    assert messages == body["messages"] and tools == body["tools"]


ARGUMENTS = '{"price":1.50,"limit":1e3,"nested":{"list":[1e3,2,{"x":0.25}]},"flag":false}'


@pytest.mark.parametrize("profile", ["sglang", "vllm"])
def test_arguments_are_parsed_and_floats_stay_floats(profile: str) -> None:
    messages, _ = get_profile(profile).template_inputs({"messages": tool_turns(ARGUMENTS)})
    arguments = messages[1]["tool_calls"][0]["function"]["arguments"]
    assert arguments == {"price": 1.5, "limit": 1000.0, "nested": {"list": [1000.0, 2, {"x": 0.25}]}, "flag": False}
    assert (
        json.dumps(arguments)
        == '{"price": 1.5, "limit": 1000.0, "nested": {"list": [1000.0, 2, {"x": 0.25}]}, "flag": false}'
    )


READS_ARGUMENTS = (
    "{% for m in messages %}{% for c in m.tool_calls or [] %}"
    "{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}"
)
"""A template that reads tool-call arguments as an object: llama.cpp's probes find it does, so it parses them."""


def test_llama_cpp_parses_arguments_and_its_tojson_writes_floats_like_cpp() -> None:
    reads = ChatTemplate(READS_ARGUMENTS, float_format="cpp")
    messages, _ = LLAMA_CPP.template_inputs({"messages": tool_turns(ARGUMENTS)}, reads)
    arguments = messages[1]["tool_calls"][0]["function"]["arguments"]
    assert isinstance(arguments, dict)
    template = ChatTemplate("{{ value | tojson }}", float_format=LLAMA_CPP.float_format)
    rendered = template.render([], value=arguments, add_generation_prompt=False)
    assert rendered == '{"price": 1.5, "limit": 1000, "nested": {"list": [1000, 2, {"x": 0.25}]}, "flag": false}'
    odd = {"a": 48.856614, "b": 2148271.0, "c": 1e20, "d": -0.0}
    assert template.render([], value=odd) == '{"a": 48.8566, "b": 2.14827e+06, "c": 1e+20, "d": -0}'


def test_llama_cpp_and_vllm_arguments_that_do_not_parse() -> None:
    """vLLM empties them; llama.cpp parses any JSON for a template that reads objects (and answers 500 on the
    rest), and keeps the string for one that does not."""
    reads, prints = ChatTemplate(READS_ARGUMENTS, float_format="cpp"), ChatTemplate("{{ messages }}")
    for raw, vllm, llama in (("[1,2]", {}, [1, 2]), ('{"city": "Par', {}, None), ("", {}, None)):
        turns = {"messages": tool_turns(raw)}
        assert VLLM.template_inputs(turns)[0][1]["tool_calls"][0]["function"]["arguments"] == vllm
        assert LLAMA_CPP.template_inputs(turns, prints)[0][1]["tool_calls"][0]["function"]["arguments"] == raw
        if llama is None:
            with pytest.raises(TokenizerError, match="not JSON"):
                LLAMA_CPP.template_inputs(turns, reads)
        else:
            assert LLAMA_CPP.template_inputs(turns, reads)[0][1]["tool_calls"][0]["function"]["arguments"] == llama


def test_sglang_tool_choice_and_unknown_function_keys() -> None:
    tools = [
        {"type": "function", "function": {"name": "a", "x-owner": "me", "parameters": {}}},
        {"type": "function", "function": {"name": "b"}},
    ]
    messages = [{"role": "user", "content": "hi"}]
    _, shaped = SGLANG.template_inputs({"messages": messages, "tools": tools})
    assert shaped is not None and list(shaped[0]["function"]) == ["name", "parameters", "description"]
    assert SGLANG.template_inputs({"messages": messages, "tools": tools, "tool_choice": "none"})[1] is None
    named = {"type": "function", "function": {"name": "b"}}
    _, only = SGLANG.template_inputs({"messages": messages, "tools": tools, "tool_choice": named})
    assert only is not None and [t["function"]["name"] for t in only] == ["b"]


@pytest.mark.parametrize("profile", ["openai", "anthropic"])
def test_hosted_profiles_keep_arguments_strings(profile: str) -> None:
    messages, _ = get_profile(profile).template_inputs({"messages": tool_turns(ARGUMENTS)})
    assert messages[1]["tool_calls"][0]["function"]["arguments"] == ARGUMENTS


PARTS = [
    {"role": "system", "content": text("a", "b")},
    {"role": "user", "content": text("c", "d")},
    {"role": "assistant", "content": text("e", "f")},
    {"role": "tool", "tool_call_id": "x", "content": text("g", "h")},
]


STRING_TEMPLATE = ChatTemplate("{% for message in messages %}{{ message.content }}{% endfor %}")
PARTS_TEMPLATE = ChatTemplate("{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}{% endfor %}")


def contents(profile: str, messages: list[dict[str, Any]], template: ChatTemplate | None = None) -> list[Any]:
    return [m["content"] for m in get_profile(profile).template_inputs({"messages": messages}, template)[0]]


def test_text_parts_sglang_joins_with_a_space_unless_the_template_loops_over_parts() -> None:
    """SGLang's content-format rule (a loop over ``m.content``); a tool message's parts are always joined."""
    assert contents("sglang", PARTS, STRING_TEMPLATE) == ["a b", "c d", "e f", "g h"]
    assert contents("sglang", PARTS, PARTS_TEMPLATE) == [text("a", "b"), text("c", "d"), text("e", "f"), "g h"]


def test_text_parts_vllm_joins_with_a_newline_unless_the_template_loops_over_parts() -> None:
    """vLLM's rule follows ``messages`` into loops; for a parts template it wraps a string in one text part,
    and a tool message's parts are always joined."""
    assert contents("vllm", PARTS, STRING_TEMPLATE) == ["a\nb", "c\nd", "e\nf", "g\nh"]
    assert contents("vllm", PARTS, PARTS_TEMPLATE) == [text("a", "b"), text("c", "d"), text("e", "f"), "g\nh"]
    assert contents("vllm", [{"role": "user", "content": "c"}], PARTS_TEMPLATE) == [text("c")]


@pytest.mark.parametrize(("profile", "empty"), [("sglang", ""), ("vllm", "")])
def test_null_content_is_an_empty_string(profile: str, empty: str) -> None:
    message = {"role": "assistant", "content": None, "tool_calls": [call("c", "f", "{}")]}
    assert contents(profile, [message], STRING_TEMPLATE) == [empty]


def test_sglang_dumps_its_message_models() -> None:
    """A user message keeps role and content; the others every non-null field, and a tool call its null index."""
    messages = [{"role": "user", "content": "hi", "name": "u"}, *tool_turns('{"city": "Paris"}')[1:]]
    shaped, _ = SGLANG.template_inputs({"messages": messages}, STRING_TEMPLATE)
    assert shaped[0] == {"role": "user", "content": "hi"}
    function = {"name": "forecast", "arguments": {"city": "Paris"}}
    assert shaped[1]["tool_calls"] == [{"id": "call_1", "index": None, "type": "function", "function": function}]
    with pytest.raises(TokenizerError, match="JSON object"):
        SGLANG.template_inputs({"messages": tool_turns("[1]")})


def test_vllm_rebuilds_messages_and_coerces_arguments() -> None:
    """Only the fields vLLM's message parser keeps; reasoning under both names; arguments always an object."""
    looked = {"role": "assistant", "content": None, "reasoning_content": "r", "extra": 1,
              "tool_calls": [call("call_1", "forecast", "not json")]}
    shaped, _ = VLLM.template_inputs({"messages": [looked]}, STRING_TEMPLATE)
    assert shaped == [{
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_1", "function": {"arguments": {}, "name": "forecast"}, "type": "function"}],
        "reasoning": "r",
        "reasoning_content": "r",
    }]


def test_vllm_turns_developer_into_a_first_system_message_for_a_template_without_that_role() -> None:
    messages = [{"role": "system", "content": "a"}, {"role": "user", "content": "u"},
                {"role": "developer", "content": "b"}]
    shaped, _ = VLLM.template_inputs({"messages": messages}, STRING_TEMPLATE)
    assert shaped == [{"role": "system", "content": "a\n\nb"}, {"role": "user", "content": "u"}]


def test_text_parts_llama_cpp_joins_with_a_newline() -> None:
    assert contents("llama.cpp", PARTS) == ["a\nb", "c\nd", "e\nf", "g\nh"]


IMAGE = [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": "data:,"}}]


@pytest.mark.parametrize("profile", ["sglang", "vllm", "llama.cpp"])
def test_media_parts_are_not_modelled(profile: str) -> None:
    """A media part goes through the server's multimodal processing (or is refused without a projector); the
    client says so instead of guessing."""
    with pytest.raises(TokenizerError, match="image_url"):
        contents(profile, [{"role": "user", "content": IMAGE}])


@pytest.mark.parametrize("profile", [p for p in PROFILES if p not in ("llama.cpp", "sglang")])
def test_empty_tools_stay_empty_and_missing_tools_give_none(profile: str) -> None:
    """As transformers passes them: a template testing ``tools is none`` tells the two apart."""
    shape = get_profile(profile).template_inputs
    messages = [{"role": "user", "content": "hi"}]
    assert shape({"messages": messages, "tools": []}) == (messages, [])
    assert shape({"messages": messages}) == (messages, None)


def test_sglang_passes_none_for_empty_tools() -> None:
    """SGLang renders tools only when the request has some (and ``tool_choice`` is not "none")."""
    assert SGLANG.template_inputs({"messages": [{"role": "user", "content": "hi"}], "tools": []})[1] is None


def test_a_request_template_is_rendered_where_the_server_takes_it() -> None:
    """vLLM renders a top-level ``chat_template`` and shapes by its format; SGLang renders
    ``chat_template_kwargs.chat_template`` and shapes by the model's own template's format."""
    either = "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}"
    either += "{% for p in m.content %}{{ p.text }}|{% endfor %}{% endif %}{% endfor %}"
    prompt = functools.partial(ServerPrompt, template=STRING_TEMPLATE, tokenizer=None)  # type: ignore[arg-type]
    messages = [{"role": "user", "content": text("x", "y")}]
    assert prompt(VLLM).text({"messages": messages, "chat_template": either}) == "x|y|"
    assert prompt(VLLM).text({"messages": messages, "chat_template_kwargs": {"chat_template": either}}) == "x\ny"
    assert prompt(SGLANG).text({"messages": messages, "chat_template_kwargs": {"chat_template": either}}) == "x y"
    assert prompt(LLAMA_CPP).text({"messages": messages, "chat_template": either}) == "x\ny"  # no such field


def test_sglang_renders_bare_functions_when_the_template_fails_on_wrapped_tools() -> None:
    """SGLang's second try (for templates that expect tools without the OpenAI wrapper); vLLM has none."""
    bare_only = ChatTemplate(
        "{% if tools[0].name is not defined %}{{ raise_exception('wrapped') }}{% endif %}{{ tools[0].name }}"
    )
    request = {"messages": [{"role": "user", "content": "hi"}], "tools": [FORECAST]}
    assert ServerPrompt(SGLANG, bare_only, None).text(request) == "forecast"  # type: ignore[arg-type]
    with pytest.raises(TokenizerError, match="wrapped"):
        ServerPrompt(VLLM, bare_only, None).text(request)  # type: ignore[arg-type]


def test_llama_cpp_leaves_empty_and_missing_tools_undefined() -> None:
    """llama.cpp passes ``tools`` only when there are some: a template testing ``tools is defined`` sees none."""
    messages = [{"role": "user", "content": "hi"}]
    assert LLAMA_CPP.template_inputs({"messages": messages, "tools": []}) == (messages, None)
    template = ChatTemplate("{{ 'tools' if tools is defined else 'none' }}")
    assert template.render(messages, None, undefined_tools=LLAMA_CPP.undefined_tools) == "none"


@pytest.mark.parametrize("profile", list(PROFILES))
def test_template_inputs_leave_the_request_unchanged(profile: str) -> None:
    for case, body in CASES.items():
        if (case, profile) in REFUSED:
            continue
        before = copy.deepcopy(body)
        get_profile(profile).template_inputs(body)
        assert body == before


@pytest.mark.parametrize("messages", [None, "hi", [{"role": "user"}, "hi"]], ids=["missing", "string", "non-object"])
def test_messages_must_be_a_list_of_objects(messages: Any) -> None:
    body = {} if messages is None else {"messages": messages}
    with pytest.raises(InputError, match=r"\$\.messages"):
        SGLANG.template_inputs(body)


def test_get_profile() -> None:
    assert [get_profile(name) for name in ("sglang", "vllm", "llama.cpp", "openai", "anthropic")] == [
        SGLANG,
        VLLM,
        LLAMA_CPP,
        OPENAI,
        ANTHROPIC,
    ]
    assert get_profile(VLLM) is VLLM
    with pytest.raises(
        InputError, match=re.escape("unknown server 'llama-server': use one of sglang, vllm, llama.cpp")
    ):
        get_profile("llama-server")


def test_a_request_is_cached_on_a_2xx_or_on_an_error_given_after_the_prompt_was_evaluated() -> None:
    """llama-server fails a request whose output its parser cannot read after generating it: the prompt stays in
    the slot (the real-template matrix meets it on DeepSeek-V3.2)."""
    late = "The model produced output that does not match the expected peg-native format"
    llama, sglang = get_profile("llama.cpp"), get_profile("sglang")
    assert llama.cached(200, None) and sglang.cached(204, None)
    assert llama.cached(500, late) and not sglang.cached(500, late)
    assert not llama.cached(500, "template render failed") and not llama.cached(400, None)
    assert not llama.cached(None, late)  # no answer at all
