"""Deterministic, realistic agent requests for the benchmarks: many tools with rich schemas, long histories."""

from __future__ import annotations

import random
from typing import Any

_NOUNS = [
    "file",
    "branch",
    "issue",
    "ticket",
    "table",
    "record",
    "bucket",
    "queue",
    "job",
    "image",
    "user",
    "invoice",
    "calendar event",
    "repository",
    "deployment",
    "secret",
    "dataset",
    "notebook",
    "alert",
]
_VERBS = ["create", "read", "update", "delete", "list", "search", "archive", "restore", "sync", "export"]
_FIELD_WORDS = [
    "path",
    "name",
    "limit",
    "offset",
    "query",
    "owner",
    "labels",
    "timeout",
    "format",
    "region",
    "priority",
    "status",
    "tags",
    "filters",
    "recursive",
    "dry_run",
    "encoding",
    "since",
    "until",
    "sort_by",
    "page_token",
    "fields",
    "author",
    "comment",
    "metadata",
    "retries",
    "verbose",
]
_SENTENCE = (
    "The {w} controls how the {n} is {v}d; values outside the documented range are rejected by the "
    "server, so validate them before calling, and prefer the defaults unless the user asked otherwise."
)


def _property(rng: random.Random, noun: str, verb: str, depth: int) -> dict[str, Any]:
    word = rng.choice(_FIELD_WORDS)
    kind = rng.choice(
        ["string", "integer", "boolean", "array", "object", "enum"]
        if depth < 2
        else ["string", "integer", "boolean", "enum"]
    )
    prop: dict[str, Any] = {"description": _SENTENCE.format(w=word, n=noun, v=verb)}
    if kind == "enum":
        prop.update(
            type="string",
            enum=rng.sample(["asc", "desc", "json", "yaml", "csv", "low", "high", "open", "closed", "all"], 4),
        )
    elif kind == "array":
        prop.update(type="array", items={"type": "string", "description": f"One {word} entry."}, maxItems=50)
    elif kind == "object":
        fields = {f"{rng.choice(_FIELD_WORDS)}_{i}": _property(rng, noun, verb, depth + 1) for i in range(4)}
        prop.update(type="object", properties=fields, required=sorted(fields)[:2], additionalProperties=False)
    elif kind == "integer":
        prop.update(type="integer", minimum=0, maximum=rng.choice([100, 1000, 86400]), default=rng.randint(0, 9))
    else:
        prop["type"] = kind
    return prop


def tools(count: int = 50, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` OpenAI-style function tools, about 450 o200k tokens each."""
    rng = random.Random(seed)
    out = []
    for index in range(count):
        noun, verb = _NOUNS[index % len(_NOUNS)], _VERBS[index % len(_VERBS)]
        props = {f"{rng.choice(_FIELD_WORDS)}_{i}": _property(rng, noun, verb, 0) for i in range(4)}
        out.append(
            {
                "type": "function",
                "function": {
                    "name": f"{verb}_{noun.replace(' ', '_')}_{index}",
                    "description": f"{verb.capitalize()} a {noun} in the workspace. Use it when the user asks to "
                    f"{verb} a {noun}; it returns the {noun} as JSON, or an error object explaining "
                    "what went wrong and how to fix the arguments.",
                    "parameters": {"type": "object", "properties": props, "required": sorted(props)[:3]},
                },
            }
        )
    return out


def messages(count: int = 40, seed: int = 11) -> list[dict[str, Any]]:
    """A system prompt, then user / assistant tool call / tool result turns; about 150 tokens each."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful coding agent. " * 20}]
    while len(out) < count:
        turn = len(out)
        out.append(
            {
                "role": "user",
                "content": f"Step {turn}: please look at module_{rng.randint(0, 99)}.py "
                "and tell me what the failing test needs. " * 4,
            }
        )
        call_id = f"call_{turn:04d}"
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": "read_file_0",
                            "arguments": f'{{"path": "src/module_{turn}.py", "limit": 200}}',
                        },
                    }
                ],
            }
        )
        out.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": "\n".join(f"{i:4d}  def f_{i}(x):  return x * {i}" for i in range(20)),
            }
        )
    return out[:count]


def request(tool_count: int = 50, message_count: int = 40) -> dict[str, Any]:
    return {
        "model": "agent-model",
        "temperature": 0.2,
        "tools": tools(tool_count),
        "messages": messages(message_count),
        "tool_choice": "auto",
        "parallel_tool_calls": True,
    }
