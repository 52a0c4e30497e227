"""Prose normalization: the bytes of natural-language text that carry no meaning for the model.

Only the prose the agent builds itself goes through here: the system prompt and the descriptions of its tools,
where drift comes from (a template written on Windows, a description pasted in another Unicode form). Fenced
code blocks (``` or ~~~) inside them are kept byte for byte: in code, ``'A\\u030a' == '\\u212b'`` is false and
``cafe\\u0301.txt`` names another file than ``caf\\u00e9.txt``, and a CR may be part of a literal.
"""

from __future__ import annotations

import re
import unicodedata

from agentcache.canon.policy import CanonicalPolicy

#: A line with its line break (CRLF, CR or LF), or the last line without one.
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")
#: Two or more blank lines (already stripped of trailing blanks): one is kept.
_BLANK_LINES = re.compile(r"\n{3,}")
#: An opening code fence (CommonMark): three or more backticks or tildes, then the info string.
_OPENING = re.compile(r"[ \t]*(`{3,}|~{3,})(.*)")


def normalize_prose(text: str, policy: CanonicalPolicy) -> str:
    """Line endings to LF, Unicode to NFC and, when asked, trailing spaces off each line and blank-line runs cut to
    one, outside fenced code.

    Returns ``text`` itself when nothing changes, so unchanged requests allocate nothing. Only prose the agent
    writes itself comes here; what the user, the model and tools wrote, identifiers, enum values and tool-call
    arguments never do, since changing them changes what the model or a program receives.
    """
    out = _normalize(text, policy)
    if out is text or not may_hold_fences(text):
        return out
    return "".join(part if code else _normalize(part, policy) for part, code in fenced_parts(text, policy))


def may_hold_fences(text: str) -> bool:
    """Whether ``text`` may hold a code fence, so that :func:`fenced_parts` is worth running: three backticks or
    tildes, or a Greek varia (U+1FEF), which is a backtick once in NFC."""
    return "```" in text or "~~~" in text or "\u1fef" in text


def _normalize(text: str, policy: CanonicalPolicy) -> str:
    if policy.normalize_newlines and "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if policy.normalize_unicode and not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    strip = policy.strip_trailing_whitespace or policy.normalize_whitespace
    if strip and (" \n" in text or "\t\n" in text or text.endswith((" ", "\t"))):
        text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))
    if policy.normalize_whitespace and "\n\n\n" in text:
        text = _BLANK_LINES.sub("\n\n", text)
    return text


def fenced_parts(text: str, policy: CanonicalPolicy) -> list[tuple[str, bool]]:
    """``text`` cut at whole lines into (part, is fenced code), in order; joined, the parts are ``text``.

    A block runs from its opening fence line through the closing fence line (the same character, at least as many)
    or, unclosed, to the end. A line is read as a fence as it reads once normalized: NFC turns a Greek varia
    (U+1FEF) into a backtick, and a prose line that became a fence would otherwise pair with a later fence and
    turn that block's code into prose on the next pass.
    """
    parts: list[tuple[str, bool]] = []
    start = 0
    fence = ""
    for match in _LINE.finditer(text):
        line = match.group().rstrip("\r\n")
        if policy.normalize_unicode and not line.isascii():
            line = unicodedata.normalize("NFC", line)
        if not fence:
            opening = _OPENING.fullmatch(line)
            if opening is not None and not (opening.group(1)[0] == "`" and "`" in opening.group(2)):
                parts.append((text[start : match.start()], False))
                start, fence = match.start(), opening.group(1)
        else:
            closing = line.strip(" \t")
            if len(closing) >= len(fence) and closing == fence[0] * len(closing):
                parts.append((text[start : match.end()], True))
                start, fence = match.end(), ""
    parts.append((text[start:], bool(fence)))
    return [(part, code) for part, code in parts if part]


def drop_lines(text: str, cuts: list[tuple[int, int]]) -> str:
    """``text`` without its whole lines ``cuts`` (sorted (start, end) ranges, each past its newline or at the end),
    laid out as if they had never been written, so that the result does not depend on where they stood.

    Blank lines among cut lines go with them. At the start or the end of ``text``, the blank lines that separated
    the cut lines from the rest go too, and the text keeps its own leading and trailing newlines; between two kept
    lines, the wider of the two separators around the cut stays. So "D\\n\\nA\\n\\nB", "A\\n\\nD\\n\\nB" and
    "A\\n\\nB\\n\\nD" all give "A\\n\\nB".
    """
    lines = text.split("\n")
    ends = [len(line) + 1 for line in lines]
    ends[-1] -= 1
    cut: list[bool] = []
    at = 0
    ranges = iter(cuts)
    current = next(ranges, None)
    for length in ends:
        while current is not None and current[1] <= at:
            current = next(ranges, None)
        cut.append(current is not None and current[0] <= at < current[1])
        at += length
    kept: list[str] = []
    index = 0
    while index < len(lines):
        if not cut[index]:
            kept.append(lines[index])
            index += 1
            continue
        last = index
        while index < len(lines) and (cut[index] or not lines[index].strip()):
            last = index if cut[index] else last
            index += 1
        index = last + 1
        before: list[str] = []
        while kept and not kept[-1].strip():
            before.append(kept.pop())
        after: list[str] = []
        while index < len(lines) and not lines[index].strip():
            after.append(lines[index])
            index += 1
        if kept and index < len(lines):
            kept.extend(before[::-1] if len(before) >= len(after) else after)
    body = "\n".join(kept).strip("\n")
    return text[: len(text) - len(text.lstrip("\n"))] + body + text[len(text.rstrip("\n")) :]
