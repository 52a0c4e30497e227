"""Prefill accounting: how many prompt tokens a run made the server compute, against what it could have cost.

Three figures per run, all from the requests it sent (:class:`~agentcache.fork.Exchange`):

- **server prefill**: ``sum(prompt_tokens - cached_tokens)`` over every request, priming included, as the
  server reported it;
- **naive**: every request but the primings sent on its own with nothing cached, i.e. ``sum(prompt_tokens)``;
  that is what a search pays when each node's full prompt is sent independently;
- **lower bound**: the unique prompt tokens of the run, the size of the token trie of every prompt sent, less the
  positions the server itself wrote while decoding (a generated token has KV once the next one is decoded, so a
  later prompt that extends an output never needs it prefilled; the last generated token never ran through the
  model, so it does count). No schedule of the same requests can prefill less, given a cache holding nothing of
  them at the start. ``unique_tokens`` is the plain trie size, decoded positions included.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentcache.search.fork import Exchange


class TokenTrie:
    """A trie over token ids, keyed flat as ``(node, token) -> child`` so it costs one dict entry per token."""

    def __init__(self) -> None:
        self._children: dict[tuple[int, int], int] = {}

    def __len__(self) -> int:
        """Trie nodes, the root excluded: the number of unique (prefix, token) positions inserted."""
        return len(self._children)

    def insert(self, tokens: Sequence[int]) -> None:
        node = 0
        for token in tokens:
            child = self._children.get((node, token))
            if child is None:
                child = self._children[(node, token)] = len(self._children) + 1
            node = child

    def walk(self, tokens: Sequence[int]) -> list[int]:
        """The nodes along ``tokens`` as far as the trie holds them."""
        node, path = 0, []
        for token in tokens:
            child = self._children.get((node, token))
            if child is None:
                break
            path.append(node := child)
        return path


def trie_size(sequences: Iterable[Sequence[int]]) -> int:
    """Unique tokens of ``sequences`` counted as a prefix cache stores them: shared prefixes once."""
    trie = TokenTrie()
    for tokens in sequences:
        trie.insert(tokens)
    return len(trie)


def prefill_lower_bound(exchanges: Sequence[Exchange]) -> tuple[int, int]:
    """``(unique_tokens, lower_bound)`` of the prompts in ``exchanges``; see the module docstring."""
    trie = TokenTrie()
    for ex in exchanges:
        trie.insert(ex.prompt)
    decoded: set[int] = set()
    for ex in exchanges:
        if len(ex.output) > 1:
            path = trie.walk(ex.prompt + ex.output[:-1])
            decoded.update(path[len(ex.prompt) :])
    return len(trie), len(trie) - len(decoded)


@dataclass(frozen=True)
class PrefillAccount:
    """The prefill of one run, against its naive cost and its lower bound (token counts)."""

    requests: int
    prompt_tokens: int
    """Every prompt token sent, cached or not."""
    generated_tokens: int
    server_prefill: int | None
    """``sum(prompt - cached)`` as reported; None when a request came back without a cache report."""
    naive_prefill: int
    """Each non-priming request's whole prompt, as if sent alone to an empty cache."""
    unique_tokens: int
    lower_bound: int

    @property
    def over_lower_bound(self) -> float | None:
        """``server_prefill / lower_bound``: 1.0 is perfect sharing."""
        if self.server_prefill is None or not self.lower_bound:
            return None
        return self.server_prefill / self.lower_bound

    @property
    def naive_over_server(self) -> float | None:
        """How many times more the naive run prefills than this one did."""
        if not self.server_prefill:
            return None
        return self.naive_prefill / self.server_prefill

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "generated_tokens": self.generated_tokens,
            "server_prefill": self.server_prefill,
            "naive_prefill": self.naive_prefill,
            "unique_tokens": self.unique_tokens,
            "lower_bound": self.lower_bound,
            "over_lower_bound": self.over_lower_bound,
            "naive_over_server": self.naive_over_server,
        }


def account(exchanges: Iterable[Exchange]) -> PrefillAccount:
    """Add up the prefill of a run's requests."""
    done = list(exchanges)
    prefilled = [ex.prefilled for ex in done]
    unique, bound = prefill_lower_bound(done)
    return PrefillAccount(
        requests=len(done),
        prompt_tokens=sum(ex.prompt_tokens for ex in done),
        generated_tokens=sum(len(ex.output) for ex in done),
        server_prefill=None if any(p is None for p in prefilled) else sum(p for p in prefilled if p is not None),
        naive_prefill=sum(ex.prompt_tokens for ex in done if ex.kind != "prime"),
        unique_tokens=unique,
        lower_bound=bound,
    )
