"""Volatile values: text that changes from turn to turn (clocks, ids) and so breaks every prefix after it."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MONTH = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_WEEKDAY = r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)(?:day|sday|nesday|rsday|urday)?"
_YMD = r"(?:19|20)\d\d-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
_HMS = r"(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d"
_ZONE = r"(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d|\s?(?:UTC|GMT|[A-Z]{2,4}T))"

#: Prefixes of the ids providers and agent frameworks give requests, responses, runs, messages and calls:
#: ``chatcmpl-…`` (OpenAI), ``req_011C…``, ``msg_01…``, ``toolu_01…`` (Anthropic), ``resp_``, ``call_``, ``run_``…
_PROVIDER = (
    r"chatcmpl|cmpl|req|request|msg|msgbatch|run|resp|response|call|fc|rs|toolu|srvtoolu|thread|step|batch|evt|"
    r"trace|span|sess|session|gen|compl|completion|job|task|exec|invocation|conv|conversation"
)
#: Key names after which an opaque run of characters is a token or an id: a nanoid or a base64 token has no mark of
#: its own, and a camelCase identifier with a digit has the same letters.
_LABEL = (
    r"(?:[A-Za-z][\w-]*?)?"
    r"(?:id|ids|ID|Id|token|Token|TOKEN|key|Key|nonce|Nonce|cursor|Cursor|etag|ETag|sig|signature)"
)
_TOKEN_CHARS = r"A-Za-z0-9+/_-"

# One alternation, longest forms first, so a timestamp is reported once and not also as the date inside it. A
# match is then checked by its kind's guard (:data:`_GUARDS`); a match that fails it is searched again from its
# next character, so a date inside a rejected run is still found.
_VOLATILE = re.compile(
    "|".join(
        [
            # ISO 8601 / RFC 3339: 2026-11-30T02:21:52.123Z, 2026-11-30 02:21
            rf"(?P<timestamp>\b{_YMD}[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d{{1,9}})?)?{_ZONE}?(?!\d))",
            # RFC 2822 / HTTP: Mon, 30 Nov 2026 02:21:52 GMT
            rf"(?P<rfc_timestamp>\b{_WEEKDAY},?\s+\d{{1,2}}\s+{_MONTH}\s+\d{{4}}\s+{_HMS}(?:\s+(?:[+-]\d{{4}}|[A-Z]{{2,4}}))?)",
            # date(1): Mon Nov 30 02:21:52 UTC 2026
            rf"(?P<ctime>\b{_WEEKDAY}\s+{_MONTH}\s+\d{{1,2}}\s+{_HMS}(?:\s+[A-Z]{{2,4}})?\s+\d{{4}}\b)",
            # JWT: base64url of '{"' twice (header, payload), then the signature (empty for alg "none").
            r"(?P<jwt>(?<![\w-])eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]*(?![\w.-]))",
            rf"(?P<provider_id>\b(?:{_PROVIDER})[-_][A-Za-z0-9]{{8,}}(?:-[A-Za-z0-9]+)*(?![\w-]))",
            r"(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)",
            # Crockford base32, 26 characters; the first 10 are the time in ms, which the guard checks.
            r"(?P<ulid>\b[0-7](?:[0-9A-HJKMNP-TV-Z]{25}|[0-9a-hjkmnp-tv-z]{25})\b)",
            rf"(?P<date>\b{_YMD}\b"
            rf"|\b(?:{_WEEKDAY},?\s+)?{_MONTH}\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"
            rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?,?\s+\d{{4}}\b"
            r"|\b(?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01])/(?:19|20)\d\d\b"
            r"|\b(?:0?[1-9]|[12]\d|3[01])[./](?:0?[1-9]|1[0-2])[./](?:19|20)\d\d\b)",
            rf"(?P<time>\b{_HMS}(?:[.,]\d{{1,9}})?\b)",
            # 16+ hex digits mixing letters and digits: request ids, trace ids, commit hashes.
            r"(?P<hex_id>\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{16,}\b"
            r"|\b(?=[0-9A-F]*[A-F])(?=[0-9A-F]*\d)[0-9A-F]{16,}\b)",
            # Unix time in s or ms, 2001-09-09 .. 2033-05-18 (leading 1), optionally fractional.
            r"(?P<epoch>(?<![\d.])1\d{9}(?:\d{3})?(?:\.\d+)?(?![\d.]))",
            # Snowflake (Twitter, Discord, Instagram): a 64-bit integer of 17-19 digits, longer than any phone
            # number (E.164: 15) or card number (16).
            r"(?P<snowflake>(?<![\d.+-])\d{17,19}(?![\d.]))",
            # A key that names an id or a token, then an opaque run: "session_id: V1StGXR8_Z5jdHi6B-myT".
            rf"(?P<labelled>\b{_LABEL}[\"']?\s*[:=]\s*[\"']?(?P<token>[{_TOKEN_CHARS}]{{16,}}={{0,2}})(?![={_TOKEN_CHARS}]))",
            r"(?P<relative_time>\b\d+(?:\.\d+)?\s?(?:ns|us|\u00b5s|ms|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?"
            r"|d|days?|w|weeks?)\s+ago\b|(?i:\b(?:uptime|elapsed)\b)\s*[:=]?\s*\d+(?:\.\d+)?\s?(?:ms|s|m|h|d)\b)",
            r"(?P<counter>(?i:\b(?:turn|iteration|attempt|retry|tick|seq|sequence|counter)\b)\s*(?:#|no\.)?\s*[:=]?\s*\d+\b"
            r"|(?i:\b(?:request|message|call|run)\b)\s*(?:#|no\.|number)\s*\d+\b)",
        ]
    ),
    re.ASCII,
)

_KINDS = {"rfc_timestamp": "timestamp", "ctime": "timestamp"}
_BASE32 = {c: i for i, c in enumerate("0123456789ABCDEFGHJKMNPQRSTVWXYZ")}
#: 2001-09-09 .. 2100-01-01 in ms: the ULIDs made in this century (01… to 04…), not base32-shaped words.
_ULID_MS = (1_000_000_000_000, 4_102_444_800_000)


@dataclass(frozen=True)
class VolatileSpan:
    """One volatile value: its kind, and ``text[start:end]``."""

    kind: str
    """One of the kinds docs/canonicalization.md lists: ``timestamp``, ``date``, ``time``, ``uuid``, ``hex_id``,
    ``epoch``, ``provider_id``, ``ulid``, ``ksuid``, ``nanoid``, ``snowflake``, ``jwt``, ``token``,
    ``relative_time`` or ``counter``."""
    start: int
    end: int
    text: str


def find_volatile(text: str) -> list[VolatileSpan]:
    """Every volatile value in ``text``, left to right, without overlaps.

    Every volatile form holds a digit and none spans a line, so only lines with a digit are searched: the full
    pattern is slow (many alternatives at every position), the digit scan is not.
    """
    return [span for start, end in _digit_lines(text) for span in _spans(text, start, end)]


def _spans(text: str, start: int, end: int) -> list[VolatileSpan]:
    """The volatile values of ``text[start:end]`` that pass their kind's guard."""
    spans = []
    position = start
    while (match := _VOLATILE.search(text, position, end)) is not None:
        span = _checked(match)
        if span is None:
            position = match.start() + 1
            continue
        spans.append(span)
        position = match.end()
    return spans


