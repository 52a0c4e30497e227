"""One request as a client-side cache model served it: its segments, its tokens, and the predicted hit."""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from agentcache.predict.prompt import Segment


@dataclass(frozen=True)
class Served:
    """One request as the model saw it."""

    segments: list[Segment]
    tokens: array[int]
    """agentcache's rendering of the request, tokenized segment by segment (what drift is located in)."""
    starts: list[int]
    cached: int
    """The cached tokens predicted for the request."""
    prompt_tokens: int = -1
    """Prompt tokens as the modelled server counts them; ``len(tokens)`` unless the server's own prompt was used."""
    exact: array[int] | None = None
    """The server's own prompt tokens, when the replay has its chat template and tokenizer."""
    written: int = 0
    """Prompt tokens the hosted API would bill as cache writes (``cache_creation_input_tokens``,
    ``cache_write_tokens``); 0 for the engines."""
    cost: float | None = None
    """The prompt's price in uncached-input-token equivalents under the hosted model's rule; None for engines."""

    def __post_init__(self) -> None:
        if self.prompt_tokens < 0:
            object.__setattr__(self, "prompt_tokens", len(self.tokens))
