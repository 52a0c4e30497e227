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

# One alternation, longest forms first, so a timestamp is reported once and not also as the date inside it.
_VOLATILE = re.compile(
    "|".join(
        [
            # ISO 8601 / RFC 3339: 2026-11-30T02:21:52.123Z, 2026-11-30 02:21
            rf"(?P<timestamp>\b{_YMD}[T ](?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:[.,]\d{{1,9}})?)?{_ZONE}?(?!\d))",
            # RFC 2822 / HTTP: Mon, 30 Nov 2026 02:21:52 GMT
            rf"(?P<rfc_timestamp>\b{_WEEKDAY},?\s+\d{{1,2}}\s+{_MONTH}\s+\d{{4}}\s+{_HMS}(?:\s+(?:[+-]\d{{4}}|[A-Z]{{2,4}}))?)",
            # date(1): Mon Nov 30 02:21:52 UTC 2026
            rf"(?P<ctime>\b{_WEEKDAY}\s+{_MONTH}\s+\d{{1,2}}\s+{_HMS}(?:\s+[A-Z]{{2,4}})?\s+\d{{4}}\b)",
            r"(?P<uuid>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)",
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
        ]
    ),
    re.ASCII,
)

_KINDS = {"rfc_timestamp": "timestamp", "ctime": "timestamp"}


@dataclass(frozen=True)
class VolatileSpan:
    """One volatile value: its kind, and ``text[start:end]``."""

    kind: str
    """``timestamp``, ``date``, ``time``, ``uuid``, ``hex_id`` or ``epoch``."""
    start: int
    end: int
    text: str


def find_volatile(text: str) -> list[VolatileSpan]:
    """Every volatile value in ``text``, left to right, without overlaps.

    Every volatile form holds a digit and none spans a line, so only lines with a digit are searched: the full
    pattern is slow (many alternatives at every position), the digit scan is not.
    """
    spans = []
    for start, end in _digit_lines(text):
        for match in _VOLATILE.finditer(text, start, end):
            group = match.lastgroup
            assert group is not None
            spans.append(VolatileSpan(_KINDS.get(group, group), match.start(), match.end(), match.group()))
    return spans


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


def split_volatile_lines(text: str) -> tuple[str, str]:
    """Split ``text`` into (the lines without volatile values, the lines with them), each keeping its order.

    A line keeps its newline, so joining the two parts back line by line gives the original.
    """
    stable: list[str] = []
    volatile: list[str] = []
    position = 0
    for start, end in _digit_lines(text):
        if _VOLATILE.search(text, start, end):
            end = min(end + 1, len(text))  # with its newline
            stable.append(text[position:start])
            volatile.append(text[start:end])
            position = end
    stable.append(text[position:])
    return "".join(stable), "".join(volatile)
