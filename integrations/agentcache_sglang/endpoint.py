"""An SGLang frontend backend that primes every fork, canonicalizes prompt text and accounts each branch's cache hits.

The frontend (``sgl.function`` programs) means to prime a prefix before ``fork``: ``StreamExecutor.fork`` commits
the parent's text with a zero-token ``/generate`` so that it sits in the radix tree when the branches arrive. In
sglang 0.5.23 it decides whether to do so by reading the parent's text *before* waiting for the parent's worker
thread, so when that thread has not yet run the program's last ``+=`` (the usual case) the text looks empty, the
prime is skipped, and the branches all prefill the whole prefix side by side. :class:`CacheAwareEndpoint` primes
the prefix itself on a branch's first request when the frontend did not, once per prefix, with the other branches
waiting for that one prime. Every text it sends goes through agentcache's prose normalization, and every answer's
``meta_info`` is kept, so each fork gets a :class:`ForkReport` of its prefix and of what each branch found cached.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from sglang.lang.backend.runtime_endpoint import RuntimeEndpoint

from agentcache.canon import CanonicalPolicy, VolatileSpan, find_volatile
from agentcache.canon.text import normalize_prose

PRIME, GENERATE, SELECT = "prime", "generate", "select"
_TEXT_ONLY = SimpleNamespace(images_=[], sid="")  # the program state of ``cache_prefix``, which sends a bare string


@dataclass(frozen=True)
class CallReport:
    """One ``/generate`` answer, as the server counted it."""

    kind: str
    """``prime`` (a zero-token request that only fills the cache), ``generate`` or ``select``."""
    executor: str
    """The program state that sent it (``StreamExecutor.sid``); each forked branch has its own."""
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    canonicalized: bool
    """Whether the text sent differs from the program's text (line endings or Unicode normalization)."""


@dataclass
class ForkReport:
    """A fork: the prefix primed once, and each branch's first request after it."""

    prefix_tokens: int
    """The primed prefix, as the server tokenized it."""
    prime_cached: int
    """How much of the prefix the server already held when it was primed: reuse from earlier runs."""
    primed_by: str
    """``frontend`` (its own commit before the fork) or ``agentcache`` (the frontend skipped it)."""
    volatile: tuple[VolatileSpan, ...]
    """Volatile values (timestamps, ids) in the prefix: the next run's prefix diverges at the first of them."""
    branches: list[CallReport] = field(default_factory=list)

    @property
    def covered(self) -> int:
        """Branches whose cached tokens cover the whole prefix: they prefilled only their own tokens."""
        return sum(branch.cached_tokens >= self.prefix_tokens for branch in self.branches)

    @property
    def prefill_saved(self) -> int:
        """Prefix tokens the branches did not prefill again, against sending each branch alone without a cache."""
        return sum(min(branch.cached_tokens, self.prefix_tokens) for branch in self.branches)


