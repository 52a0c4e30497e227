"""The demo session sent to a real engine through the cache-aware transport, raw and then canonicalized.

Each run gets a cache namespace of its own where the server has one (a fresh ``cache_salt`` on SGLang and
vLLM), so the two runs do not share a prefix and nothing else on the server is touched. llama-server has no
namespaces: its slots are erased first when the server allows it (``--slot-save-path``), otherwise the first
turn may find a few tokens other clients left behind and the prediction, which starts empty, will be lower.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from agentcache.cache.options import CacheOptions
from agentcache.canon import CanonicalPolicy
from agentcache.demo.scenario import session
from agentcache.errors import InputError
from agentcache.servers import get_profile
from agentcache.tokens import get_tokenizer
from agentcache.transport import CacheAwareTransport, Turn

POLICY = CanonicalPolicy(relocate_volatile=True)
SCALE = 0.05
"""Size of the demo session against a server: about 1,400 prompt tokens at turn 1, +85 a turn."""


@dataclass(frozen=True)
class LiveRun:
    engine: str
    model: str
    exact: bool
    raw: list[Turn]
    canonical: list[Turn]


def detect(http: httpx.Client) -> str:
    """Which engine answers at the base URL: each has an endpoint the others lack."""
    if http.get("/get_server_info").status_code == 200:
        return "sglang"
    props = http.get("/props")
    if props.status_code == 200 and "default_generation_settings" in props.text:
        return "llama.cpp"
    if http.get("/version").status_code == 200:
        return "vllm"
    raise InputError(f"{http.base_url}: not SGLang, vLLM or llama-server (or not up); pass --engine")


def served_model(http: httpx.Client) -> str:
    response = http.get("/v1/models")
    if response.status_code != 200:
        raise InputError(f"{http.base_url}/v1/models answered {response.status_code}: not an OpenAI-compatible server")
    return str(response.json()["data"][0]["id"])


def run_live(
    url: str,
    turns: int,
    engine: str | None = None,
    model_dir: str | Path | None = None,
    block_size: int = 16,
    max_tokens: int = 4,
) -> LiveRun:
    """Send the drifting demo session raw, then canonicalized, and return both ledgers."""
    try:
        return _run(url, turns, engine, model_dir, block_size, max_tokens)
    except httpx.TransportError as exc:
        raise InputError(f"{url}: {exc} ({type(exc).__name__}); is the engine up at that URL?") from exc


def _run(
    url: str, turns: int, engine: str | None, model_dir: str | Path | None, block_size: int, max_tokens: int
) -> LiveRun:
    with httpx.Client(base_url=url, timeout=600) as http:
        engine = engine or detect(http)
        model = served_model(http)
    profile = get_profile(engine)
    cache = CacheOptions("vllm", block_size=block_size) if engine == "vllm" else None
    bodies = session(get_tokenizer("o200k_base"), turns, drift=True, scale=SCALE)
    ledgers = []
    for canonical in (False, True):
        transport = CacheAwareTransport(
            server=profile, model_dir=model_dir, cache=cache, canonicalize=canonical, policy=POLICY
        )
        salt = uuid.uuid4().hex
        with httpx.Client(transport=transport, base_url=url, timeout=600) as http:
            if engine == "llama.cpp":
                _erase_slots(http)
            for body in bodies:
                request: dict[str, Any] = {**body, "model": model, "max_tokens": max_tokens}
                request.update(profile.output_ids_request)
                if engine != "llama.cpp":
                    request["cache_salt"] = salt
                response = http.post("/v1/chat/completions", json=request)
                if response.status_code != 200:
                    raise InputError(f"{url} answered {response.status_code}: {response.text[:300]}")
        ledgers.append(transport.ledger.turns())
    return LiveRun(engine, model, model_dir is not None, ledgers[0], ledgers[1])


def _erase_slots(http: httpx.Client) -> None:
    slots = http.get("/slots")
    if slots.status_code != 200:
        return
    for slot in slots.json():
        http.post(f"/slots/{slot['id']}", params={"action": "erase"})
