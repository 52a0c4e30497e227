"""Check a running engine against the client-side view of the test model: same tokens, real cache hits.

Why: the project asserts that the cached-token counts it predicts on the client equal what the server
reports, which only holds if the server tokenizes and templates exactly as the client does. This script
checks, against a live server, that

1. the server's tokenization of plain text equals tiktoken's o200k_base ids;
2. the server renders a chat (system, tools, assistant tool calls, tool results) to as many prompt tokens
   as the model's own chat template rendered by transformers and tokenized with tiktoken;
3. a repeated prompt is served from the prefix cache, and a follow-up turn reuses the shared prefix
   (server-reported cached tokens next to the client-computed common prefix).

Runs in the model venv (``engines.py check ENGINE``). Usage: ``check_engine.py ENGINE BASE_URL MODEL_DIR``.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_model import O200K, SPECIAL_TOKENS, load_o200k_ranks

SERVED_NAME = "tiny-llama-o200k"
PLAIN_TEXTS = [
    "The quick brown fox jumps over the lazy dog. I'm sure they'll see it's 3.14159!",
    "def add(a, b):\n    return a + b  # spaces    and\ttabs\n\n\n",
    "naïve café — “quotes” — 日本語 — русский — 🤖",
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["C", "F"]}},
                "required": ["city"],
            },
        },
    }
]


def conversation(turns: int) -> list[dict[str, Any]]:
    """A deterministic agent transcript long enough (~1k tokens) to span many cache blocks."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a careful assistant. " + "Follow the house rules. " * 40}
    ]
    for i in range(turns):
        messages.append({"role": "user", "content": f"Turn {i}: what is the weather in city number {i}?"})
        call = {"city": f"City{i}", "unit": "C"}
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": json.dumps(call)},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"{10 + i} degrees, clear sky"})
    messages.append({"role": "user", "content": "Summarise all the readings."})
    return messages


def post(url: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        sys.exit(f"POST {url} answered {error.code}: {error.read().decode(errors='replace')}")


def server_tokens(engine: str, base: str, text: str) -> list[int]:
    if engine == "llama-server":
        tokens: list[int] = post(f"{base}/tokenize", {"content": text, "add_special": False})["tokens"]
    elif engine == "sglang":
        tokens = post(f"{base}/v1/tokenize", {"model": SERVED_NAME, "prompt": text, "add_special_tokens": False})[
            "tokens"
        ]
    else:
        tokens = post(f"{base}/tokenize", {"model": SERVED_NAME, "prompt": text, "add_special_tokens": False})["tokens"]
    return tokens


def server_chat_tokens(engine: str, base: str, messages: list[dict[str, Any]]) -> list[int]:
    """The ids the server feeds the model for a chat, rendered by its own template handling."""
    if engine == "llama-server":
        prompt = post(f"{base}/apply-template", {"messages": messages, "tools": TOOLS})["prompt"]
        tokens: list[int] = post(f"{base}/tokenize", {"content": prompt, "add_special": False, "parse_special": True})[
            "tokens"
        ]
        return tokens
    path = "/v1/tokenize" if engine == "sglang" else "/tokenize"
    body = {"model": SERVED_NAME, "messages": messages, "tools": TOOLS, "add_generation_prompt": True}
    tokens = post(base + path, body)["tokens"]
    return tokens


def chat(base: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    body = {"model": SERVED_NAME, "messages": messages, "tools": TOOLS, "max_tokens": 1, "temperature": 0}
    usage: dict[str, Any] = post(f"{base}/v1/chat/completions", body)["usage"]
    return usage


def cached(usage: dict[str, Any]) -> int:
    details = usage.get("prompt_tokens_details") or {}
    return int(details.get("cached_tokens") or 0)


def flush_cache(base: str) -> None:
    """Empty SGLang's radix cache so the first request of a check is cold (the reply is plain text)."""
    urllib.request.urlopen(urllib.request.Request(f"{base}/flush_cache", method="POST"), timeout=60).close()


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def main() -> None:
    engine, base, model_dir = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3]
    import tiktoken
    from transformers import AutoTokenizer

    encoding = tiktoken.Encoding(
        "o200k_base_chatml", pat_str=O200K.pat_str, mergeable_ranks=load_o200k_ranks(), special_tokens=SPECIAL_TOKENS
    )
    template = AutoTokenizer.from_pretrained(model_dir)
    failures: list[str] = []

    for text in PLAIN_TEXTS:
        want, got = encoding.encode_ordinary(text), server_tokens(engine, base, text)
        print(f"tokenize {len(want):3d} tokens: {'equal' if got == want else 'DIFFERENT'} to o200k_base")
        if got != want:
            failures.append(f"tokenize {text!r}: server {got} != o200k {want}")

    # SGLang 0.5.23 re-serialises each tool with "defer_loading": null before templating (chat and tokenize).
    server_tools = [{**t, "defer_loading": None} for t in TOOLS] if engine == "sglang" else TOOLS

    def client_prompt(messages: list[dict[str, Any]]) -> list[int]:
        rendered = template.apply_chat_template(
            messages, tools=server_tools, add_generation_prompt=True, tokenize=False
        )
        return encoding.encode(rendered, allowed_special="all")

    transcript = conversation(3)
    want = client_prompt(transcript)
    got = server_chat_tokens(engine, base, transcript)
    print(f"chat template {len(want)} tokens: {'equal' if got == want else 'DIFFERENT'} to transformers + o200k")
    if got != want:
        at = common_prefix(got, want)
        server_tail, client_tail = encoding.decode(got[at:]), encoding.decode(want[at:])
        failures.append(f"chat tokens differ at {at}: server {server_tail!r}, client {client_tail!r}")

    first, longer = conversation(6), conversation(8)
    if engine == "sglang":
        flush_cache(base)
    client_first, client_longer = client_prompt(first), client_prompt(longer)
    runs = [
        ("cold", chat(base, first), client_first),
        ("repeat", chat(base, first), client_first),
        ("grown", chat(base, longer), client_longer),
    ]
    for label, usage, client in runs:
        prompt_tokens = usage["prompt_tokens"]
        print(f"chat {label:6s}: prompt_tokens {prompt_tokens} (client {len(client)}), cached_tokens {cached(usage)}")
        if prompt_tokens != len(client):
            failures.append(f"chat {label}: server counted {prompt_tokens} prompt tokens, client {len(client)}")
    shared = common_prefix(client_first, client_longer)
    print(f"client-side: repeat shares {len(client_first)} tokens, grown shares {shared} tokens with the first")
    if cached(runs[1][1]) == 0 or cached(runs[2][1]) == 0:
        failures.append("no cached tokens reported on a repeated prefix")

    if engine == "sglang":
        flush_cache(base)
        ids = client_first
        params = {"max_new_tokens": 1, "temperature": 0}
        metas = [post(f"{base}/generate", {"input_ids": ids, "sampling_params": params})["meta_info"] for _ in range(2)]
        for label, meta in zip(("first", "second"), metas, strict=True):
            print(f"generate {label}: prompt_tokens {meta['prompt_tokens']}, cached_tokens {meta['cached_tokens']}")
        if metas[1]["cached_tokens"] == 0:
            failures.append("/generate reported no cached tokens on a repeated prompt")

    if failures:
        print("\n".join(["FAILED:", *failures]))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
