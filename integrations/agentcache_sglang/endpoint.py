"""An SGLang frontend backend that primes every fork and accounts each branch's cache hits.

The frontend (``sgl.function`` programs) means to prime a prefix before ``fork``: ``StreamExecutor.fork`` commits
the parent's text with a zero-token ``/generate`` so that it sits in the radix tree when the branches arrive. In
sglang 0.5.23 it decides whether to do so by reading the parent's text *before* waiting for the parent's worker
thread, so when that thread has not yet run any of the program's text (a program that forks right after its
first ``+=``) the text looks empty, the prime is skipped, and concurrent branches each prefill the whole prefix.
:class:`CacheAwareEndpoint` primes the prefix itself on a branch's first request when the frontend did not, once
per program and prefix, the other branches waiting for that one prime. Every answer's ``meta_info`` is kept, so
each fork gets a :class:`ForkReport` of its prefix and of what each branch found cached.

A program's text is sent as the program built it. It mixes what the program writes with what it was given (a
user's question, a tool's output), which the endpoint cannot tell apart, and agentcache never changes text the
agent did not write. A program whose text is all its own may ask for prose normalization with ``policy``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import threading
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from sglang.lang.backend.runtime_endpoint import RuntimeEndpoint
from sglang.utils import http_request

from agentcache.backends import FLUSH_WAIT
from agentcache.canon import CanonicalPolicy, VolatileSpan, find_volatile, normalize_prose

PRIME, GENERATE, SELECT = "prime", "generate", "select"
#: The program state of ``cache_prefix``, which sends a bare string for no program in particular.
_TEXT_ONLY = SimpleNamespace(images_=[], sid="", arguments=None)
#: Primed prefixes remembered for branches to find; a fork's branches arrive right after its prime.
MAX_PRIMED = 1024
#: The default policy: the program's text, as written.
AS_WRITTEN = CanonicalPolicy(normalize_newlines=False, normalize_unicode=False)


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
    """Whether the text sent differs from the program's text (line endings or Unicode normalization, when the
    endpoint's ``policy`` asks for them)."""


@dataclass
class ForkReport:
    """A fork: its prefix, primed once, and each branch's first request after it."""

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
        """Prefix tokens not prefilled, against each branch sent alone to an empty cache: what the branches found
        cached of the prefix, less what the prime itself prefilled."""
        reused = sum(min(branch.cached_tokens, self.prefix_tokens) for branch in self.branches)
        return reused - (self.prefix_tokens - self.prime_cached)


