"""The work that follows a response, run on one background thread so that the caller never waits for it.

Predicting a turn renders and tokenizes the whole prompt and replays it through the model of the server's cache:
about a millisecond of CPU. Done where the response body ends, it ran on the caller's thread, which for an async
client is the event loop: at 64 concurrent sessions every request waited for the predictions of the others. So the
middleware hands each finished call to :func:`defer`, and the caller gets its response at once.

One worker thread, first in first out: turns are predicted in the order their responses ended, which is the order
the server cached them in (the model of the cache is stateful). The worker runs each job in the context of the
call that ended (context variables: tracing, scopes). Jobs wait in a queue that the worker drains: a call that ends
while the worker is busy only appends to it, and the worker goes from job to job without sleeping. Each wake-up
costs both threads a switch and the GIL handed back and forth, several times the CPU of the job itself: a pool
task per job, with its future and a yield after it, cost the caller's process 0.13 ms of CPU a turn on its own.
So the worker, once woken, first gathers the calls that end within :data:`GATHER_SECONDS`, and their turns are
predicted in one batch; whoever waits for turns (below) cuts that short.

Whoever reads records waits for the jobs it depends on through a :class:`Pending`: a ledger's reads wait for the
turns still being recorded into it, a :class:`~agentcache.transport.session.Scope` for its own, :func:`settle` for
all. The worker drains its queue before the interpreter exits (``concurrent.futures`` joins it), so no turn of a
call that ended is lost to a short script.
"""

from __future__ import annotations

import contextvars
import threading
import warnings
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["Pending", "defer", "settle"]

_WORKER_NAME = "agentcache-turns"
#: How long the worker, woken by a job, waits for more before it starts. 64 sessions at 250 ms a call end 256 calls
#: a second: about 8 turns share each wake-up (one each before), and a burst of them shares one. Nobody waits for
#: it: a turn's times are taken as its call ends, and a reader of the turns hurries the worker.
GATHER_SECONDS = 0.05


class Pending:
    """A count of deferred jobs that someone may wait for."""

    def __init__(self) -> None:
        self._count = 0
        self._idle = threading.Condition()

    def add(self) -> None:
        with self._idle:
            self._count += 1

    def done(self) -> None:
        with self._idle:
            self._count -= 1
            if not self._count:
                self._idle.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until none is left; True when none is. On the worker itself (a listener reading the ledger), the
        jobs after the running one cannot run while it waits, so it does not wait."""
        with self._idle:
            if threading.current_thread().name.startswith(_WORKER_NAME):
                return not self._count
            if self._count:
                _hurry.set()  # someone waits: the worker stops gathering
            return self._idle.wait_for(lambda: not self._count, timeout)


_ALL = Pending()
_hurry = threading.Event()
"""Set when someone waits for jobs: the worker starts at once."""
_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()
_jobs: deque[tuple[contextvars.Context, Callable[[], object], tuple[Pending, ...]]] = deque()
"""The jobs deferred and not yet taken by the worker, oldest first."""
_draining = False
"""Whether the worker is draining :data:`_jobs` (set and cleared under :data:`_lock`)."""


def defer(job: Callable[[], object], *waiters: Pending) -> None:
    """Run ``job`` on the worker after every job deferred before it, in the caller's current context; each of
    ``waiters`` (and :func:`settle`) counts it until it has run. An exception it raises becomes a warning."""
    global _executor, _draining
    counted = (_ALL, *waiters)
    for pending in counted:
        pending.add()
    item = (contextvars.copy_context(), job, counted)
    with _lock:
        _jobs.append(item)
        if _draining:  # the worker takes it after the jobs before it, without being woken
            return
        _draining = True
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_WORKER_NAME)
        _executor.submit(_drain)


def _drain() -> None:
    """Run the queued jobs in order until none is left, once more have had :data:`GATHER_SECONDS` to come."""
    global _draining
    _hurry.wait(GATHER_SECONDS)
    _hurry.clear()
    while True:
        with _lock:
            if not _jobs:
                _draining = False
                return
            context, job, counted = _jobs.popleft()
        try:
            context.run(job)
        except Exception as exc:  # the caller is long gone: nobody else could hear of it
            warnings.warn(f"agentcache: a turn could not be recorded ({type(exc).__name__}: {exc})", stacklevel=1)
        finally:
            for pending in counted:
                pending.done()


def settle(timeout: float | None = None) -> bool:
    """Wait until every turn of a call that has ended is recorded (all ledgers, scopes and listeners); True when
    all are, False when ``timeout`` seconds passed first."""
    return _ALL.wait(timeout)