def _checked(match: re.Match[str]) -> VolatileSpan | None:
    group = match.lastgroup
    assert group is not None
    if group == "labelled":
        value = match.group("token")
        kind = _token_kind(value)
        return None if kind is None else VolatileSpan(kind, match.start("token"), match.end("token"), value)
    value = match.group()
    guard = _GUARDS.get(group)
    if guard is not None and not guard(value):
        return None
    return VolatileSpan(_KINDS.get(group, group), match.start(), match.end(), value)


def _provider_id(value: str) -> bool:
    """The part after the prefix looks generated: a digit, and either both letter cases or three digits, so that
    ``call_function12`` or ``run_tests2`` in code is not taken for an id."""
    body = re.split(r"[-_]", value, maxsplit=1)[1]
    digits = sum(c.isdigit() for c in body)
    mixed = any(c.isupper() for c in body) and any(c.islower() for c in body)
    return len(body) >= 10 and digits >= 1 and (mixed or digits >= 3)


def _ulid(value: str) -> bool:
    """The leading 10 characters are a time in this century, in ms."""
    ms = 0
    for char in value[:10].upper():
        ms = ms * 32 + _BASE32[char]
    return _ULID_MS[0] <= ms < _ULID_MS[1]


def _snowflake(value: str) -> bool:
    """A 63-bit integer (the sign bit is never set)."""
    return int(value) < 2**63


def _token_kind(value: str) -> str | None:
    """The kind of the opaque value after an id or token key, or None for a word, a path or a name.

    A value of a self-describing kind (a UUID, a ULID...) is named by it. Any other must hold a digit and a letter
    and not read as words and numbers joined by separators (``python3/site-packages``): a nanoid (21 characters
    of ``A-Za-z0-9_-``), a KSUID (27 of base62) or a token.
    """
    spans = _spans(value, 0, len(value))
    if len(spans) == 1 and spans[0].text == value:
        return spans[0].kind
    if not (re.search(r"\d", value) and re.search(r"[A-Za-z]", value)) or _PATH.fullmatch(value):
        return None
    if len(value) == 21 and re.fullmatch(r"[\w-]+", value):
        return "nanoid"
    if len(value) == 27 and value.isalnum():
        return "ksuid"
    return "token"


#: Words and numbers joined by separators: a path or a name, not a token (``python3/site-packages/pkg_v2``).
_PATH = re.compile(r"(?:[A-Za-z]*[a-z]{3,}[A-Za-z]*\d*|\d+)(?:[/_.-](?:[A-Za-z]*[a-z]{3,}[A-Za-z]*\d*|\d+))*")

_GUARDS = {"provider_id": _provider_id, "ulid": _ulid, "snowflake": _snowflake}


def _digit_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line of ``text`` that holds an ASCII digit.

    ``str.find`` per digit is memchr-fast where a regex class scan is not (about 80x here); each digit's next
    position only moves forward, so the whole scan stays linear.
    """
    length = len(text)
    following = [_found(text.find(digit), length) for digit in "0123456789"]
    lines = []
    while (first := min(following)) < length:
        start = text.rfind("\n", 0, first) + 1
        end = _found(text.find("\n", first), length)
        lines.append((start, end))
        following = [_found(text.find(str(d), end), length) if at < end else at for d, at in enumerate(following)]
    return lines


def _found(index: int, length: int) -> int:
    return length if index < 0 else index


def volatile_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line of ``text`` holding a volatile value; ``end`` is past its newline, if it has one."""
    return [(start, min(end + 1, len(text))) for start, end in _digit_lines(text) if _spans(text, start, end)]


def split_volatile_lines(text: str) -> tuple[str, str]:
    """Split ``text`` into (the lines without volatile values, the lines with them), each keeping its order.

    A line keeps its newline, so joining the two parts back line by line gives the original.
    """
    stable: list[str] = []
    volatile: list[str] = []
    position = 0
    for start, end in volatile_lines(text):
        stable.append(text[position:start])
        volatile.append(text[start:end])
        position = end
    stable.append(text[position:])
    return "".join(stable), "".join(volatile)
