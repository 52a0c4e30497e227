"""Credentials out of everything agentcache writes: traces, ledger exports, spans, explanations and reports.

One function, :func:`redact`, decides for all of them, so a rule fixed here is fixed everywhere:

- a **field** whose name is credential-shaped (``api_key``, ``apiKey``, ``x-api-key``, ``Authorization``,
  ``password``, ``client_secret``, ``access_token``, ``cookie``, ...) has its value replaced by
  :data:`CREDENTIAL`, at any depth, in any case and spelling (snake, camel, kebab). Only a value that can hold
  a secret is replaced: a string, or a number under a password-like name. A name whose last word is ``token``
  names a credential; ``tokens`` (``max_tokens``, ``prompt_tokens``, ``cached_tokens``) counts them, and a
  number under ``*_token`` is a token index, so neither is touched. An object under such a name is walked,
  not replaced: in a tool's JSON schema, ``"password": {"type": "string"}`` describes a parameter.
- a **value** shaped like a credential (``sk-...``, ``Bearer ...``, ``xoxb-...``, AWS access key ids, JWTs,
  GitHub, Google and Hugging Face tokens, private key blocks, the password of a URL, a key or token in a URL's
  query) is replaced, inside any string, by ``[redacted <what>]``. Whatever is under the ``content`` keys the
  caller names is exempt from this scan, never from the field rule: that is the conversation a trace recorded
  with ``record_content=True`` keeps on purpose. A tool call's ``arguments`` string is JSON fields, so its
  credential-shaped fields are replaced even there (the string is then written again, compact).
"""

from __future__ import annotations

import functools
import re
from typing import Any, overload

import orjson

CREDENTIAL = "[redacted credential]"
"""What a credential-shaped field's value becomes."""

_SECRET_WORDS = frozenset(
    {"password", "passwd", "passphrase", "secret", "secrets", "credential", "credentials", "authorization",
     "auth", "cookie", "cookies", "apikey", "bearer"}
)
"""A field name holding one of these words names a credential, wherever the word stands."""
_KEY_OWNERS = frozenset(
    {"api", "access", "secret", "private", "client", "auth", "signing", "subscription", "master", "encryption",
     "license"}
)
"""Words that make a name ending in ``key`` a credential (``api_key``, not ``prompt_cache_key``)."""
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
"""The words of a name: ``XApiKey``, ``x-api-key`` and ``X_API_KEY`` are all ``x api key``."""

_VALUES = re.compile(
    "|".join(
        [
            r"(?P<bearer>\b[Bb]earer\s+(?=[\w.~+/-]*\d)[\w.~+/-]{12,}=*)",
            r"(?P<api_key>\b(?:sk|rk)[-_](?=[\w-]*\d)[\w-]{16,})",
            r"(?P<slack>\bxox[abposr]-[A-Za-z0-9-]{10,})",
            r"(?P<aws>\b(?:AKIA|ASIA)[A-Z0-9]{16}\b)",
            r"(?P<jwt>\beyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]*)",
            r"(?P<github>\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}))",
            r"(?P<google>\bAIza[\w-]{35})",
            r"(?P<hugging_face>\bhf_[A-Za-z0-9]{30,})",
            r"(?P<private_key>-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z))",
            # These two keep what they matched before the value (no look-behind: it would cost every position).
            r"://(?P<url_password>[^\s/?#@:]+:[^\s/?#@]+(?=@))",
            r"[?&](?P<url_query>(?i:api[-_]?key|key|(?:access[-_]?)?token|secret|password|auth|sig|signature)"
            r"=[^\s&#\"'<>]+)",
        ]
    )
)
_ANCHORS = (
    "bearer", "sk-", "sk_", "rk-", "rk_", "xox", "akia", "asia", "eyj", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
    "github_pat_", "aiza", "hf_", "private key", "://", "key=", "token=", "secret=", "password=", "auth=", "sig=",
    "signature=",
)
"""A lowercase text that holds none of these holds no match of ``_VALUES``: ``str.find`` rules out most texts at
C speed, where the pattern costs every alternative at every position (about 20 times slower)."""
_LABELS = {
    "bearer": "bearer token",
    "api_key": "API key",
    "slack": "Slack token",
    "aws": "AWS access key id",
    "jwt": "JWT",
    "github": "GitHub token",
    "google": "Google API key",
    "hugging_face": "Hugging Face token",
    "private_key": "private key",
    "url_password": "URL credentials",
}


@overload
def redact(value: str, content: frozenset[str] = ...) -> str: ...
@overload
def redact(value: Any, content: frozenset[str] = ...) -> Any: ...
def redact(value: Any, content: frozenset[str] = frozenset()) -> Any:
    """``value`` (a string or any JSON value) without credentials, as the module says. Everything under a key in
    ``content`` is kept verbatim but for its credential-shaped fields. Returns new containers; ``value`` is not
    changed."""
    return _walk(value, None, content, scan=True)


def _walk(value: Any, key: str | None, content: frozenset[str], scan: bool) -> Any:
    """``scan``: whether strings here are searched for credential-shaped values (not inside ``content``)."""
    scan = scan and key not in content
    if isinstance(value, str):
        if key is not None and _names_credential(key):
            return CREDENTIAL
        if key == "arguments":
            return _arguments(value, content, scan)
        return _scrub(value) if scan else value
    if isinstance(value, dict):
        return {k: _walk(v, k if isinstance(k, str) else None, content, scan) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_walk(v, key, content, scan) for v in value]
    # A Fragment is a number kept as written (a trace's record of a body whose parse would change it).
    if isinstance(value, (int, float, orjson.Fragment)) and not isinstance(value, bool) and key is not None:
        return CREDENTIAL if _names_credential(key) and _words(key)[-1] != "token" else value
    return value


def _arguments(text: str, content: frozenset[str], scan: bool) -> str:
    """A tool call's arguments: its credential-shaped fields replaced; kept byte for byte when nothing is."""
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return _scrub(text) if scan else text
    redacted = _walk(parsed, None, content, scan)
    return text if redacted == parsed else orjson.dumps(redacted).decode()


def overlaps_credential(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` overlaps a credential-shaped value of ``text``: quoting that slice (a changed
    value in a drift cause's detail) would show part of the credential, which :func:`redact` of the slice alone
    no longer recognises."""
    return _anchored(text) and any(m.start() < end and start < m.end() for m in _VALUES.finditer(text))


def _anchored(text: str) -> bool:
    lowered = text.lower()
    return any(anchor in lowered for anchor in _ANCHORS)


def _scrub(text: str) -> str:
    """``text`` with each credential-shaped value replaced by a marker naming what it was."""
    return _VALUES.sub(_marker, text) if _anchored(text) else text


def _marker(match: re.Match[str]) -> str:
    group = match.lastgroup
    assert group is not None  # every alternative is a named group
    before = match.string[match.start() : match.start(group)]
    if group == "url_query":  # keep the parameter's name: it says what was there
        name = match.group(group).partition("=")[0]
        return f"{before}{name}=[redacted URL {name}]"
    return f"{before}[redacted {_LABELS[group]}]"


@functools.lru_cache(maxsize=4096)
def _words(name: str) -> tuple[str, ...]:
    return tuple(word.lower() for word in _WORD.findall(name))


@functools.lru_cache(maxsize=4096)
def _names_credential(name: str) -> bool:
    """Whether a field name is credential-shaped (see the module docstring)."""
    words = _words(name)
    if not words:
        return False
    if any(word in _SECRET_WORDS for word in words):
        return True
    last = words[-1]
    return last == "token" or (last == "key" and len(words) > 1 and words[-2] in _KEY_OWNERS)
