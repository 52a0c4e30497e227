"""find_volatile: what it reports, with spans, and what it leaves alone."""

from __future__ import annotations

import itertools
import random
import re
import string

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import agentcache
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


# -- the id kinds of issue 18: each generated as its producer makes it, and its look-alikes -------------------------

_B62 = string.ascii_letters + string.digits
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_seeds = st.integers(0, 2**64)


def _random(seed: int, alphabet: str, size: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(alphabet) for _ in range(size))


def _kinds(text: str) -> list[tuple[str, str]]:
    return [(span.kind, span.text) for span in find_volatile(text)]


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("chatcmpl-AbCdEf1234567890XyZqRsTuVw", "provider_id"),
        ("req_011CV5jvmzxN4fh7gRXDpe2J", "provider_id"),
        ("msg_01XFDUDYJgAACzvnptvVoYEL", "provider_id"),
        ("toolu_01A09q90qw90lq917835lq9", "provider_id"),
        ("call_abc123XYZdef456", "provider_id"),
        ("resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b", "provider_id"),
        ("run_2xQfK8LmN0pR7sT4", "provider_id"),
        ("01ARZ3NDEKTSV4RRFFQ69G5FAV", "ulid"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt"),
        ("1541815603606036480", "snowflake"),
        ("350 ms ago", "relative_time"),
        ("2 hours ago", "relative_time"),
        ("uptime: 3h", "relative_time"),
        ("turn 4", "counter"),
        ("request #17", "counter"),
    ],
)
def test_reports_the_new_kinds(text: str, kind: str) -> None:
    assert _kinds(f"value: {text} end") == [(kind, text)]


@pytest.mark.parametrize(
    ("line", "kind", "value"),
    [
        ("session_id: V1StGXR8_Z5jdHi6B-myT", "nanoid", "V1StGXR8_Z5jdHi6B-myT"),
        ("ksuid=0ujsswThIGTUYm2K8FjOOfXtY1K", "ksuid", "0ujsswThIGTUYm2K8FjOOfXtY1K"),
        ('"cursor": "dGhpcyBpcyBhIGN1cnNvcjE2OA=="', "token", "dGhpcyBpcyBhIGN1cnNvcjE2OA=="),
        ("trace_id: 01ARZ3NDEKTSV4RRFFQ69G5FAV", "ulid", "01ARZ3NDEKTSV4RRFFQ69G5FAV"),
    ],
)
def test_reports_an_opaque_value_after_an_id_or_token_key(line: str, kind: str, value: str) -> None:
    assert _kinds(line) == [(kind, value)]


@pytest.mark.parametrize(
    "text",
    [
        "run_tests2 and call_function12 and req_handler_v2",  # identifiers in code with a provider prefix
        "getUserProfile2Settings base64EncodedSha256Hash Int32ArrayToFloat64Array",  # camelCase with digits
        "CONSTANT_NAME_WITH_26_CHARS ABCDEFGHJKMNPQRSTVWXYZ0123",  # base32-shaped, no time in this century
        "call +1 415 555 2671, or +14155552671, or 0044 20 7946 0958",  # phone numbers
        "numpy 1.26.4, node v20.11.1, build 1.2.3.4567890",  # versions
        "card 4111111111111111",  # 16 digits: shorter than a Snowflake
        "path_id: python3.11/site-packages/agentcache",  # a path after an id key
        "api_key_name: production_primary_key",  # words after a key name
        "Step 1: read the file. Python 3 and turnover 15",  # numbered steps are instructions, not counters
        "international characterizations",  # ordinary words of an id's length
        "[redacted 43 chars sha256:mfrggzdfmztwq2lk canonical:onswg4tfnrxw6ytb]",  # redaction markers (base32)
    ],
)
def test_new_kinds_leave_look_alikes_alone(text: str) -> None:
    assert _kinds(text) == []


def test_a_commit_sha_in_a_code_block_stays_with_its_code() -> None:
    """A SHA is a hex id wherever it is, but relocation keeps fenced code in place, so a pinned commit in an
    example does not move out of its block."""
    sha = "9fceb02d0ae598e95dc970b74767f19372d61af8"
    system = f"You are a reviewer.\nNow: 2026-11-30T10:00:00Z\n```sh\ngit checkout {sha}\n```"
    out = agentcache.canonicalize(
        {"messages": [{"role": "system", "content": system}, {"role": "user", "content": "hi"}]},
        agentcache.CanonicalPolicy(relocate_volatile=True),
    )
    assert sha in out["messages"][0]["content"]
    assert out["messages"][-1]["content"] == "Now: 2026-11-30T10:00:00Z"


@given(_seeds, st.sampled_from(["chatcmpl-", "req_011C", "msg_01", "toolu_01", "call_", "resp_", "run_"]))
def test_generated_provider_ids_are_found(seed: int, prefix: str) -> None:
    body = _random(seed, _B62, 24)
    assume(any(c.isdigit() for c in prefix + body))
    identifier = prefix + body
    assert _kinds(f"id {identifier}.") == [("provider_id", identifier)]


@given(st.integers(1_000_000_000_000, 4_102_444_799_999), _seeds)
def test_generated_ulids_are_found(ms: int, seed: int) -> None:
    time_part = "".join(_CROCKFORD[(ms >> shift) & 31] for shift in range(45, -5, -5))
    identifier = time_part + _random(seed, _CROCKFORD, 16)
    assert _kinds(f"id {identifier}") == [("ulid", identifier)]


# 41 bits of ms since the service's epoch (from 28 days on: 17 digits or more), 22 of machine and sequence.
@given(st.integers(2_400_000_000, 2**41 - 1), st.integers(0, 2**22 - 1))
def test_generated_snowflakes_are_found(ms: int, low: int) -> None:
    identifier = str((ms << 22) | low)
    assert _kinds(f"tweet {identifier}") == [("snowflake", identifier)]


@given(_seeds, st.sampled_from([("nanoid", _B62 + "_-", 21), ("ksuid", _B62, 27), ("token", _B62 + "+/", 40)]))
def test_generated_tokens_after_a_key_are_found(seed: int, shape: tuple[str, str, int]) -> None:
    kind, alphabet, size = shape
    value = _random(seed, alphabet, size)
    assume(any(c.isdigit() for c in value))  # every volatile kind holds a digit (the line scan's premise)
    # The guard reads a run whose digits all end its parts as a name (``getUser9``, ``python3/site``): 1 draw in 300
    assume(re.search(r"\d[A-Za-z]", value) is not None)
    found = _kinds(f"request_id: {value}")
    assert len(found) == 1 and found[0][1] == value
    assert found[0][0] in (kind, "hex_id", "uuid", "ulid", "provider_id")  # a random draw may be another kind


@given(
    st.lists(st.sampled_from(["get", "user", "Profile", "Http", "Request", "base", "Encoded", "v"]), min_size=3),
    st.integers(0, 999),
)
def test_identifiers_made_of_words_and_a_number_are_not_ids(words: list[str], number: int) -> None:
    name = "".join(words[:2]) + str(number) + "".join(words[2:])
    assert _kinds(f"def {name}(x): return x") == []


# A patch number from 1900 to 2100 after a day and a month ("1.1.1900") is a date as written: not drawn.
@given(st.integers(0, 99), st.integers(0, 99), st.integers(0, 1899) | st.integers(2101, 9999))
def test_version_numbers_are_not_ids(major: int, minor: int, patch: int) -> None:
    assert _kinds(f"requires python {major}.{minor}.{patch}") == []
