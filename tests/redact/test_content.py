"""A trace recorded without content (``record_content=False``) still gives the drift causes the live ledger gives.

The ledger diagnoses the real text; ``explain`` on a redacted trace sees only the markers. The markers carry what
the diagnosis needs: a digest of the text, of its canonical form (whitespace), and for a system prompt a digest
per piece of each line, a piece being a volatile value (named by its kind), a number or the text between them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcache import find_volatile
from agentcache.drift import explain, read_trace
from agentcache.httpx import CacheAwareTransport, TraceRecorder
from tests.conftest import EngineInfo

STEADY = "You are a careful coding agent.\nRead files before you edit them.\n"

EDITS = {
    "word": ("Be concise.", "Be brief.", "system_edited"),
    "same length": ("Be concise.", "Be precise.", "system_edited"),
    "second line": (STEADY + "Be concise.", STEADY + "Be brief.", "system_edited"),
    "after a value": ("At 10:00:00 be concise.", "At 10:00:00 be brief.", "system_edited"),
    "timestamp": ("Now: 2026-01-05T10:00:00Z\nBe concise.", "Now: 2026-01-05T10:05:00Z\nBe concise.",
                  "volatile_value"),
    "uuid": (STEADY + "Request 123e4567-e89b-12d3-a456-426614174000.",
             STEADY + "Request 123e4567-e89b-12d3-a456-426614174001.", "volatile_value"),
    "counter": ("Turn 43 of the task. Be concise.", "Turn 41 of the task. Be concise.", "volatile_value"),
    "whitespace": (STEADY + "Be concise.", STEADY.replace("\n", "\r\n") + "Be concise.", "whitespace"),
}


def body(dialect: str, system: str, model: str = "tiny") -> tuple[str, dict[str, Any]]:
    """(path, request) with ``system`` as the system prompt of the dialect."""
    question = {"role": "user", "content": "Summarise notes.txt."}
    if dialect == "openai":
        messages = [{"role": "system", "content": system}, question]
        return "/v1/chat/completions", {"model": model, "max_tokens": 2, "messages": messages}
    prompt: Any = system if dialect == "anthropic" else [{"type": "text", "text": system}]
    return "/v1/messages", {"model": model, "max_tokens": 2, "system": prompt, "messages": [question]}


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "anthropic-blocks"])
@pytest.mark.parametrize("edit", list(EDITS))
def test_a_redacted_trace_gives_the_cause_of_the_live_ledger(
    llama_server: EngineInfo, tmp_path: Path, dialect: str, edit: str
) -> None:
    """Both dialects go to llama-server (chat completions and its Anthropic Messages endpoint)."""
    before, after, cause = EDITS[edit]
    kept, redacted = tmp_path / "kept.jsonl", tmp_path / "redacted.jsonl"
    transport = CacheAwareTransport(
        server="llama.cpp",
        canonicalize=False,  # the ledger diagnoses what was sent: the same bodies as the traces hold
        recorder=TraceRecorder(kept),
        listeners=[TraceRecorder(redacted, record_content=False)],
    )
    with httpx.Client(transport=transport, base_url=llama_server.url, timeout=120) as client:
        for system in (before, after):
            path, request = body(dialect, system, llama_server.model)
            assert client.post(path, json=request).status_code == 200
    assert before not in redacted.read_text(encoding="utf-8")
    causes = {
        "live": transport.ledger.turns()[1].cause,
        "kept": explain(read_trace(kept))[1].cause,
        "redacted": explain(read_trace(redacted))[1].cause,
    }
    assert causes == {"live": cause, "kept": cause, "redacted": cause}


def test_a_marker_holds_no_volatile_value(tmp_path: Path) -> None:
    """The what-if of ``explain`` relocates volatile lines: a marker must not look like one (a hex digest does)."""
    path = tmp_path / "t.jsonl"
    recorder = TraceRecorder(path, record_content=False)
    for system, _, _ in EDITS.values():
        recorder.write("s", body("openai", system)[1], None, 1.0)
    markers = [json.loads(line)["request"]["messages"][0]["content"] for line in path.read_text().splitlines()]
    assert all(marker.startswith("[redacted ") for marker in markers)
    assert [span for marker in markers for span in find_volatile(marker)] == []


def test_an_older_marker_without_pieces_is_an_edit_not_a_counter() -> None:
    """Traces written before markers had pieces: their length and hex digest are not a counter or an id."""
    old, new = "[redacted 43 chars sha256:0123456789abcdef]", "[redacted 41 chars sha256:fedcba9876543210]"
    reports = explain([body("openai", old)[1], body("openai", new)[1]])
    assert (reports[1].cause, reports[1].detail) == ("system_edited", "system prompt text changed (redacted)")
