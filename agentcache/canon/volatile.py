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
    )
)

_LINE = re.compile(r"[^\n]*\n|[^\n]+")
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
    """Every volatile value in ``text``, left to right, without overlaps."""
    spans = []
    for match in _VOLATILE.finditer(text):
        group = match.lastgroup
        assert group is not None
        spans.append(VolatileSpan(_KINDS.get(group, group), match.start(), match.end(), match.group()))
    return spans


def split_volatile_lines(text: str) -> tuple[str, str]:
    """Split ``text`` into (the lines without volatile values, the lines with them), each keeping its order.

    A line keeps its newline, so joining the two parts back line by line gives the original.
    """
    stable: list[str] = []
    volatile: list[str] = []
    for line in _LINE.findall(text):
        (volatile if _VOLATILE.search(line) else stable).append(line)
    return "".join(stable), "".join(volatile)
