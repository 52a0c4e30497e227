"""What a particular server makes of a chat request: its request reshaping, chat template and tokens."""

from __future__ import annotations

from agentcache.servers.profiles import ANTHROPIC, LLAMA_CPP, OPENAI, PROFILES, SGLANG, VLLM, ServerProfile, get_profile
from agentcache.servers.prompt import ServerPrompt
from agentcache.servers.template import ChatTemplate

__all__ = [
    "ANTHROPIC",
    "LLAMA_CPP",
    "OPENAI",
    "PROFILES",
    "SGLANG",
    "VLLM",
    "ChatTemplate",
    "ServerProfile",
    "ServerPrompt",
    "get_profile",
]