class _CanonicalView:
    """A program state as the server should see it: the executor, with its text canonicalized.

    ``RuntimeEndpoint`` builds each request from the executor it is given, so handing it this view changes the
    text sent and nothing else: the program keeps its own text, and the answer goes back to it unchanged.
    """

    def __init__(self, executor: Any, original: str, text: str, fork: ForkReport | None) -> None:
        self.executor = executor
        self.text_ = text
        self.canonicalized = text != original
        self.fork = fork
        """The fork whose branch this is, until the branch's first answer is accounted to it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.executor, name)


class CacheAwareEndpoint(RuntimeEndpoint):  # type: ignore[misc]  # sglang ships no type information
    """``RuntimeEndpoint`` that primes every fork, sends canonical prompt text and reports each call and fork.

    Use it where a ``RuntimeEndpoint`` goes: ``sgl.set_default_backend(CacheAwareEndpoint(url))``. ``policy``
    controls the text normalization (``CanonicalPolicy(normalize_newlines=False, normalize_unicode=False)``
    sends the program's text as it is); nothing else about a request changes. ``prime_forks=False`` leaves
    priming to the frontend, for reports on what it does alone. Reports accumulate for the endpoint's lifetime,
    until :meth:`reset`.
    """

    def __init__(
        self, base_url: str, *, policy: CanonicalPolicy | None = None, prime_forks: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(base_url, **kwargs)
        self.policy = policy or CanonicalPolicy()
        self.prime_forks = prime_forks
        self._lock = threading.Lock()
        self._priming = threading.Lock()  # held across a prime, so a branch's siblings wait for that one prime
        self._calls: list[CallReport] = []
        self._forks: list[ForkReport] = []
        self._open: dict[str, ForkReport] = {}  # the latest fork of each canonical prefix, for branches to join
        self._seen: set[str] = set()  # program states that have sent a request

    @property
    def calls(self) -> list[CallReport]:
        """Every answer so far, in the order they came back."""
        with self._lock:
            return list(self._calls)

    @property
    def forks(self) -> list[ForkReport]:
        """Every fork so far, in the order they were primed."""
        with self._lock:
            return list(self._forks)

    def reset(self) -> None:
        """Forget every report."""
        with self._lock:
            self._calls.clear()
            self._forks.clear()
            self._open.clear()
            self._seen.clear()

    def canonical(self, text: str) -> str:
        return normalize_prose(text, self.policy)

    # The requests the frontend sends: each goes out with canonical text and its answer is recorded.

    def commit_lazy_operations(self, s: Any) -> None:
        self._prime(s.text_, s, "frontend")

    def fill_image(self, s: Any) -> None:
        self._prime(s.text_, s, "frontend")

    def cache_prefix(self, prefix_str: str) -> None:
        self._prime(prefix_str, _TEXT_ONLY, "frontend")

    def generate(self, s: Any, sampling_params: Any) -> tuple[str, dict[str, Any]]:
        view = self._view(s)
        text, meta = super().generate(view, sampling_params)
        self._record(GENERATE, view, meta)
        return text, meta

    def generate_stream(self, s: Any, sampling_params: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        view = self._view(s)
        meta: dict[str, Any] | None = None
        for chunk, meta in super().generate_stream(view, sampling_params):
            yield chunk, meta
        if meta is not None:  # the last chunk carries the final counts
            self._record(GENERATE, view, meta)

    def select(self, s: Any, *args: Any, **kwargs: Any) -> Any:
        return super().select(self._view(s), *args, **kwargs)

    def _generate_http_request(self, s: _CanonicalView, data: dict[str, Any]) -> Any:
        """``select``'s requests (given the view ``select`` was): the prefix, then each choice appended, the
        choices normalized too."""
        text = data.get("text")
        if isinstance(text, str):
            data["text"] = self.canonical(text)
        elif isinstance(text, list):
            data["text"] = [self.canonical(t) for t in text]
        answer = super()._generate_http_request(s, data)
        for one in answer if isinstance(answer, list) else [answer]:
            self._record(SELECT, s, one["meta_info"])
        return answer

    def _prime(self, original: str, s: Any, by: str) -> ForkReport:
        """Fill the cache with a prefix (zero new tokens), as the frontend means to before a fork."""
        text = self.canonical(original)
        data = {"text": text, "sampling_params": {"max_new_tokens": 0}}
        meta = super()._generate_http_request(s, data)["meta_info"]
        fork = ForkReport(meta["prompt_tokens"], meta.get("cached_tokens", 0), by, tuple(find_volatile(text)))
        with self._lock:
            self._forks.append(fork)
            self._open[text] = fork
        self._record(PRIME, _CanonicalView(s, original, text, None), meta)
        return fork

    def _view(self, s: Any) -> _CanonicalView:
        return _CanonicalView(s, s.text_, self.canonical(s.text_), self._fork_of(s))

    def _fork_of(self, s: Any) -> ForkReport | None:
        """The fork of a branch about to send its first request, primed now if the frontend did not prime it
        (None when it was not primed at all)."""
        with self._lock:
            if s.sid in self._seen:
                return None
            self._seen.add(s.sid)
        if not s.fork_start_text_pos:  # not a branch, or forked from an empty prefix
            return None
        parent = s.text_[: s.fork_start_text_pos]
        with self._priming:
            fork = self._open.get(self.canonical(parent))
            if fork is None and self.prime_forks:
                fork = self._prime(parent, s, "agentcache")
            return fork

    def _record(self, kind: str, view: _CanonicalView, meta: dict[str, Any]) -> None:
        report = CallReport(
            kind,
            view.executor.sid,
            meta["prompt_tokens"],
            meta.get("cached_tokens", 0),
            meta.get("completion_tokens", 0),
            view.canonicalized,
        )
        with self._lock:
            self._calls.append(report)
            if view.fork is not None:  # the branch's first answer
                view.fork.branches.append(report)
                view.fork = None
