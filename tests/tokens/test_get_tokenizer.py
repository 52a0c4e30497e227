"""The single entry point: names, paths, caching, and what it says when it cannot help."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcache import errors
from agentcache.tokens import VOCABULARIES, TiktokenTokenizer, get_tokenizer


def test_loaded_once_per_name(vocabulary: TiktokenTokenizer) -> None:
    assert get_tokenizer(vocabulary.name) is vocabulary


@pytest.mark.parametrize("name", ["o200k", "gpt-4o", "no/such/tokenizer.json", ""])
def test_unknown_name_lists_what_is_accepted(name: str) -> None:
    with pytest.raises(errors.TokenizerError) as raised:
        get_tokenizer(name)
    message = str(raised.value)
    assert repr(name) in message
    assert all(repr(valid) in message for valid in VOCABULARIES)
    assert "tokenizer.json" in message


def test_directory_without_tokenizer_json(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text("{}")
    with pytest.raises(errors.TokenizerError, match=r"directory without a tokenizer\.json"):
        get_tokenizer(tmp_path)
