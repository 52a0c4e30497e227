"""Never alter meaning (issue 14): what the transport sends says what the agent's body said, or is that body.

Generated bodies go through a real ``CacheAwareTransport`` in front of an ``httpx.MockTransport`` that keeps the
bytes it receives (the mock stands in for the network). A body the transport refuses must arrive byte-identical;
a body it canonicalizes must arrive holding every value as written: no key repeated in the body (a parse would
drop a copy), and every number of the same kind (integer or not) and the same exact decimal value, sign of zero
included.
"""

from __future__ import annotations

import contextlib
import json
from decimal import Decimal
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache.httpx import CacheAwareTransport, Turn

COMPLETION = json.dumps(
    {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 1},
    }
).encode()


class Wire:
    """A transport in front of a mock server that keeps every body it receives."""

    def __init__(self) -> None:
        self.received: list[bytes] = []
        self.transport = CacheAwareTransport(httpx.MockTransport(self._answer), server="openai", telemetry=False)
        self.client = httpx.Client(transport=self.transport)

    def _answer(self, request: httpx.Request) -> httpx.Response:
        self.received.append(request.content)
        return httpx.Response(200, content=COMPLETION, headers={"content-type": "application/json"})

    def send(self, body: bytes, path: str = "/v1/chat/completions") -> tuple[bytes, Turn]:
        self.client.post(f"http://server{path}", content=body, headers={"content-type": "application/json"})
        return self.received[-1], self.transport.ledger.turns()[-1]


WIRE = Wire()


class Token(str):
    """JSON text placed in a body as it is written (a number, a string with an escape), by :func:`dump`."""


class Repeat(list[Any]):
    """The values of a key that :func:`dump` writes once for each of them, in one object."""


def dump(value: Any, spaced: bool) -> str:
    """JSON text of ``value`` with each :class:`Token` written as it is and each :class:`Repeat` key repeated."""
    comma, colon = (", ", ": ") if spaced else (",", ":")
    if isinstance(value, Token):
        return str(value)
    if isinstance(value, dict):
        pairs = [(k, item) for k, v in value.items() for item in (v if isinstance(v, Repeat) else [v])]
        return "{" + comma.join(json.dumps(k) + colon + dump(v, spaced) for k, v in pairs) + "}"
    if isinstance(value, list):
        return "[" + comma.join(dump(item, spaced) for item in value) + "]"
    return json.dumps(value)


def exact(token: str) -> tuple[str, Decimal, bool]:
    """A number as its kind, its exact value and the sign of its zero."""
    value = Decimal(token)
    return ("int" if not any(mark in token for mark in ".eE") else "float", value, value.is_signed())


