"""Which server's cache to model, and with what settings: the one place a cache model is built from options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from agentcache.cache.base import PrefixCacheModel
from agentcache.cache.blockhash import BlockHashCache
from agentcache.cache.hosted import AnthropicPromptCache, OpenAIPromptCache
from agentcache.cache.radix import RadixCache
from agentcache.cache.slots import DEFAULT_SLOTS, SlotCache
from agentcache.errors import InputError

CacheKind = Literal["sglang", "vllm", "llama.cpp", "openai", "anthropic"]
CACHE_KINDS: tuple[str, ...] = get_args(CacheKind)
ENGINE_KINDS = ("sglang", "vllm", "llama.cpp")
"""The kinds whose server renders a local model's chat template."""


@dataclass(frozen=True)
class CacheOptions:
    """The server being modelled. ``capacity`` is in tokens (SGLang ``--max-total-tokens``; vLLM's pool is
    ``capacity // block_size`` blocks); None never evicts."""

    kind: CacheKind = "sglang"
    capacity: int | None = None
    page_size: int = 1
    block_size: int = 16
    model: str | None = None
    """The hosted model whose caching rule to apply (:mod:`agentcache.cache.rules`); None: OpenAI's rule before
    GPT-5.6, Anthropic's mechanism with a 1024-token minimum."""
    slots: int = DEFAULT_SLOTS
    """llama-server's ``--parallel``; its cache is one prefix per slot."""
    model_dir: str | None = None
    """The model folder the server loads (chat template, tokenizer.json). With it, SGLang, vLLM and llama.cpp
    predictions count the server's own prompt tokens (:class:`~agentcache.servers.ServerPrompt`); without it, or
    for the hosted APIs, agentcache's generic rendering."""

    def __post_init__(self) -> None:
        if self.kind not in CACHE_KINDS:
            raise InputError(f"unknown cache {self.kind!r}: use one of {', '.join(CACHE_KINDS)}")
        if self.kind == "vllm" and self.capacity is not None and self.capacity // self.block_size < 2:
            raise InputError(
                f"a capacity of {self.capacity} tokens holds {self.capacity // self.block_size} blocks of "
                f"{self.block_size}, and vLLM needs at least 2 (one is its null block): raise the capacity"
            )

    @property
    def renders_template(self) -> bool:
        """Whether the server renders a local chat template, so ``model_dir`` makes predictions exact."""
        return self.kind in ENGINE_KINDS

    def build(self) -> PrefixCacheModel:
        """A fresh, empty model of this server's cache."""
        if self.kind == "sglang":
            return RadixCache(page_size=self.page_size, capacity=self.capacity)
        if self.kind == "llama.cpp":
            return SlotCache(self.slots)
        if self.kind == "vllm":
            blocks = None if self.capacity is None else self.capacity // self.block_size
            return BlockHashCache(block_size=self.block_size, num_blocks=blocks)
        if self.kind == "openai":
            return OpenAIPromptCache(self.model)
        if self.model is None:
            return AnthropicPromptCache(min_cacheable_tokens=1024)
        return AnthropicPromptCache(self.model)
