"""``check_parse``: a body's orjson parse is refused exactly when it dropped a repeated key or holds a number
other than the text's."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings

from agentcache.canon.lossless import check_parse
from agentcache.errors import DuplicateKeyError, InexactNumberError, NestingTooDeepError
from tests.transport.test_lossless import bodies, exact


def as_written(raw: bytes) -> Any:
    """Every key and every exact number of a JSON text, repeats included."""
    return json.loads(raw, object_pairs_hook=list, parse_float=exact, parse_int=exact)


@settings(max_examples=500, deadline=None)
@given(bodies())
def test_refused_exactly_when_the_parse_lost_something(body: bytes) -> None:
    """The oracle compares the text with orjson's writing of its parse, whatever the layout: the fast comparison
    of SDK-style bodies and the counts and hooks of the others must both agree with it."""
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return  # past a double's range: not parsed, so sent as it came
    if as_written(orjson.dumps(parsed)) != as_written(body):
        with pytest.raises((DuplicateKeyError, InexactNumberError)):
            check_parse(body, parsed)
    else:
        check_parse(body, parsed)


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"temperature": 0, "temperature": 2}', "$.temperature"),
        ('{"messages": [{"role": "user", "content": "a", "content": "b"}]}', "$.messages[0].content"),
        ('{"m": {"a b": 1, "a b": 1}}', '$.m["a b"]'),  # equal copies: still two keys where a parser reads one
        ('{"s": "x\\u003ay", "k": 1, "k": 2}', "$.k"),  # an escaped colon in the text
        ('{"x": 0.1000000000000000000001, "x": 1}', "$.x"),  # the first loss in the text is named
    ],
)
def test_a_repeated_key_is_refused_with_its_path(text: str, path: str) -> None:
    compact, loose = text.replace(": ", ":").replace(", ", ","), text.replace(": ", " :\n\t ")
    for raw in (text.encode(), compact.encode(), loose.encode()):
        with pytest.raises((DuplicateKeyError, InexactNumberError)) as refused:
            check_parse(raw, orjson.loads(raw))
        assert refused.value.path == path
    assert isinstance(refused.value, InexactNumberError if "0.1" in text else DuplicateKeyError)


@pytest.mark.parametrize(
    ("text", "path", "written"),
    [
        ('{"seed": 123456789012345678901234567890}', "$.seed", "1.2345678901234568e+29"),
        ('{"a": [1, {"b c": 18446744073709551616}]}', '$.a[1]["b c"]', "1.8446744073709552e+19"),
        ('{"n": -9223372036854775809}', "$.n", "-9.223372036854776e+18"),
        ('{"x": 0.1000000000000000000001}', "$.x", "0.1"),
        ('{"x": 9007199254740993.0}', "$.x", "9007199254740992.0"),
        ('{"x": 1e-400}', "$.x", "0.0"),
        ('{"x": 2.5e-324}', "$.x", "5e-324"),
        ('{"x": -0}', "$.x", "0"),
    ],
)
def test_the_refusal_names_the_number_its_path_and_what_it_would_become(text: str, path: str, written: str) -> None:
    compact, loose = text.replace(": ", ":").replace(", ", ","), text.replace(": ", " :\n\t ").replace("[", "[ ")
    for raw in (text.encode(), compact.encode(), loose.encode()):
        with pytest.raises(InexactNumberError) as refused:
            check_parse(raw, orjson.loads(raw))
        assert refused.value.path == path
        assert f"would reach the server as {written};" in str(refused.value)


@pytest.mark.parametrize(
    "text",
    ['{"a":0.1,"b":100.0,"c":-0.0,"d":18446744073709551615,"e":-9223372036854775808}', '{"a": 1E2, "b": 0.10}'],
)
def test_numbers_that_survive_pass(text: str) -> None:
    check_parse(text.encode(), orjson.loads(text))


def test_a_long_number_is_shortened_in_the_message() -> None:
    text = '{"n": 0.' + "7" * 500 + "}"
    with pytest.raises(InexactNumberError, match=r"0\.7{22}\.\.\.7{8} \(502 characters\)"):
        check_parse(text.encode(), orjson.loads(text))


def test_nesting_orjson_reads_but_cannot_write_is_refused() -> None:
    text = "[" * 300 + "]" * 300
    with pytest.raises(NestingTooDeepError):
        check_parse(text.encode(), orjson.loads(text))
