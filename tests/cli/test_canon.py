"""``agentcache canon`` as a user runs it: a real subprocess, files and stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agentcache import canonical_json, canonicalize

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
        (b'{"a": 1, "a": 2}', "key 'a' appears twice"),
        (b'{"messages": [], "t": NaN}', "$.t: nan is not a JSON number"),
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


def test_missing_file(tmp_path: Path) -> None:
    result = run("canon", str(tmp_path / "nope.json"))
    assert result.returncode == 2
    assert b"cannot read" in result.stderr and b"No such file" in result.stderr


def test_version_and_module_entry_point() -> None:
    from agentcache import __version__

    result = run("--version")
    assert result.returncode == 0
    assert result.stdout.decode().strip() == f"agentcache {__version__}"
