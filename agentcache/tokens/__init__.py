"""Offline tokenizers: OpenAI's bundled vocabularies and local Hugging Face ``tokenizer.json`` files.

``get_tokenizer`` is the one entry point; it never touches the network, and it loads each tokenizer once per
process because building o200k_base takes up to a second.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from agentcache.errors import TokenizerError
from agentcache.tokens.base import Tokenizer
from agentcache.tokens.bundled import VOCABULARIES, TiktokenTokenizer, load_vocabulary
from agentcache.tokens.hf import HFTokenizer, load_tokenizer_json

__all__ = ["VOCABULARIES", "HFTokenizer", "TiktokenTokenizer", "Tokenizer", "get_tokenizer"]

_loaded: dict[str, Tokenizer] = {}
# One lock for all loads: two threads asking for o200k_base at once must not both build it.
_loading = threading.Lock()


def get_tokenizer(name: str | os.PathLike[str]) -> Tokenizer:
    """The tokenizer for a bundled vocabulary name or a local ``tokenizer.json`` (or a directory with one).

    Vocabulary names: ``"o200k_base"`` (GPT-4o and later), ``"cl100k_base"`` (GPT-4, GPT-3.5). A path needs
    the ``tokenizers`` package (``pip install 'agentcache[hf]'``). Results are cached per name, or per
    resolved file path.
    """
    key = os.fspath(name)
    path: Path | None = None
    if key not in VOCABULARIES:
        path = _tokenizer_json(key)
        key = str(path)
    with _loading:
        tokenizer = _loaded.get(key)
        if tokenizer is None:
            tokenizer = load_vocabulary(key) if path is None else load_tokenizer_json(path)
            _loaded[key] = tokenizer
        return tokenizer


def _tokenizer_json(name: str) -> Path:
    """The resolved ``tokenizer.json`` that ``name`` points at, or the error listing what is accepted."""
    path = Path(name).expanduser()
    if name and path.is_dir():  # Path("") is the working directory, never what an empty name meant
        if not (path / "tokenizer.json").is_file():
            raise TokenizerError(
                f"{name!r} is a directory without a tokenizer.json; point at the model directory that "
                "holds tokenizer.json, or at the file itself"
            )
        path = path / "tokenizer.json"
    if not path.is_file():
        names = ", ".join(repr(n) for n in sorted(VOCABULARIES))
        raise TokenizerError(
            f"unknown tokenizer {name!r}: use one of {names}, or the path of a local Hugging Face "
            "tokenizer.json (or of a directory holding one)"
        )
    return path.resolve()
