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

USAGE = {"prompt_tokens": 21, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 16}}
COMPLETION = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "Ok"}}], "usage": USAGE}
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


def body(dialect: str, system: str) -> tuple[str, dict[str, Any]]:
    """(path, request) with ``system`` as the system prompt of the dialect."""
    question = {"role": "user", "content": "Summarise notes.txt."}
    if dialect == "openai":
        return "/v1/chat/completions", {"model": "tiny", "messages": [{"role": "system", "content": system}, question]}
    prompt: Any = system if dialect == "anthropic" else [{"type": "text", "text": system}]
    return "/v1/messages", {"model": "tiny", "max_tokens": 8, "system": prompt, "messages": [question]}


@pytest.mark.parametrize("dialect", ["openai", "anthropic", "anthropic-blocks"])
@pytest.mark.parametrize("edit", list(EDITS))
def test_a_redacted_trace_gives_the_cause_of_the_live_ledger(tmp_path: Path, dialect: str, edit: str) -> None:
    before, after, cause = EDITS[edit]
    kept, redacted = tmp_path / "kept.jsonl", tmp_path / "redacted.jsonl"
    transport = CacheAwareTransport(
        httpx.MockTransport(lambda request: httpx.Response(200, json=COMPLETION)),
        server="llama.cpp",
        canonicalize=False,  # the ledger diagnoses what was sent: the same bodies as the traces hold
        recorder=TraceRecorder(kept),
        listeners=[TraceRecorder(redacted, record_content=False)],
    )
    with httpx.Client(transport=transport, base_url="http://engine") as client:
        for system in (before, after):
            path, request = body(dialect, system)
            client.post(path, json=request)
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
