"""Local Hugging Face tokenizer.json files, tokenized the way SGLang and vLLM tokenize a rendered chat template."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer, processors

from agentcache.errors import TokenizerError
from agentcache.tokens import HFTokenizer, get_tokenizer
from agentcache.tokens.hf import load_tokenizer_json

from .conftest import BOS, SPECIAL

CHAT = f"{SPECIAL[0]}user\nhello world 日本語{SPECIAL[1]}\n{SPECIAL[0]}assistant\n"
SAMPLES = [CHAT, "hello  world   텍스트 한국어  ", " 😀 emoji", "", "  \n "]


@pytest.fixture(scope="module")
def hf(tokenizer_json: Path) -> HFTokenizer:
    tokenizer = get_tokenizer(tokenizer_json)
    assert isinstance(tokenizer, HFTokenizer)
    return tokenizer


def test_file_and_directory_give_the_same_tokenizer(tokenizer_json: Path, hf: HFTokenizer) -> None:
    assert get_tokenizer(str(tokenizer_json.parent)) is hf
    assert hf.name == str(tokenizer_json.resolve())


@pytest.mark.parametrize("text", SAMPLES)
def test_ids_are_the_librarys_without_bos(hf: HFTokenizer, byte_level_bpe: Tokenizer, text: str) -> None:
    assert hf.encode(text) == byte_level_bpe.encode(text, add_special_tokens=False).ids
    with_template = byte_level_bpe.encode(text).ids
    assert with_template[0] == byte_level_bpe.token_to_id(BOS)
    assert hf.encode(text) == with_template[1:]


def test_special_tokens_in_the_text_are_recognized(hf: HFTokenizer, byte_level_bpe: Tokenizer) -> None:
    tokens = hf.encode(CHAT)
    start, end = (byte_level_bpe.token_to_id(t) for t in SPECIAL)
    assert tokens[0] == start
    assert tokens.count(start) == 2
    assert tokens.count(end) == 1
    assert hf.decode(tokens) == CHAT
    offsets = hf.encode_with_offsets(CHAT)[1]
    assert [offsets[i] for i, t in enumerate(tokens) if t == start] == [0, CHAT.rindex(SPECIAL[0])]


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_decode_inverts_encode(hf: HFTokenizer, text: str) -> None:
    assert hf.decode(hf.encode(text)) == text


def test_server_irrelevant_settings_in_the_file_are_ignored(
    hf: HFTokenizer, byte_level_bpe: Tokenizer, tmp_path: Path
) -> None:
    """Trimmed offsets, truncation and padding saved in a tokenizer.json do not change what a server sees."""
    variant = Tokenizer.from_str(byte_level_bpe.to_str())
    variant.post_processor = processors.ByteLevel(trim_offsets=True)
    variant.enable_truncation(max_length=4)
    variant.enable_padding(length=64, pad_id=0)
    path = tmp_path / "tokenizer.json"
    variant.save(str(path))
    text = SAMPLES[1]
    raw = Tokenizer.from_file(str(path)).encode(text, add_special_tokens=False)
    assert len(raw.ids) == 64, "the file no longer truncates and pads"
    assert [start for start, _ in raw.offsets[:4]] != hf.encode_with_offsets(text)[1][:4], "no longer trims"
    from_file = load_tokenizer_json(path)
    for text in SAMPLES:
        assert from_file.encode_with_spans(text) == hf.encode_with_spans(text)


def test_missing_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text("{}")
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(TokenizerError, match=r"pip install 'agentcache\[hf\]'"):
        get_tokenizer(path)


def test_unreadable_file(tmp_path: Path) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text('{"model": "not a model"}')
    with pytest.raises(TokenizerError, match=r"not a tokenizer\.json the tokenizers library can read"):
        get_tokenizer(path)
