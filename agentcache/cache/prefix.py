"""The longest common prefix of two token sequences (or strings): the quantity every prefix cache is about."""

from __future__ import annotations

from array import array
from typing import TypeVar

S = TypeVar("S", str, bytes, array)  # type: ignore[type-arg]


def common_prefix(a: S, b: S) -> int:
    """Length of the common prefix of two strings or token arrays, by C-speed slice comparisons."""
    low, high = 0, min(len(a), len(b))
    if a[:high] == b[:high]:
        return high
    while low < high:  # invariant: a[:low] == b[:low] and a[:high + 1] != b[:high + 1]
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low
