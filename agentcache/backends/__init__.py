"""HTTP clients for real inference engines, each with a blocking and an ``async`` twin built from one protocol.

- :class:`SGLangClient` / :class:`AsyncSGLangClient`: SGLang's native ``/generate`` (cache salts, priming the
  radix cache, flushing it) and ``/v1/tokenize``;
- :class:`OpenAICompatClient` / :class:`AsyncOpenAICompatClient`: ``/v1/chat/completions`` on SGLang, vLLM,
  llama-server or OpenAI, plain or streamed, with the usage read as a :class:`~agentcache.usage.CacheUsage`.

An answer the call cannot use raises :class:`~agentcache.errors.BackendError`; connection failures and timeouts
are httpx's own exceptions. Guide and measured cache behaviour: docs/backends.md.
"""

from __future__ import annotations

from agentcache.backends.openai_compat import (
    AsyncChatStream,
    AsyncOpenAICompatClient,
    ChatResult,
    ChatStream,
    OpenAICompatClient,
    output_token_ids,
)
from agentcache.backends.sglang import FLUSH_WAIT, AsyncSGLangClient, Generation, SGLangClient

__all__ = [
    "FLUSH_WAIT",
    "AsyncChatStream",
    "AsyncOpenAICompatClient",
    "AsyncSGLangClient",
    "ChatResult",
    "ChatStream",
    "Generation",
    "OpenAICompatClient",
    "SGLangClient",
    "output_token_ids",
]