@dataclass(eq=False)
class _Primed:
    """A prefix put into the cache, or being put there, for the branches of one program to find."""

    program: Any
    """The program's arguments, shared by a program state and its forks: part of the key, and held so that its
    ``id()`` is not reused while the entry lives."""
    done: threading.Event = field(default_factory=threading.Event)
    report: ForkReport | None = None
    """Set when the prime succeeded."""
    joined: bool = False
    """Whether a branch has joined, so the report is listed."""


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
    """``RuntimeEndpoint`` that primes every fork and reports each call and fork.

    Use it where a ``RuntimeEndpoint`` goes: ``sgl.set_default_backend(CacheAwareEndpoint(url))``. The program's
    text is sent as it is, unless ``policy`` asks for prose normalization (``CanonicalPolicy()``: line endings and
    Unicode, outside fenced code), which suits only a program whose text is all its own; nothing else about a
    request changes. ``prime_forks=False`` leaves priming to the frontend, for reports on what it does alone. A
    prime agentcache adds that fails is a warning, and the branches go on unprimed. Reports accumulate for the
    endpoint's lifetime, until :meth:`reset`.
    """

    def __init__(
        self, base_url: str, *, policy: CanonicalPolicy | None = None, prime_forks: bool = True, **kwargs: Any
    ) -> None:
        super().__init__(base_url, **kwargs)
        self.policy = policy or AS_WRITTEN
        self.prime_forks = prime_forks
        self._lock = threading.Lock()
        self._calls: list[CallReport] = []
        self._forks: list[ForkReport] = []
        self._primed: OrderedDict[tuple[int, bytes], _Primed] = OrderedDict()

    @property
    def calls(self) -> list[CallReport]:
        """Every answer so far, in the order they came back."""
        with self._lock:
            return list(self._calls)

    @property
    def forks(self) -> list[ForkReport]:
        """Every fork a branch joined, in the order the first branch joined (copies: branches may still come)."""
        with self._lock:
            return [dataclasses.replace(fork, branches=list(fork.branches)) for fork in self._forks]

    def reset(self) -> None:
        """Forget every report."""
        with self._lock:
            self._calls.clear()
            self._forks.clear()
            self._primed.clear()

    def flush_cache(self, wait: float = FLUSH_WAIT) -> None:
        """Flush the server's cache as soon as it is idle, waiting up to ``wait`` seconds, and forget which
        prefixes were primed: they are gone. SGLang refuses a flush while a request runs, and a request still runs
        for a moment after its answer has come back (the scheduler frees it at its next step), so a flush right
        after a program's last answer can find the branches it just answered running; given a timeout, the server
        defers the flush until it is idle. A server too old for the timeout ignores it and flushes at once."""
        answer = http_request(
            f"{self.base_url}/flush_cache?timeout={wait:g}", api_key=self.api_key, verify=self.verify, method="POST"
        )
        self._assert_success(answer)
        with self._lock:
            self._primed.clear()

    def canonical(self, text: str) -> str:
        return normalize_prose(text, self.policy)

    # The requests the frontend sends: each goes out with the policy's text and its answer is recorded.

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

    # Priming.

    def _key(self, s: Any, text: str) -> tuple[int, bytes]:
        """One program's prefix: its forks share its arguments object, other programs (``run_batch``, or the same
        function run again) do not, so their branches never join each other's forks."""
        return id(s.arguments), hashlib.blake2b(text.encode(), digest_size=16).digest()

    def _prime(self, original: str, s: Any, by: str, primed: _Primed | None = None) -> _Primed:
        """Fill the cache with a prefix (zero new tokens) and remember it for the program's branches."""
        text = self.canonical(original)
        key = self._key(s, text)
        if primed is None:
            primed = _Primed(s.arguments)
            self._remember(key, primed)
        try:
            data = {"text": text, "sampling_params": {"max_new_tokens": 0}}
            meta = super()._generate_http_request(s, data)["meta_info"]
            primed.report = ForkReport(
                meta.get("prompt_tokens", 0), meta.get("cached_tokens", 0), by, tuple(find_volatile(text))
            )
        except BaseException:  # forgotten, so that a later branch of the program may try again
            with self._lock:
                if self._primed.get(key) is primed:
                    del self._primed[key]
            raise
        finally:
            primed.done.set()  # after the report is set: the waiting branches read it
        self._record(PRIME, _CanonicalView(s, original, text, None), meta)
        return primed

    def _remember(self, key: tuple[int, bytes], primed: _Primed) -> None:
        with self._lock:
            self._primed[key] = primed
            self._primed.move_to_end(key)
            while len(self._primed) > MAX_PRIMED:
                self._primed.popitem(last=False)

    def _view(self, s: Any) -> _CanonicalView:
        return _CanonicalView(s, s.text_, self.canonical(s.text_), self._fork_of(s))

    def _fork_of(self, s: Any) -> ForkReport | None:
        """The fork of a branch about to send its first request, primed now if the frontend did not prime it.

        None when this is not a branch's first request, or the prefix is not primed (``prime_forks=False``, or
        the prime failed). Each executor is marked once seen, so nothing grows with the programs run."""
        if getattr(s, "_agentcache_seen", False) or not s.fork_start_text_pos:
            return None
        s._agentcache_seen = True
        parent = s.text_[: s.fork_start_text_pos]
        key = self._key(s, self.canonical(parent))
        with self._lock:
            primed = self._primed.get(key)
            owner = primed is None and self.prime_forks
            if owner:
                primed = self._primed[key] = _Primed(s.arguments)
        if primed is None:
            return None
        if owner:
            try:
                self._prime(parent, s, "agentcache", primed)
            except Exception as exc:  # priming only saves work: the branch goes on without it
                warnings.warn(f"agentcache: the fork's prefix was not primed ({exc})", stacklevel=2)
        primed.done.wait()
        with self._lock:
            if primed.report is not None and not primed.joined:
                primed.joined = True
                self._forks.append(primed.report)
            return primed.report

    def _record(self, kind: str, view: _CanonicalView, meta: dict[str, Any]) -> None:
        report = CallReport(
            kind,
            view.executor.sid,
            meta.get("prompt_tokens", 0),
            meta.get("cached_tokens", 0),
            meta.get("completion_tokens", 0),
            view.canonicalized,
        )
        with self._lock:
            self._calls.append(report)
            if view.fork is not None:  # the branch's first answer
                view.fork.branches.append(report)
                view.fork = None
