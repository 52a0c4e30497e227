"""Replay requests through a client-side cache model: the predicted cached tokens of each turn.

One replay is one server: every session of a trace shares its cache, as sessions share a real server's.
"""

from __future__ import annotations

import contextlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from agentcache.cache.blockhash import BlockHashCache, token_array
from agentcache.cache.hosted import AnthropicPromptCache, OpenAIPromptCache
from agentcache.cache.radix import RadixCache
from agentcache.cache.slots import DEFAULT_SLOTS, SlotCache
from agentcache.canon import CanonicalPolicy, canonicalize
from agentcache.drift.prompt import PromptTokenizer, Renderer, Segment
from agentcache.errors import InputError, RequestError

if TYPE_CHECKING:
    from agentcache.servers.prompt import ServerPrompt

CacheKind = Literal["sglang", "vllm", "llama.cpp", "openai", "anthropic"]
CACHE_KINDS: tuple[str, ...] = get_args(CacheKind)
ENGINE_KINDS = ("sglang", "vllm", "llama.cpp")
"""The kinds whose server renders a local model's chat template."""

#: The what-if of "canonicalized": the default policy plus moving volatile lines out of the system prompt.
WHAT_IF_POLICY = CanonicalPolicy(relocate_volatile=True)


@dataclass(frozen=True)
class CacheOptions:
    """The server being modelled. ``capacity`` is in tokens (SGLang ``--max-total-tokens``; vLLM's pool is
    ``capacity // block_size`` blocks); None never evicts."""

    kind: CacheKind = "sglang"
    capacity: int | None = None
    page_size: int = 1
    block_size: int = 16
    anthropic_model: str | None = None
    slots: int = DEFAULT_SLOTS
    """llama-server's ``--parallel``; its cache is one prefix per slot."""
    model_dir: str | None = None
    """The model folder the server loads (chat template, tokenizer.json). With it, SGLang, vLLM and llama.cpp
    predictions count the server's own prompt tokens (:class:`~agentcache.servers.ServerPrompt`); without it, or
    for the hosted APIs, agentcache's generic rendering."""

    def server_prompt(self) -> ServerPrompt | None:
        if self.model_dir is None or self.kind not in ENGINE_KINDS:
            return None
        from agentcache.servers.prompt import ServerPrompt  # the profiles build on CacheOptions: import late

        return ServerPrompt.from_pretrained(self.model_dir, self.kind)

    def __post_init__(self) -> None:
        if self.kind not in CACHE_KINDS:
            raise InputError(f"unknown cache {self.kind!r}: use one of {', '.join(CACHE_KINDS)}")
        if self.kind == "vllm" and self.capacity is not None and self.capacity // self.block_size < 2:
            raise InputError(
                f"a capacity of {self.capacity} tokens holds {self.capacity // self.block_size} blocks of "
                f"{self.block_size}, and vLLM needs at least 2 (one is its null block): raise the capacity"
            )

    def build(self) -> RadixCache | BlockHashCache | SlotCache | OpenAIPromptCache | AnthropicPromptCache:
        if self.kind == "sglang":
            return RadixCache(page_size=self.page_size, capacity=self.capacity)
        if self.kind == "llama.cpp":
            return SlotCache(self.slots)
        if self.kind == "vllm":
            blocks = None if self.capacity is None else self.capacity // self.block_size
            return BlockHashCache(block_size=self.block_size, num_blocks=blocks)
        if self.kind == "openai":
            return OpenAIPromptCache()
        if self.anthropic_model is None:
            return AnthropicPromptCache(min_cacheable_tokens=1024)
        return AnthropicPromptCache(self.anthropic_model)


def cache_namespace(request: dict[str, Any]) -> tuple[str, str]:
    """What separates caches: KV computed by one model never serves another, and a ``cache_salt`` (SGLang,
    vLLM) or ``prompt_cache_key`` (OpenAI routing) keeps tenants apart."""
    salt = request.get("cache_salt") or request.get("prompt_cache_key") or ""
    return str(request.get("model", "")), str(salt)


