"""What canonicalization may change. The defaults never change a request's meaning; opt-ins say what they trade."""

from __future__ import annotations

from dataclasses import dataclass

from agentcache.errors import PolicyError

#: orjson refuses deeper nesting; keep a margin for the containers agentcache itself adds.
HARD_MAX_DEPTH = 250


@dataclass(frozen=True)
class CanonicalPolicy:
    """Switches for :func:`agentcache.canonicalize`.

    Every switch that is on by default is meaning-preserving (see docs/canonicalization.md for why each is safe).
    ``strip_trailing_whitespace``, ``normalize_whitespace`` and ``relocate_volatile`` are off by default: the first
    two edit prose, the last changes the request's layout.
    """

    sort_tools: bool = True
    """Sort ``tools`` / ``functions`` by name. Tools carrying ``cache_control`` keep their index."""
    sort_unordered_arrays: bool = True
    """Sort the JSON-Schema arrays whose order carries no meaning (``required``, array-valued ``type``, ...)."""
    canonical_tool_arguments: bool = True
    """Re-serialize tool-call ``arguments`` strings canonically when they parse as JSON."""
    normalize_newlines: bool = True
    """CRLF and lone CR become LF in prose: the system prompt and descriptions, outside fenced code blocks."""
    normalize_unicode: bool = True
    """Prose (as for ``normalize_newlines``) is put in Unicode NFC."""
    strip_trailing_whitespace: bool = False
    """Remove spaces and tabs at the end of each prose line."""
    normalize_whitespace: bool = False
    """Trailing spaces and tabs off each prose line, and each run of blank lines cut to one: prose only (the system
    prompt and descriptions, outside fenced code), never what the user, the model or a tool wrote."""
    relocate_volatile: bool = False
    """Move system-prompt lines holding timestamps, dates, UUIDs, ids into a trailing message."""
    volatile_role: str = "system"
    """Role of that trailing message in OpenAI-style bodies (Anthropic bodies always use ``user``)."""
    max_depth: int = 128
    """Deepest nesting accepted; deeper input raises NestingTooDeepError instead of exhausting the stack."""
    max_body_bytes: int = 32 * 1024 * 1024
    """Largest body accepted, measured as its compact JSON size."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_depth <= HARD_MAX_DEPTH:
            raise PolicyError(f"max_depth must be between 1 and {HARD_MAX_DEPTH}, got {self.max_depth}")
        if self.volatile_role not in ("system", "developer", "user"):
            raise PolicyError(
                f"volatile_role must be 'system', 'developer' or 'user', got {self.volatile_role!r}: "
                "an assistant message would be read as a prefill to continue"
            )
        if self.max_body_bytes < 1:
            raise PolicyError(f"max_body_bytes must be positive, got {self.max_body_bytes}")