def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [key for key, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a repeated key: {keys}")
    return dict(pairs)


def meaning(raw: bytes | str) -> Any:
    """A body's JSON value with exact numbers, tool-call arguments that parse as JSON read the same way. A
    repeated key raises ValueError: a body sent canonicalized must have none."""
    value = json.loads(raw, object_pairs_hook=unique, parse_float=exact, parse_int=exact)
    for message in value.get("messages", []):
        for call in message.get("tool_calls", []):
            with contextlib.suppress(ValueError):  # arguments that are not JSON are compared as text
                call["function"]["arguments"] = meaning(call["function"]["arguments"])
    return value


#: Number tokens: any integer, decimals with up to 25 digits on each side of the point, exponents up to 3 digits,
#: the shortest form of any double, and the edges.
EDGES = ["-0", "-0.0", "0e0", "1E2", "0.10", "1e-400", "2.5e-324", "5e-324", "1e400", "18446744073709551615"]
numbers = (
    st.integers(-(2**70), 2**70).map(str)
    | st.sampled_from([*EDGES, "18446744073709551616", "-9223372036854775808", "-9223372036854775809"])
    | st.from_regex(r"-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,25})?([eE][-+]?[0-9]{1,3})?", fullmatch=True)
    | st.floats(allow_nan=False, allow_infinity=False).map(repr)
).map(Token)


def copies(values: st.SearchStrategy[Any], repeat: bool) -> st.SearchStrategy[Any]:
    """A key's value, or with ``repeat`` up to three, written as that many copies of the key."""
    return st.lists(values, min_size=1, max_size=3 if repeat else 1).map(
        lambda found: found[0] if len(found) == 1 else Repeat(found)
    )


#: Strings, one of them with an escaped colon (a colon the text does not write as a colon).
texts = st.sampled_from(["hi", "a: b", "x,y"]).map(json.dumps).map(Token) | st.just(Token('"re\\u003aply"'))


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    """A chat request with numbers where requests hold them (parameters, unknown fields, schemas, messages,
    tool-call arguments), and keys that may be repeated at each of those levels."""
    repeat = draw(st.booleans())
    n = lambda: draw(copies(numbers, repeat))  # noqa: E731
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": draw(copies(texts, repeat))}]}
    slots = draw(st.sets(st.sampled_from(["params", "metadata", "tools", "format", "message", "arguments", "input"])))
    if "params" in slots:
        body.update(seed=n(), temperature=n())
    if "metadata" in slots:
        body["metadata"] = {"k": [n(), {"d": n()}]}
    if "tools" in slots:
        number = {"type": draw(copies(st.just("number"), repeat)), "default": n(), "maximum": n()}
        body["tools"] = [{"type": "function", "function": {"name": "f", "parameters": {"properties": {"x": number}}}}]
    if "format" in slots:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "o", "schema": {"minimum": n()}}}
    if "message" in slots:
        body["messages"].append({"role": draw(copies(st.just("user"), repeat)), "content": draw(texts), "weight": n()})
    if "arguments" in slots:
        arguments = dump({"n": n(), "list": [n()]}, draw(st.booleans()))
        call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
        body["messages"].append({"role": "assistant", "content": None, "tool_calls": [call]})
    if "input" in slots:
        use = {"type": "tool_use", "id": "t", "name": "f", "input": {"n": n()}}
        body["messages"].append({"role": "assistant", "content": [use]})
    return dump(body, draw(st.booleans())).encode()


@settings(max_examples=400, deadline=None)
@given(bodies())
def test_a_refused_body_arrives_byte_identical_and_a_sent_one_keeps_every_value(body: bytes) -> None:
    received, turn = WIRE.send(body)
    if turn.passthrough is not None:
        assert received == body, turn.passthrough
    else:
        assert meaning(received) == meaning(body)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            b'{"messages": [], "seed": 123456789012345678901234567890}',
            "$.seed: the number 123456789012345678901234567890 would reach the server as 1.2345678901234568e+29; "
            "send it as a string, or write a number that a 64-bit integer or a double holds exactly",
        ),
        (
            b'{"messages": [], "temperature":0,"temperature":2}',
            "$.temperature: the key 'temperature' appears twice in one object; keep one copy: which one a server "
            "reads is up to its JSON parser",
        ),
    ],
)
def test_a_body_its_parse_would_change_is_sent_as_written(body: bytes, reason: str) -> None:
    received, turn = WIRE.send(body)
    assert received == body
    assert turn.passthrough == f"not canonicalized: {reason}"


@pytest.mark.parametrize(
    "body",
    [
        b'{"messages": [], "metadata": {"pin_password": 123456789012345678901234567890}}',
        b'{"messages": [], "metadata": {"api key": [0.1000000000000000001]}}',
        b'{"messages": [], "metadata": {"secret_token": 1, "secret_token": 2}}',
    ],
)
def test_a_refusal_names_the_place_of_a_credential_not_its_value(body: bytes) -> None:
    """The reason reaches the ledger export, the trace and the span, which never hold a credential."""
    received, turn = WIRE.send(body)
    assert received == body
    assert turn.passthrough is not None and "[redacted credential]" in turn.passthrough
    for secret in ("123456789", "0.1000000000000000001", "1.2345678901234568e+29"):
        assert secret not in turn.passthrough


def test_numbers_a_double_holds_are_canonicalized() -> None:
    """``1E2`` is 100 and ``0.10`` is 0.1: rewritten, they are the same numbers, so the body is not refused."""
    body = b'{"messages": [], "temperature": 0.10, "top_p": 1E0, "n": 18446744073709551615, "x": -0.0}'
    received, turn = WIRE.send(body)
    assert turn.passthrough is None
    assert received == b'{"messages":[],"n":18446744073709551615,"temperature":0.1,"top_p":1.0,"x":-0.0}'
