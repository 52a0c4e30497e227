"""Shared by the backend tests: what a server's detokenizer makes of the ids it generated."""

from __future__ import annotations

from collections.abc import Sequence

from agentcache.tokens.hf import HFTokenizer


def stable_text(tokenizer: HFTokenizer, ids: Sequence[int]) -> str:
    """``ids`` decoded as the servers decode them, up to what they may hold back.

    The servers drop special ids and ids missing from tokenizer.json (a random-weight model emits both now and
    then), so this decodes without them; and an output that ends inside a UTF-8 character ends in U+FFFD here but
    in nothing on vLLM, which waits for a next token that never comes. Compare with ``text.rstrip("\\ufffd")``.
    """
    return str(tokenizer.hf.decode(list(ids), skip_special_tokens=True)).rstrip("\ufffd")
