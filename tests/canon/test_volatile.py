"""find_volatile: what it reports, with spans, and what it leaves alone."""

from __future__ import annotations

import itertools

import pytest

from agentcache import find_volatile
from agentcache.canon.volatile import split_volatile_lines


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("2026-11-30T02:21:52Z", "timestamp"),
        ("2026-11-30T02:21:52.123456+01:00", "timestamp"),
        ("2026-11-30 02:21", "timestamp"),
        ("Mon, 30 Nov 2026 02:21:52 GMT", "timestamp"),
        ("Mon Nov 30 02:21:52 UTC 2026", "timestamp"),
        ("2026-11-30", "date"),
        ("November 30, 2026", "date"),
        ("Monday, November 30, 2026", "date"),
        ("30 Nov 2026", "date"),
        ("11/30/2026", "date"),
        ("30.11.2026", "date"),
        ("02:21:52", "time"),
        ("550e8400-e29b-41d4-a716-446655440000", "uuid"),
        ("9fceb02d0ae598e95dc970b74767f19372d61af8", "hex_id"),
        ("DEADBEEF00112233", "hex_id"),
        ("1764469312", "epoch"),
        ("1764469312123", "epoch"),
        ("1764469312.5", "epoch"),
    ],
)
def test_reports_each_kind_with_its_span(text: str, kind: str) -> None:
    line = f"value: {text} end"
    spans = find_volatile(line)
    assert [(s.kind, s.text) for s in spans] == [(kind, text)]
    assert line[spans[0].start : spans[0].end] == text


@pytest.mark.parametrize(
    "text",
    [
        "version 1.2.3 of the tool",
        "call 555-1234 or 12345",
        "deadbeefdeadbeef",  # letters only: a word, not an id
        "1234567890123456",  # digits only: a number, not a hex id
        "99999999999",  # 11 digits: not a Unix time
        "port 8080, limit 1000",
        "2026-13-45",  # no such month
    ],
)
def test_leaves_stable_text_alone(text: str) -> None:
    assert find_volatile(text) == []


def test_spans_are_ordered_and_do_not_overlap() -> None:
    text = "at 2026-11-30T02:21:52Z (2026-11-30) id 550e8400-e29b-41d4-a716-446655440000 t=1764469312"
    spans = find_volatile(text)
    assert [s.kind for s in spans] == ["timestamp", "date", "uuid", "epoch"]
    assert all(a.end <= b.start for a, b in itertools.pairwise(spans))


def test_split_volatile_lines_round_trips() -> None:
    text = "a\nnow 2026-11-30\nb\nid 550e8400-e29b-41d4-a716-446655440000"
    stable, volatile = split_volatile_lines(text)
    assert stable == "a\nb\n"
    assert volatile == "now 2026-11-30\nid 550e8400-e29b-41d4-a716-446655440000"
