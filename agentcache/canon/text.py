"""Prose normalization: the bytes of natural-language text that carry no meaning for the model."""

from __future__ import annotations

import unicodedata

from agentcache.canon.policy import CanonicalPolicy


def normalize_prose(text: str, policy: CanonicalPolicy) -> str:
    """Line endings to LF, Unicode to NFC and, when asked, trailing spaces off each line.

    Returns ``text`` itself when nothing changes, so unchanged requests allocate nothing. Only prose goes
    through here; identifiers, enum values and tool-call argument values never do, since changing them
    changes what a program receives.
    """
    if policy.normalize_newlines and "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if policy.normalize_unicode and not text.isascii() and not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
    if policy.strip_trailing_whitespace and (" \n" in text or "\t\n" in text or text.endswith((" ", "\t"))):
        text = "\n".join(line.rstrip(" \t") for line in text.split("\n"))
    return text
