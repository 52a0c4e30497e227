"""Character positions of tokens, checked against the bytes each token really holds, for every tokenizer kind."""

from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import pre_tokenizers

from agentcache.errors import TokenizerError
from agentcache.tokens import HFTokenizer, TiktokenTokenizer, Tokenizer, get_tokenizer

TokenBytes = Callable[[int], bytes]

# Pieces that make tokens end inside a character (CJK, Korean, emoji) or hit special-token handling.
PIECES = [" 텍스트", "日本語", "😀", "🎉 ", "<|im_start|>", "<|endoftext|>", " hello", "\n\n", "e\u0301"]
TEXTS = st.lists(st.one_of(st.text(max_size=8), st.sampled_from(PIECES)), max_size=8).map("".join)


def byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte-level table inverted: the printable character a ByteLevel token uses for each raw byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {chr(b): b for b in printable} | {chr(256 + i): b for i, b in enumerate(others)}


def hf_token_bytes(tokenizer: HFTokenizer) -> TokenBytes:
    alphabet = byte_level_alphabet()
    assert set(alphabet) == set(pre_tokenizers.ByteLevel.alphabet())
    added = {i: t.content for i, t in tokenizer.hf.get_added_tokens_decoder().items()}

    def token_bytes(token: int) -> bytes:
        if token in added:
            return added[token].encode()
        return bytes(alphabet[c] for c in tokenizer.hf.id_to_token(token))

    return token_bytes


@pytest.fixture(scope="module", params=["o200k_base", "cl100k_base", "tokenizer.json"])
def tokenizer_with_bytes(request: pytest.FixtureRequest, tokenizer_json: Path) -> tuple[Tokenizer, TokenBytes]:
    """A tokenizer, and an independent way to get the raw bytes of each of its tokens."""
    if request.param == "tokenizer.json":
        hf = get_tokenizer(tokenizer_json)
        assert isinstance(hf, HFTokenizer)
        return hf, hf_token_bytes(hf)
    tiktoken_based = get_tokenizer(request.param)
    assert isinstance(tiktoken_based, TiktokenTokenizer)
    return tiktoken_based, tiktoken_based.encoding.decode_single_token_bytes


def expected_spans(text: str, pieces: list[bytes]) -> tuple[list[int], list[int], list[int]]:
    """Token i holds bytes of characters starts[i]..ends[i]-1; character c's first byte is in token owners[c]."""
    assert b"".join(pieces) == text.encode()
    char_of_byte = [i for i, ch in enumerate(text) for _ in ch.encode()]
    token_of_byte = [i for i, piece in enumerate(pieces) for _ in piece]
    piece_bounds = list(accumulate((len(piece) for piece in pieces), initial=0))
    char_bounds = list(accumulate((len(ch.encode()) for ch in text), initial=0))
    starts = [char_of_byte[b] for b in piece_bounds[:-1]]
    ends = [char_of_byte[b - 1] + 1 for b in piece_bounds[1:]]
    return starts, ends, [token_of_byte[b] for b in char_bounds[:-1]]


@settings(max_examples=200, deadline=None)
@given(text=TEXTS)
def test_spans_and_token_index_follow_the_bytes(tokenizer_with_bytes: tuple[Tokenizer, TokenBytes], text: str) -> None:
    tokenizer, token_bytes = tokenizer_with_bytes
    tokens, starts, ends = tokenizer.encode_with_spans(text)
    want_starts, want_ends, owner_of_char = expected_spans(text, [token_bytes(t) for t in tokens])
    assert (starts, ends) == (want_starts, want_ends)
    assert tokenizer.encode_with_offsets(text) == (tokens, starts)
    assert starts == sorted(starts)
    assert [tokenizer.token_index(text, c) for c in range(len(text))] == owner_of_char
    assert tokenizer.token_index(text, len(text)) == len(tokens) == tokenizer.count(text)
    for i, token in enumerate(tokens):
        if not 0x80 <= token_bytes(token)[0] < 0xC0:  # the token starts a character
            assert tokenizer.token_index(text, starts[i]) == i


def test_a_character_split_across_tokens_belongs_to_the_earlier_one(
    tokenizer_with_bytes: tuple[Tokenizer, TokenBytes],
) -> None:
    """A token that starts with a character's trailing bytes has that character's offset, yet the character
    begins in an earlier token, so token_index must name the earlier one."""
    tokenizer, token_bytes = tokenizer_with_bytes
    text = " ".join(PIECES * 2)
    tokens, offsets = tokenizer.encode_with_offsets(text)
    continuing = [i for i, token in enumerate(tokens) if 0x80 <= token_bytes(token)[0] < 0xC0]
    assert continuing, "the sample text no longer splits any character across tokens"
    for i in continuing:
        assert tokenizer.token_index(text, offsets[i]) < i


@pytest.mark.parametrize("char_pos", [-1, 4])
def test_token_index_outside_the_text(tokenizer_with_bytes: tuple[Tokenizer, TokenBytes], char_pos: int) -> None:
    tokenizer, _ = tokenizer_with_bytes
    with pytest.raises(TokenizerError, match=r"position .* outside the text \(0\.\.3\)"):
        tokenizer.token_index("abc", char_pos)


def test_surrogates_become_replacement_characters(tokenizer_with_bytes: tuple[Tokenizer, TokenBytes]) -> None:
    """JSON can carry lone surrogates; UTF-8 cannot. Each one counts as U+FFFD, keeping positions aligned."""
    tokenizer, _ = tokenizer_with_bytes
    text = "a\ud83d\ude00b\udfff"
    replaced = "a\ufffd\ufffdb\ufffd"
    assert tokenizer.encode_with_spans(text) == tokenizer.encode_with_spans(replaced)
    assert tokenizer.token_index(text, len(text)) == tokenizer.count(replaced)


@pytest.mark.parametrize("bad", [-1, 10**9])
def test_decoding_unknown_ids(tokenizer_with_bytes: tuple[Tokenizer, TokenBytes], bad: int) -> None:
    tokenizer, _ = tokenizer_with_bytes
    with pytest.raises(TokenizerError, match=rf"not in the vocabulary \({bad}\)"):
        tokenizer.decode([*tokenizer.encode("hi"), bad])
