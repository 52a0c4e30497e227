"""The one tokenizer interface the rest of agentcache talks to.

A prefix cache matches token ids, not characters, so every cache prediction needs two answers: which ids a
text becomes, and which token a character lands in (to turn "the prompts differ at character 1234" into "the
cached prefix ends at token 310"). Implementations only say where each token starts and ends; the position
arithmetic lives here once.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from bisect import bisect_right
from collections.abc import Sequence

from agentcache.errors import TokenizerError


class Tokenizer(ABC):
    """Text to token ids and back, with character positions for every token.

    ``name`` is the vocabulary name (``"o200k_base"``) or the path of the ``tokenizer.json`` it came from.
    Surrogate code points, which JSON escapes can carry but UTF-8 cannot, are each encoded as U+FFFD, so
    character positions always index the text the caller passed.
    """

    name: str

    @abstractmethod
    def encode(self, text: str) -> list[int]:
        """The token ids a server would see for ``text`` (special-token rules: see the implementation)."""

    @abstractmethod
    def decode(self, tokens: Sequence[int]) -> str:
        """Text of ``tokens``; bytes that do not form whole UTF-8 characters become U+FFFD."""

    @abstractmethod
    def encode_with_spans(self, text: str) -> tuple[list[int], list[int], list[int]]:
        """``(tokens, starts, ends)``: token i holds bytes of the characters ``text[starts[i]:ends[i]]``.

        A token that holds only part of a multi-byte character still spans that whole character, so both
        lists are non-decreasing and neighbouring spans may share a character.
        """

    def count(self, text: str) -> int:
        """Number of tokens ``text`` costs."""
        return len(self.encode(text))

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[int]]:
        """``(tokens, offsets)``: ``offsets[i]`` is the index in ``text`` of the character token i starts in.

        A token that begins in the middle of a multi-byte character maps to that character's start.
        """
        tokens, starts, _ = self.encode_with_spans(text)
        return tokens, starts

    def token_index(self, text: str, char_pos: int) -> int:
        """Index of the first token holding any byte of ``text[char_pos]``; ``len(text)`` -> number of tokens.

        Searching the span ends rather than the starts matters when a token ends with the first bytes of a
        character and the next token carries the rest: the character begins in the earlier token, so a change
        to it already changes that token.
        """
        if not 0 <= char_pos <= len(text):
            raise TokenizerError(
                f"{self.name}: character position {char_pos} is outside the text (0..{len(text)}); "
                "pass an index into the same text that was tokenized"
            )
        _, _, ends = self.encode_with_spans(text)
        return bisect_right(ends, char_pos)


_SURROGATE = re.compile("[\ud800-\udfff]")


def replace_surrogates(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD, one character for one."""
    return _SURROGATE.sub("\ufffd", text)


def unknown_ids_error(name: str, unknown: Sequence[int], known: str) -> TokenizerError:
    """The error for ids outside the vocabulary, shared so both tokenizers word it the same way."""
    shown = ", ".join(str(t) for t in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
    return TokenizerError(
        f"{name}: cannot decode token ids not in the vocabulary ({shown}); valid ids are {known}. "
        "Decode ids produced by this same tokenizer."
    )