@dataclass(frozen=True)
class Served:
    """One request as the model saw it."""

    segments: list[Segment]
    tokens: array[int]
    starts: list[int]
    cached: int
    prompt_tokens: int = -1
    """Prompt tokens as the modelled server counts them; ``len(tokens)`` unless the server's own prompt was used."""
    exact: array[int] | None = None
    """The server's own prompt tokens, when the replay has its chat template and tokenizer."""

    def __post_init__(self) -> None:
        if self.prompt_tokens < 0:
            object.__setattr__(self, "prompt_tokens", len(self.tokens))


class Replay:
    """A cache model plus the tokenizer that turns requests into its tokens."""

    def __init__(
        self,
        options: CacheOptions,
        prompts: PromptTokenizer,
        canonical: bool = False,
        renderer: Renderer | None = None,
        server_prompt: ServerPrompt | None = None,
    ) -> None:
        self.options = options
        self.model = options.build()
        self.server_prompt = server_prompt if server_prompt is not None else options.server_prompt()
        """The server's own prompt (``options.model_dir``, or given): predictions count its tokens."""
        self.prompts = prompts
        self.renderer = renderer or Renderer()
        self.canonical = canonical
        self.clock = 0.0
        self.last: dict[str | None, Served] = {}
        """The last request served of each session: the next one is tokenized from where it differs."""

    def serve(
        self,
        request: dict[str, Any],
        ts: float | None = None,
        session: str | None = None,
        output: Sequence[int] = (),
    ) -> Served:
        """Serve one request of ``session``. Without a timestamp, requests are taken to come one second apart.

        ``output``, the token ids the server generated for the request, is cached after the prompt as the server
        caches it; it counts only with the server's own prompt, whose tokens are the server's."""
        if self.canonical:
            with contextlib.suppress(RequestError):  # as the middleware would: send what it cannot canonicalize
                request = canonicalize(request, WHAT_IF_POLICY)
        segments, tokens, starts = self.prompt(request, session)
        self.clock = max(self.clock + 1.0 if ts is None else ts, self.clock)
        model = self.model
        namespace = cache_namespace(request)
        if self.server_prompt is not None:  # the server's own prompt: its chat template and tokenizer
            exact = token_array(self.server_prompt.tokens(request))
            if not exact:
                cached = 0
            elif isinstance(model, OpenAIPromptCache):
                cached = model.serve(exact, extra_key=namespace, now=self.clock)
            else:
                assert isinstance(model, (RadixCache, BlockHashCache, SlotCache)), "no local template for Anthropic"
                cached = model.serve(exact, output, extra_key=namespace)
            served = self.last[session] = Served(segments, tokens, starts, cached, len(exact), exact)
            return served
        if not tokens:
            cached = 0  # nothing to serve: servers reject an empty prompt
        elif isinstance(model, AnthropicPromptCache):
            ends = [*starts[1:], len(tokens)]  # each segment ends where the next starts
            marks = [end for end, segment in zip(ends, segments, strict=True) if segment.breakpoint][-4:]
            cached = 0
            if marks:  # Anthropic writes nothing without a breakpoint
                cached = model.serve(tokens, extra_key=namespace, breakpoints=marks, blocks=ends, now=self.clock)
        elif isinstance(model, OpenAIPromptCache):
            cached = model.serve(tokens, extra_key=namespace, now=self.clock)
        else:
            cached = model.serve(tokens, extra_key=namespace)
        served = self.last[session] = Served(segments, tokens, starts, cached)
        return served

    def prompt(
        self, request: dict[str, Any], session: str | None = None
    ) -> tuple[list[Segment], array[int], list[int]]:
        """The request's segments, tokens and segment starts, tokenized from where it differs from the session's
        last request. Does not serve it: callers that only need the drift (not the prediction) stop here."""
        segments = self.renderer.render(request)
        last = self.last.get(session)
        tokens, starts = self.prompts.prompt(
            segments, None if last is None else (last.segments, last.tokens, last.starts)
        )
        return segments, tokens, starts

    def minimum(self) -> int:
        """The shortest prompt the model can report cached at all (hosted APIs have a floor)."""
        if isinstance(self.model, OpenAIPromptCache):
            return self.model.MIN_TOKENS
        if isinstance(self.model, AnthropicPromptCache):
            return self.model.min_cacheable_tokens
        return 0
