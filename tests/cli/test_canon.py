"""``agentcache canon`` as a user runs it: a real subprocess, files and stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from agentcache import canonical_json, canonicalize
from agentcache.transport.middleware import CacheMiddleware

EXAMPLE = Path(__file__).parents[2] / "examples" / "request.json"


def run(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "agentcache", *args], input=stdin, capture_output=True, timeout=60)


def test_prints_canonical_json_of_the_example() -> None:
    result = run("canon", str(EXAMPLE))
    assert result.returncode == 0, result.stderr
    expected = canonical_json(canonicalize(json.loads(EXAMPLE.read_bytes())))
    assert result.stdout == expected + b"\n"


def test_reads_stdin() -> None:
    result = run("canon", "-", stdin=b'{"messages": [], "tools": [{"name": "b"}, {"name": "a"}]}')
    assert result.returncode == 0
    assert result.stdout == b'{"messages":[],"tools":[{"name":"a"},{"name":"b"}]}\n'


@pytest.mark.parametrize(
    ("stdin", "reason"),
    [
        (b"{bad", "-:1:2: not JSON"),
        (b"[1, 2]", "$: the request is an array, not a JSON object"),
        (b'{"a": 1, "a": 2}', "$.a: the key 'a' appears twice in one object"),
        (b'{"messages": [], "t": NaN}', "-:1:23: not JSON"),  # NaN is no JSON number (RFC 8259)
        (b'{"messages": [], "tools": [{"name": "a"}, {"name": "a"}]}', "$.tools[1]: tool name 'a' is already used"),
        (b'{"messages": "x"}', "$.messages: expected an array of messages"),
        (b"\xff\xfe", "- is not UTF-8"),
    ],
)
def test_bad_input_exits_2_with_one_line(stdin: bytes, reason: str) -> None:
    result = run("canon", "-", stdin=stdin)
    assert result.returncode == 2
    assert result.stdout == b""
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agentcache canon: error: ")
    assert reason in lines[0]


@pytest.mark.parametrize(
    "body",
    [
        b'{"messages": [], "temperature":0,"temperature":2}',
        b'{"messages": [{"role": "user", "content": "a", "content": "b"}]}',
        b'{"messages":[],"seed":123456789012345678901234567890}',
        b'{"messages": [], "top_p": 0.1000000000000000000001}',
    ],
)
def test_a_body_the_transport_sends_as_it_came_is_refused_for_the_same_reason(body: bytes) -> None:
    """One reading of bytes everywhere: what the transport will not canonicalize, ``canon`` will not either."""
    call = CacheMiddleware(server="openai", telemetry=False).begin(
        httpx.Request("POST", "http://server/v1/chat/completions", content=body)
    )
    assert call.request.content == body and call.passthrough is not None
    result = run("canon", "-", stdin=body)
    assert result.returncode == 2 and result.stdout == b""
    reason = call.passthrough.removeprefix("not canonicalized: ")
    assert result.stderr.decode() == f"agentcache canon: error: {reason}\n"


def test_missing_file(tmp_path: Path) -> None:
    result = run("canon", str(tmp_path / "nope.json"))
    assert result.returncode == 2
    assert b"cannot read" in result.stderr and b"No such file" in result.stderr


def test_version_and_module_entry_point() -> None:
    from agentcache import __version__

    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.decode().strip() == f"agentcache {__version__}"


@pytest.mark.parametrize("body", ['{"foo": 1}', "[1, 2]", '{"messages": [], "tools": [1]}'])
def test_canon_refuses_what_is_not_a_chat_request_with_cli_advice(body: str) -> None:
    result = run("canon", "-", stdin=body.encode())
    assert result.returncode == 2
    assert result.stdout == b""
    assert "canonicalize(" not in result.stderr.decode() and "json.loads" not in result.stderr.decode()
    assert "send dicts" not in result.stderr.decode()
    assert "FILE" in result.stderr.decode() or "run again" in result.stderr.decode()
