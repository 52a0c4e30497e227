"""SGLang's native API (``/generate`` and friends), where the radix cache can be primed, salted and flushed.

Measured on SGLang 0.5.23 (``--enable-cache-report``, page size 1), and tested in tests/backends/test_sglang.py:

- sending the same prompt of n tokens again reports ``cached_tokens == n - 1``: the last prompt token is always
  computed again, because its logits give the first output token;
- :meth:`SGLangProtocol.prime` (``max_new_tokens=0``, which SGLang accepts) caches the whole prefix: a following
  request for prefix + more reports ``cached_tokens == len(prefix)``;
- ``cache_salt`` (and ``extra_key``) split the cache: the same prompt under another salt reports 0 cached.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from agentcache.backends.call import (
    DEFAULT_TIMEOUT,
    AsyncClientBase,
    Call,
    Protocol,
    SyncClientBase,
    async_op,
    is_token_ids,
    json_object,
    no_content,
    sync_op,
    unexpected,
)
from agentcache.errors import InputError
from agentcache.usage import CacheUsage

FLUSH_WAIT = 60.0
"""How long a flush lets the server finish the requests it still runs (:meth:`SGLangProtocol.flush_cache`)."""


@dataclass(frozen=True)
class Generation:
    """One ``/generate`` answer, with the cache counts read out of ``meta_info``."""

    text: str
    output_ids: list[int]
    """Generated token ids; empty for a :meth:`~SGLangClient.prime` or a server that did not return them."""
    prompt_tokens: int
    cached_tokens: int | None
    """Prompt tokens served from the radix cache; None when the server runs without ``--enable-cache-report``."""
    finish_reason: str | None
    """``meta_info.finish_reason.type``: ``"length"``, ``"stop"``, ``"abort"``."""
    meta_info: dict[str, Any]
    usage: CacheUsage
    token_logprobs: list[dict[int, float]] = field(default_factory=list)
    """Per output token, the log-probability of each id asked for with ``token_ids_logprob``, whether or not it was
    the one sampled (``-inf`` where SGLang wrote null); empty when none were asked for."""


class SGLangProtocol(Protocol):
    """The requests of SGLang's native endpoints and how their answers are read."""

    def __init__(self, http: httpx.Client | httpx.AsyncClient, model: str | None) -> None:
        super().__init__(http)
        self.model = model

    def generate(
        self,
        text: str | None = None,
        input_ids: Sequence[int] | None = None,
        sampling_params: Mapping[str, Any] | None = None,
        *,
        cache_salt: str | None = None,
        extra_key: str | None = None,
        priority: int | None = None,
        token_ids_logprob: Sequence[int] | None = None,
    ) -> Call[Generation]:
        """Run ``/generate`` on exactly one of ``text`` or ``input_ids``.

        ``cache_salt`` and ``extra_key`` are part of the radix cache key, so prompts under different values never
        share cached tokens (use one salt per tenant). ``priority`` only matters on a server started with
        ``--enable-priority-scheduling``. ``token_ids_logprob`` asks for the log-probability of those ids at every
        output position (``Generation.token_logprobs``); it costs no cached tokens, because SGLang computes only the
        output positions' logprobs then.
        """
        if (text is None) == (input_ids is None):
            given = "both" if text is not None else "neither"
            raise InputError(f"generate() takes exactly one of text or input_ids, got {given}; pass one of them")
        body: dict[str, Any] = {"text": text} if text is not None else {"input_ids": list(input_ids or ())}
        body["sampling_params"] = dict(sampling_params or {})
        options = {"cache_salt": cache_salt, "extra_key": extra_key, "priority": priority}
        body.update({key: value for key, value in options.items() if value is not None})
        if token_ids_logprob is not None:
            ids = list(token_ids_logprob)
            if not ids or not is_token_ids(ids):
                raise InputError(f"token_ids_logprob must be a non-empty list of token ids, got {ids!r}")
            body.update(return_logprob=True, token_ids_logprob=ids)
        return Call(self.request("POST", "/generate", body), _generation)

    def prime(
        self, prefix: str | Sequence[int], *, cache_salt: str | None = None, extra_key: str | None = None
    ) -> Call[Generation]:
        """Put ``prefix`` (text or token ids) into the radix cache without decoding a token.

        A following request whose prompt starts with the prefix's tokens then reports the whole prefix as cached.
        A text prefix is tokenized on its own, so pass token ids when the continuation could merge with its last
        token (``"ab"`` + ``"c"`` may tokenize differently from ``"ab"``).
        """
        text, input_ids = (prefix, None) if isinstance(prefix, str) else (None, prefix)
        return self.generate(text, input_ids, {"max_new_tokens": 0}, cache_salt=cache_salt, extra_key=extra_key)

    def flush_cache(self, wait: float = FLUSH_WAIT) -> Call[None]:
        """Empty the radix cache as soon as the server is idle, waiting up to ``wait`` seconds. SGLang refuses a
        flush while requests run (HTTP 400, raised as BackendError), and a request still runs for a moment after
        its answer came back, so a flush right after an answer can be refused; given a timeout, SGLang defers the
        flush until it is idle. ``wait=0`` asks once."""
        return Call(self.request("POST", f"/flush_cache?timeout={wait:g}"), no_content)

    def server_info(self) -> Call[dict[str, Any]]:
        """The server's arguments and state (``/get_server_info``): ``version``, ``enable_cache_report``,
        ``page_size`` and the rest."""
        return Call(self.request("GET", "/get_server_info"), json_object)

    def tokenize(self, text: str, *, add_special_tokens: bool = False) -> Call[list[int]]:
        """The server's own token ids for ``text`` (``/v1/tokenize``), the ids its cache is keyed on.

        The default matches how SGLang tokenizes a rendered chat prompt: special tokens written in the text become
        their ids, none are added around it. SGLang 0.5.23 serves the one loaded model whatever ``model`` says, so
        the client sends its ``model`` only when it was given one.
        """
        body: dict[str, Any] = {"prompt": text, "add_special_tokens": add_special_tokens}
        if self.model is not None:
            body["model"] = self.model
        return Call(self.request("POST", "/v1/tokenize", body), _tokens)


