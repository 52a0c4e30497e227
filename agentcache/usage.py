"""One reading of "how much of the prompt came from cache", whatever dialect the server reports it in.

Dialects, where each keeps its counts, and how the prompt total and the cached part are read:

- ``openai`` (also SGLang, vLLM, llama.cpp on ``/v1/chat/completions``): ``usage.prompt_tokens``, and
  ``usage.prompt_tokens_details.cached_tokens``;
- ``responses`` (OpenAI Responses API): ``usage.input_tokens``, and ``usage.input_tokens_details.cached_tokens``;
- ``anthropic``: ``usage.input_tokens`` + ``cache_read_input_tokens`` + ``cache_creation_input_tokens``, and
  ``cache_read_input_tokens`` (the writes are ``cache_creation_input_tokens``);
- ``sglang`` (native ``/generate``): ``meta_info.prompt_tokens``, and ``meta_info.cached_tokens``;
- ``llama.cpp`` (native ``/completion``): ``timings.prompt_n`` + ``timings.cache_n``, and ``timings.cache_n``.

Anthropic's ``input_tokens`` counts only the tokens after the last cache breakpoint, so its prompt is the sum of the
three fields. A server that does not report cached tokens (SGLang without ``--enable-cache-report``) gives
``cached_tokens=None``, never 0: "not reported" is not "nothing cached".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentcache.totals import hit_ratio


@dataclass(frozen=True)
class CacheUsage:
    dialect: str
    prompt_tokens: int | None
    """Every prompt token, cached or not."""
    cached_tokens: int | None
    """Prompt tokens served from cache; None when the server did not say."""
    cache_write_tokens: int | None = None
    """Prompt tokens written to cache, billed apart: Anthropic's ``cache_creation_input_tokens``, OpenAI's
    ``cache_write_tokens`` (GPT-5.6 and later); None when not reported."""

    @property
    def hit_ratio(self) -> float | None:
        return hit_ratio(self.cached_tokens, self.prompt_tokens)

    @classmethod
    def from_usage(cls, usage: Any) -> CacheUsage | None:
        """Read a ``usage`` object (chat completions, Responses, Anthropic); None if it is not one."""
        if not isinstance(usage, Mapping):
            return None
        if "prompt_tokens" in usage or "prompt_tokens_details" in usage:
            # Proxies (LiteLLM) add Anthropic's fields to OpenAI usage; the OpenAI reading comes first.
            cached = _detail(usage.get("prompt_tokens_details"))
            if cached is None:
                cached = _int(usage.get("cache_read_input_tokens"))
            return cls("openai", _int(usage.get("prompt_tokens")), cached, _written(usage.get("prompt_tokens_details")))
        if "cache_read_input_tokens" in usage or "cache_creation_input_tokens" in usage:
            read = _int(usage.get("cache_read_input_tokens"))
            written = _int(usage.get("cache_creation_input_tokens"))
            fresh = _int(usage.get("input_tokens"))
            prompt = None if fresh is None else fresh + (read or 0) + (written or 0)
            return cls("anthropic", prompt, read, written)
        if "input_tokens" in usage or "input_tokens_details" in usage:
            details = usage.get("input_tokens_details")
            return cls("responses", _int(usage.get("input_tokens")), _detail(details), _written(details))
        return None

    @classmethod
    def from_response(cls, body: Any) -> CacheUsage | None:
        """Read a whole response body (or a stream's final chunk) of any dialect above; None if it has no usage."""
        if not isinstance(body, Mapping):
            return None
        usage = cls.from_usage(body.get("usage"))
        if usage is not None:
            return usage
        meta = body.get("meta_info")
        if isinstance(meta, Mapping) and "prompt_tokens" in meta:
            return cls("sglang", _int(meta["prompt_tokens"]), _int(meta.get("cached_tokens")))
        timings = body.get("timings")
        if isinstance(timings, Mapping) and "cache_n" in timings:
            cached, computed = _int(timings["cache_n"]), _int(timings.get("prompt_n"))
            prompt = None if cached is None or computed is None else cached + computed
            return cls("llama.cpp", prompt, cached)
        return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _detail(details: Any) -> int | None:
    return _int(details.get("cached_tokens")) if isinstance(details, Mapping) else None


def _written(details: Any) -> int | None:
    return _int(details.get("cache_write_tokens")) if isinstance(details, Mapping) else None
