"""Which session a request belongs to: the documented order of sources, first found wins."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from agentcache.drift.trace import DEFAULT_SESSION
from agentcache.httpx import SESSION_HEADER, CacheAwareTransport
from agentcache.transport import session_of

#: Every source, in precedence order: (where it is read, the session id put there).
SOURCES: list[tuple[str, str]] = [
    ("header", "from-header"),
    ("prompt_cache_key", "from-cache-key"),
    ("user", "from-user"),
    ("metadata.session_id", "from-session-id"),
    ("metadata.thread_id", "from-thread-id"),
    ("metadata.user_id", "from-user-id"),
]


def _request(sources: list[tuple[str, str]]) -> tuple[httpx.Headers, dict[str, Any]]:
    headers = httpx.Headers()
    body: dict[str, Any] = {"messages": [{"role": "user", "content": "Hi"}]}
    for where, value in sources:
        if where == "header":
            headers[SESSION_HEADER] = value
        elif where.startswith("metadata."):
            body.setdefault("metadata", {})[where.removeprefix("metadata.")] = value
        else:
            body[where] = value
    return headers, body


@pytest.mark.parametrize("first", range(len(SOURCES)), ids=[where for where, _ in SOURCES])
def test_first_present_source_wins(first: int) -> None:
    """With every source from ``first`` on present, the one at ``first`` decides."""
    headers, body = _request(SOURCES[first:])
    assert session_of(headers, body) == (SOURCES[first][1], SOURCES[first][0])


def test_no_source_gives_the_default_session() -> None:
    headers, body = _request([])
    assert session_of(headers, body) == (DEFAULT_SESSION, "default")


@pytest.mark.parametrize("empty", ["", None, 7, ["x"]], ids=["empty", "null", "number", "list"])
def test_empty_or_non_string_values_are_skipped(empty: Any) -> None:
    body = {"prompt_cache_key": empty, "user": empty, "metadata": {"session_id": empty, "thread_id": "t-1"}}
    assert session_of(httpx.Headers({SESSION_HEADER: ""}), body) == ("t-1", "metadata.thread_id")


def test_metadata_that_is_not_an_object_is_ignored() -> None:
    assert session_of(httpx.Headers(), {"metadata": "session-1"}) == (DEFAULT_SESSION, "default")


def test_header_lookup_ignores_case() -> None:
    headers = httpx.Headers({SESSION_HEADER.upper(): "s-1"})
    assert session_of(headers, {"user": "u-1"}) == ("s-1", "header")


def test_custom_header_name_replaces_the_default_one() -> None:
    headers = httpx.Headers({"X-Thread": "thread-9", SESSION_HEADER: "ignored"})
    assert session_of(headers, {"user": "u-1"}, "x-thread") == ("thread-9", "header")
    assert session_of(httpx.Headers({SESSION_HEADER: "ignored"}), {"user": "u-1"}, "x-thread") == ("u-1", "user")


def test_transport_numbers_turns_per_session_with_a_custom_header() -> None:
    """Through the transport: the configured header splits sessions, each numbered from 1."""
    body = json.dumps({"model": "tiny", "messages": [{"role": "user", "content": "Hi"}]}).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, headers={"content-type": "application/json"}, stream=httpx.ByteStream(b"{}"))

    transport = CacheAwareTransport(httpx.MockTransport(handler), server="llama.cpp", session_header="x-thread")
    sent = ["a", "b", "a", None, "a"]
    with httpx.Client(transport=transport) as client:
        for thread in sent:
            headers = {} if thread is None else {"x-thread": thread}
            client.post("http://engine/v1/chat/completions", content=body, headers=headers)
    got = [(t.session, t.turn, t.session_source) for t in transport.ledger.turns()]
    expected = sorted(
        (thread or DEFAULT_SESSION, sent[: i + 1].count(thread), "default" if thread is None else "header")
        for i, thread in enumerate(sent)
    )
    assert got == expected
