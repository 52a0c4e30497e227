"""Hugging Face ``tokenizer.json`` files, for open-weight models served by SGLang or vLLM.

Only local files are read (``Tokenizer.from_file``, never a model hub). The ``tokenizers`` package is an
optional extra, imported when a file is loaded.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agentcache.errors import TokenizerError
from agentcache.tokens.base import Tokenizer, replace_surrogates, unknown_ids_error

if TYPE_CHECKING:
    import tokenizers


def load_tokenizer_json(path: Path) -> HFTokenizer:
    """Build an :class:`HFTokenizer` from a ``tokenizer.json`` file."""
    try:
        import tokenizers
    except ImportError as exc:
        raise TokenizerError(
            f"{path}: reading a tokenizer.json needs the optional package tokenizers; "
            "install it with `pip install 'agentcache[hf]'`"
        ) from exc
    try:
        hf = tokenizers.Tokenizer.from_file(str(path))
    except Exception as exc:  # the Rust side raises bare Exception for any parse error
        raise TokenizerError(
            f"{path}: not a tokenizer.json the tokenizers library can read ({exc}); pass the tokenizer.json "
            "saved with the model (Tokenizer.save or save_pretrained writes one)"
        ) from exc
    return HFTokenizer(hf, name=str(path))


class HFTokenizer(Tokenizer):
    """A ``tokenizers.Tokenizer`` behind the :class:`Tokenizer` interface, tokenizing the way servers do.

    SGLang and vLLM tokenize an already rendered chat template, so the text carries its own markers:
    added and special tokens written in the text (``<|im_start|>``) become their ids, but no BOS/EOS is
    added around it (``add_special_tokens=False``). Truncation and padding stored in the file are switched
    off, because a server sees the whole prompt. The post-processor is dropped too: without BOS/EOS, all it
    could still do is trim whitespace off the offsets (ByteLevel/Roberta ``trim_offsets``), which would make a
    space belong to no token. ``hf`` is configured in place.
    """

    def __init__(self, hf: tokenizers.Tokenizer, name: str) -> None:
        hf.no_truncation()
        hf.no_padding()
        hf.post_processor = None
        hf.encode_special_tokens = False
        self.name = name
        self.hf = hf

    def encode(self, text: str) -> list[int]:
        ids: list[int] = self.hf.encode(replace_surrogates(text), add_special_tokens=False).ids
        return ids

    def decode(self, tokens: Sequence[int]) -> str:
        # The Rust decoder silently drops ids it does not know; refuse them instead, like tiktoken.
        # Added tokens may sit above get_vocab_size() (ids need not be contiguous): ask for each id.
        unknown = [t for t in tokens if t < 0 or self.hf.id_to_token(t) is None]
        if unknown:
            raise unknown_ids_error(self.name, unknown, "the ids of this tokenizer.json")
        text: str = self.hf.decode(list(tokens), skip_special_tokens=False)
        return text

    def encode_with_spans(self, text: str) -> tuple[list[int], list[int], list[int]]:
        encoding = self.hf.encode(replace_surrogates(text), add_special_tokens=False)
        ids: list[int] = encoding.ids
        return ids, [start for start, _ in encoding.offsets], [end for _, end in encoding.offsets]
