"""Every error agentcache raises, in one place.

Each message says what was wrong, where (a JSON path such as ``$.tools[3].function.name`` when the input is a
request), and what to do about it. All inherit from :class:`AgentCacheError`, so one ``except`` catches them;
input errors also inherit from :class:`ValueError` for code that already catches that.
"""

from __future__ import annotations

__all__ = [
    "AgentCacheError",
    "BackendError",
    "BodyTooLargeError",
    "CacheModelError",
    "CycleError",
    "DuplicateKeyError",
    "DuplicateToolError",
    "EventsError",
    "InexactNumberError",
    "InputError",
    "InvalidValueError",
    "NestingTooDeepError",
    "NotAMappingError",
    "PolicyError",
    "RequestError",
    "RequestShapeError",
    "TokenizerError",
    "UnknownModelWarning",
]


class AgentCacheError(Exception):
    """Base class of every agentcache error."""


class RequestError(AgentCacheError, ValueError):
    """A request body agentcache cannot canonicalize. ``path`` locates the offending value."""

    def __init__(self, path: str, problem: str, hint: str) -> None:
        self.path = path
        self.problem = problem
        self.hint = hint
        super().__init__(f"{path}: {problem}; {hint}")


class NotAMappingError(RequestError):
    """The request (or a part that must be a JSON object) is not a mapping."""


class RequestShapeError(RequestError):
    """A field has the wrong JSON type for its place (``tools`` must be an array of objects, for example)."""


class InvalidValueError(RequestError):
    """A value that is not JSON: a set, bytes, datetime, NaN/Infinity, a non-string key, a lone surrogate."""


class InexactNumberError(RequestError):
    """A number in a request body's text that parsing and re-serializing would turn into another number: an
    integer beyond 64 bits, more digits than a double holds, an exponent beyond a double's range, or ``-0``."""


class DuplicateKeyError(RequestError):
    """A key repeated in one object of a request body's text: a parse keeps one copy and drops the others."""


class CycleError(RequestError):
    """A container contains itself, so the request has no JSON form."""


class NestingTooDeepError(RequestError):
    """Nesting deeper than the policy's ``max_depth``."""


class BodyTooLargeError(RequestError):
    """The request is larger than the policy's ``max_body_bytes``."""


class DuplicateToolError(RequestError):
    """Two tools share a name, so sorting them by name would not be deterministic and the server would reject it."""


class PolicyError(AgentCacheError, ValueError):
    """A CanonicalPolicy field is out of range."""


class InputError(AgentCacheError, ValueError):
    """A file or stream the CLI was given cannot be read or parsed."""


class TokenizerError(AgentCacheError, ValueError):
    """A tokenizer cannot be loaded (unknown name, a vocabulary whose checksum does not match, a missing extra)
    or cannot do what was asked (decode an id outside its vocabulary, index a position outside the text)."""


class CacheModelError(AgentCacheError, ValueError):
    """A client-side cache model was used in a way its server never allows (e.g. unlocking an unlocked node)."""


class EventsError(AgentCacheError):
    """A server's KV cache event stream cannot be read: the ``events`` extra (pyzmq, msgpack) is missing, or a
    message is not a KV event batch."""


class UnknownModelWarning(UserWarning):
    """A hosted model with no documented caching rule: agentcache predicts it with its provider's most conservative
    rule (agentcache.cache.rules.CONSERVATIVE)."""


class BackendError(AgentCacheError):
    """A server answered a backend call with something other than what the call needs: an HTTP error status, a
    body that is not the expected JSON, or a stream cut before its end. ``status`` is the HTTP status if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)
