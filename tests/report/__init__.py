"""Traces the report tests share: the demo's coding-agent session with drift, the same session without, and a
session whose every name and text is an attempt at HTML injection."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentcache import get_tokenizer
from agentcache.demo.scenario import session
from agentcache.drift import TraceRecord
from agentcache.drift.trace import write_trace

PAYLOAD = "</script><img src=x onerror=\"document.title='pwned'\"><b>bold</b>"
"""Closes a script, opens an image whose error handler would run, and opens a tag: none of it may take effect."""
HOSTILE = f"evil{PAYLOAD}"


def _tool(name: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"path": {"type": "string", "description": PAYLOAD}}}
    return {"type": "function", "function": {"name": name, "description": PAYLOAD, "parameters": schema}}


def hostile_requests() -> list[dict[str, Any]]:
    """Three turns whose causes quote the trace: a tool named with the payload is added, then the model (named
    with it too) changes."""
    first = {
        "model": f"model{PAYLOAD}",
        "tools": [_tool("read_file")],
        "messages": [{"role": "system", "content": f"System {PAYLOAD}"}, {"role": "user", "content": PAYLOAD}],
    }
    second = {**first, "tools": [_tool("read_file"), _tool(f"tool{PAYLOAD}")]}
    third = {
        **second,
        "model": f"other{PAYLOAD}",
        "messages": [*second["messages"], {"role": "assistant", "content": PAYLOAD}],
    }
    return [first, second, third]


def write_demo_trace(path: Path, turns: int = 6, usage: bool = True) -> Path:
    """The drifting demo session (``agent``; with usage: a server figure per turn), the same session without drift
    (``steady``, no usage) and the hostile session, interleaved as concurrent agents would be."""
    tokenizer = get_tokenizer("o200k_base")
    drifting = session(tokenizer, turns, drift=True)
    steady = session(tokenizer, turns - 2, drift=False)
    records: list[TraceRecord] = []
    for index, request in enumerate(drifting):
        served = {"prompt_tokens": 9000 + 500 * index, "prompt_tokens_details": {"cached_tokens": 700 * index}}
        records.append(TraceRecord(0, "agent", request, served if usage else None, 1000.0 + 30 * index))
        if index < len(steady):
            records.append(TraceRecord(0, "steady", steady[index], None, 1001.0 + 30 * index))
    records += [
        TraceRecord(0, HOSTILE, request, None, 2000.0 + index) for index, request in enumerate(hostile_requests())
    ]
    write_trace(path, records)
    return path
