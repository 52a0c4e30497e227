"""Helpers shared by the cache-model tests: deterministic token runs and a plain reference prefix length."""

from __future__ import annotations

import random
from collections.abc import Sequence


def random_tokens(seed: int, n: int) -> list[int]:
    rng = random.Random(seed)
    return [rng.randrange(50_000) for _ in range(n)]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Token by token, as obviously right as possible: the oracle the models are checked against."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n
