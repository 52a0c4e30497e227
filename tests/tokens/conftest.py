"""Tokenizers shared by the tests: the bundled vocabularies, and a small real tokenizer.json trained on the fly."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from agentcache.tokens import VOCABULARIES, TiktokenTokenizer, get_tokenizer

# Multi-byte text in the corpus makes the trainer learn merges that end inside a character, the case that
# offsets and token_index have to get right.
CORPUS = [
    "the prefix cache hit rate",
    "hello world, hello agents",
    " 텍스트 한국어 데이터",
    "日本語のテキストです",
    "emoji 😀 party 🎉",
]
BOS = "<s>"
SPECIAL = ["<|im_start|>", "<|im_end|>"]


@pytest.fixture(scope="session")
def byte_level_bpe() -> Tokenizer:
    """A GPT-2 style tokenizer whose post-processor would add BOS, as many chat models' tokenizers do."""
    hf = Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=[BOS, *SPECIAL],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    hf.train_from_iterator(CORPUS * 20, trainer)
    hf.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, hf.token_to_id(BOS))])
    return hf


@pytest.fixture(scope="session")
def tokenizer_json(byte_level_bpe: Tokenizer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("model") / "tokenizer.json"
    byte_level_bpe.save(str(path))
    return path


@pytest.fixture(scope="session", params=sorted(VOCABULARIES))
def vocabulary(request: pytest.FixtureRequest) -> TiktokenTokenizer:
    """Each bundled vocabulary, loaded once per session through the public entry point."""
    tokenizer = get_tokenizer(request.param)
    assert isinstance(tokenizer, TiktokenTokenizer)
    return tokenizer