def _generation(response: httpx.Response) -> Generation:
    body = json_object(response)
    meta = body.get("meta_info")
    text = body.get("text")
    output_ids = body.get("output_ids", [])
    usage = CacheUsage.from_response(body)
    if not isinstance(meta, dict) or not isinstance(text, str) or usage is None or usage.prompt_tokens is None:
        raise unexpected(response, "a body without text and meta_info.prompt_tokens")
    if not is_token_ids(output_ids):
        raise unexpected(response, "output_ids that are not a list of token ids")
    finish = meta.get("finish_reason")
    reason = finish.get("type") if isinstance(finish, dict) else finish
    return Generation(
        text=text,
        output_ids=output_ids,
        prompt_tokens=usage.prompt_tokens,
        cached_tokens=usage.cached_tokens,
        finish_reason=reason if isinstance(reason, str) else None,
        meta_info=meta,
        usage=usage,
        token_logprobs=_token_logprobs(response, meta.get("output_token_ids_logprobs")),
    )


def _token_logprobs(response: httpx.Response, positions: Any) -> list[dict[int, float]]:
    """``meta_info.output_token_ids_logprobs``: per output position, ``[logprob, token id, text]`` per id asked for.

    SGLang writes a position it has no values for as null, and orjson writes a ``-inf`` logprob as null: the first
    reads as no ids, the second as ``-inf``."""
    if positions is None:
        return []
    out: list[dict[int, float]] = []
    for position in positions if isinstance(positions, list) else [False]:
        if position is None:
            out.append({})
            continue
        if not isinstance(position, list) or not all(map(_is_logprob_entry, position)):
            raise unexpected(response, "output_token_ids_logprobs that are not lists of [logprob, token id, text]")
        out.append({entry[1]: -math.inf if entry[0] is None else float(entry[0]) for entry in position})
    return out


def _is_logprob_entry(entry: Any) -> bool:
    if not isinstance(entry, list) or len(entry) < 2 or type(entry[1]) is not int or entry[1] < 0:
        return False
    logprob = entry[0]
    return logprob is None or (type(logprob) in (int, float) and (math.isfinite(logprob) or logprob == -math.inf))


def _tokens(response: httpx.Response) -> list[int]:
    tokens = json_object(response).get("tokens")
    if not is_token_ids(tokens):
        raise unexpected(response, "a body whose tokens are not a list of token ids")
    return tokens


class SGLangClient(SyncClientBase[SGLangProtocol]):
    """Blocking client of one SGLang server. ``base_url`` is the server's root (``http://host:30000``)."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(base_url, timeout=timeout, transport=transport, headers=headers)
        self._protocol = SGLangProtocol(self._http, model)

    generate = sync_op(SGLangProtocol.generate)
    prime = sync_op(SGLangProtocol.prime)
    flush_cache = sync_op(SGLangProtocol.flush_cache)
    server_info = sync_op(SGLangProtocol.server_info)
    tokenize = sync_op(SGLangProtocol.tokenize)


class AsyncSGLangClient(AsyncClientBase[SGLangProtocol]):
    """The ``async`` twin of :class:`SGLangClient`: same methods, awaited."""

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(base_url, timeout=timeout, transport=transport, headers=headers)
        self._protocol = SGLangProtocol(self._http, model)

    generate = async_op(SGLangProtocol.generate)
    prime = async_op(SGLangProtocol.prime)
    flush_cache = async_op(SGLangProtocol.flush_cache)
    server_info = async_op(SGLangProtocol.server_info)
    tokenize = async_op(SGLangProtocol.tokenize)
