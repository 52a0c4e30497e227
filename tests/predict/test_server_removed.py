"""What a server's KV events say it evicted is dropped from the model of that server, in the namespace of the
salt the events name, as each engine drops it (Replay.server_removed)."""

from __future__ import annotations

from typing import Any

import pytest

from agentcache.cache.options import CacheOptions
from agentcache.predict.prompt import PromptTokenizer
from agentcache.predict.replay import Replay
from agentcache.servers import ChatTemplate, ServerPrompt
from agentcache.servers.kv_events import Held
from agentcache.tokens import get_tokenizer

TEMPLATE = "{% for m in messages %}<{{ m.role }}>\n{{ m.content }}\n{% endfor %}"
BLOCK = 32


def request(salt: str) -> dict[str, Any]:
    text = " ".join(f"word{i}" for i in range(200))
    return {"model": "m", "messages": [{"role": "user", "content": text}], "cache_salt": salt}


@pytest.mark.parametrize("kind", ["sglang", "vllm"])
def test_a_removal_is_dropped_in_the_namespace_of_its_salt_only(kind: str) -> None:
    server = ServerPrompt(kind, ChatTemplate(TEMPLATE, name="test template"), get_tokenizer("o200k_base"))
    options = CacheOptions(kind, block_size=BLOCK) if kind == "vllm" else CacheOptions(kind)
    replay = Replay(options, PromptTokenizer(get_tokenizer("o200k_base")), server_prompt=server)
    for salt in ("a", "b"):
        replay.serve(request(salt))
    tokens = server.tokens(request("a"))
    assert len(tokens) > 4 * BLOCK
    # the server evicted the second block of salt a's prompt (vLLM: that block alone; SGLang: from there on)
    assert replay.server_removed(None, tokens[: 2 * BLOCK], BLOCK, salt="a") >= BLOCK
    assert replay.serve(request("a")).cached == BLOCK  # the lookup stops where the eviction began
    assert replay.serve(request("b")).cached > 4 * BLOCK  # the other tenant's copy is untouched
    assert replay.server_evicted[None] >= BLOCK


@pytest.mark.parametrize("kind", ["sglang", "vllm"])
def test_what_the_server_held_at_the_match_is_what_the_model_holds_before_it_serves(kind: str) -> None:
    """Under concurrency a request may match blocks another request stored, before that one's turn is recorded;
    or miss blocks the model still holds. The events' word on what the server held of the path then (``Held``)
    brings the model to it, whichever engine it models."""
    server = ServerPrompt(kind, ChatTemplate(TEMPLATE, name="test template"), get_tokenizer("o200k_base"))
    options = CacheOptions(kind, block_size=BLOCK) if kind == "vllm" else CacheOptions(kind)
    replay = Replay(options, PromptTokenizer(get_tokenizer("o200k_base")), server_prompt=server)
    tokens = server.tokens(request("a"))
    assert len(tokens) > 4 * BLOCK
    replay.before_serve = lambda path: Held(3 * BLOCK, known=False)  # stored by a request not recorded yet
    assert replay.serve(request("a")).cached == 3 * BLOCK
    replay.before_serve = lambda path: Held(BLOCK, known=True)  # the rest evicted by the time of the match
    assert replay.serve(request("a")).cached == BLOCK
    replay.before_serve = lambda path: Held(0, known=False)  # blocks no event named: the model keeps its own
    assert replay.serve(request("a")).cached > 4 * BLOCK
