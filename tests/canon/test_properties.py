"""The canonicalizer's guarantees, each checked on >= 500 generated requests."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache import canonical_json, canonicalize
from tests.canon.strategies import requests, shuffled

CASES = settings(max_examples=500, deadline=None)


FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")


def prose(text: str) -> str:
    """LF line endings and NFC, line by line, except on the lines of fenced code blocks, fences included. A line is
    a fence as it reads in NFC."""
    out, fence = [], ""
    for line in re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+", text):
        bare = unicodedata.normalize("NFC", line.rstrip("\r\n"))
        if fence:
            out.append(line)
            closing = bare.strip(" \t")
            if len(closing) >= len(fence) and set(closing) == {fence[0]}:
                fence = ""
            continue
        opening = FENCE.fullmatch(bare)
        if opening and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
            out.append(line)
            fence = opening.group(1)
        else:
            out.append(unicodedata.normalize("NFC", line.replace("\r\n", "\n").replace("\r", "\n")))
    return "".join(out)


def schema_meaning(schema: Any) -> Any:
    """A schema up to the documented reorderings: set-like arrays sorted, prose normalized."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties":
            out[key] = {name: schema_meaning(item) for name, item in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = schema_meaning(value)
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = [schema_meaning(item) for item in value]
        elif key in ("required", "type") and isinstance(value, list):
            out[key] = sorted(value)
        elif key in ("description", "title"):
            out[key] = prose(value)
        else:
            out[key] = value
    return out


def tool_meaning(tool: dict[str, Any]) -> Any:
    out = dict(tool)
    if "function" in out:
        function = dict(out["function"])
        function["description"] = prose(function["description"])
        function["parameters"] = schema_meaning(function["parameters"])
        out["function"] = function
    else:
        out["description"] = prose(out["description"])
        out["input_schema"] = schema_meaning(out["input_schema"])
    return out


def tools_meaning(tools: list[dict[str, Any]]) -> list[Any]:
    """Tools as segments closed by cache_control breakpoints: the set of tools in each, then the marked tool."""
    segments: list[Any] = []
    current: dict[str, Any] = {}
    for tool in tools:
        name = tool.get("function", tool).get("name")
        if "cache_control" in tool:
            segments.append((current, tool_meaning(tool)))
            current = {}
        else:
            current[name] = tool_meaning(tool)
    segments.append((current, None))
    return segments


def text_block_meaning(block: Any) -> Any:
    if isinstance(block, dict) and block.get("type") == "text":
        return {**block, "text": prose(block["text"])}
    return block


def system_meaning(content: Any) -> Any:
    """A system prompt: a string or text blocks are prose; any other block is data."""
    if isinstance(content, str):
        return prose(content)
    if isinstance(content, list):
        return [text_block_meaning(block) for block in content]
    return content


def arguments_meaning(text: str) -> Any:
    try:
        return ("json", json.loads(text))
    except ValueError:
        return ("text", text)


def message_meaning(message: dict[str, Any]) -> Any:
    """A system prompt's content is prose; what the user, the model and tools wrote stays byte for byte."""
    out = dict(message)
    if "content" in out and out.get("role") in ("system", "developer"):
        out["content"] = system_meaning(out["content"])
    if "tool_calls" in out:
        out["tool_calls"] = [
            {**call, "function": {**call["function"], "arguments": arguments_meaning(call["function"]["arguments"])}}
            for call in out["tool_calls"]
        ]
    return out


def meaning(request: dict[str, Any]) -> Any:
    """What a request means under the reorderings and normalizations docs/canonicalization.md lists."""
    out = dict(request)
    out["messages"] = [message_meaning(message) for message in request["messages"]]
    if "tools" in out:
        out["tools"] = tools_meaning(out["tools"])
    if "system" in out:
        out["system"] = system_meaning(out["system"])
    if "response_format" in out:
        schema = out["response_format"]["json_schema"]["schema"]
        out["response_format"] = {
            **out["response_format"],
            "json_schema": {"name": "out", "schema": schema_meaning(schema)},
        }
    return out


@CASES
@given(requests)
def test_fixed_point(request: dict[str, Any]) -> None:
    once = canonicalize(request)
    assert canonical_json(canonicalize(once)) == canonical_json(once)


@CASES
@given(requests)
def test_canonical_json_of_a_built_request_is_its_sorted_json(request: dict[str, Any]) -> None:
    """The fast path for what canonicalize returned (tools' JSON kept, no null count) writes the same bytes as
    the general path, whose output is orjson's sorted dump; a second call reuses the kept tools."""
    out = canonicalize(request)
    expected = orjson.dumps(out, option=orjson.OPT_SORT_KEYS)
    assert canonical_json(out) == expected
    assert canonical_json(canonicalize(request)) == expected


@CASES
@given(requests)
def test_meaning_preserved(request: dict[str, Any]) -> None:
    out = json.loads(canonical_json(canonicalize(request)))
    assert meaning(out) == meaning(json.loads(json.dumps(request)))


@CASES
@given(requests, st.randoms(use_true_random=False))
def test_tool_and_key_order_do_not_matter(request: dict[str, Any], rng: random.Random) -> None:
    variant = shuffled(request, rng)
    tools = variant.get("tools", [])
    if not any("cache_control" in tool for tool in tools):
        rng.shuffle(tools)
    assert canonical_json(canonicalize(variant)) == canonical_json(canonicalize(request))


WORKER = """
import sys, json
from agentcache import canonical_json, canonicalize
for line in sys.stdin:
    sys.stdout.write(canonical_json(canonicalize(json.loads(line))).hex() + "\\n")
    sys.stdout.flush()
"""


@pytest.fixture(scope="module")
def workers() -> Iterator[list[subprocess.Popen[str]]]:
    """Two interpreters with different hash seeds, canonicalizing what they are sent."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        )
        for seed in ("1", "4242")
    ]
    yield procs
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


@CASES
@given(requests)
def test_same_bytes_in_every_process(workers: list[subprocess.Popen[str]], request: dict[str, Any]) -> None:
    here = canonical_json(canonicalize(request)).hex()
    line = json.dumps(request) + "\n"
    for proc in workers:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(line)
        proc.stdin.flush()
        assert proc.stdout.readline().strip() == here


@CASES
@given(st.lists(requests, min_size=1, max_size=3), st.randoms(use_true_random=False))
def test_memo_and_history_never_change_the_bytes(sequence: list[dict[str, Any]], rng: random.Random) -> None:
    """A canonicalizer that has seen other requests (earlier turns, retries, other conversations) gives the bytes
    a fresh one gives; so does one that keeps a history per thread, whichever thread a request names, written from
    what it was built from."""
    from agentcache import CanonicalPolicy
    from agentcache.canon.jsonvalue import sourced_json
    from agentcache.canon.request import TOOL_SET, Canonicalizer

    policy = CanonicalPolicy()
    warm = Canonicalizer(policy)
    threaded = Canonicalizer(policy)
    turns: list[dict[str, Any]] = []
    for index, request in enumerate(sequence):
        messages = request["messages"]
        later = sequence[(index + 1) % len(sequence)]["messages"]
        turns += [request, {**request, "messages": messages[: rng.randint(0, len(messages))]}]
        turns.append({**request, "messages": [*messages, *later]})
    for turn in turns:
        body = json.loads(json.dumps(turn))
        fresh = canonical_json(Canonicalizer(policy).canonicalize(body))
        assert canonical_json(warm.canonicalize(body)) == fresh
        tools_json = orjson.dumps(body["tools"]) if "tools" in body and rng.random() < 0.5 else None
        built, sources = threaded.build(body, tools_json, rng.choice(["a", "b"]))
        assert sourced_json(built, sources, TOOL_SET) == fresh
