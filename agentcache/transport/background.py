"""The work that follows a response, run on one background thread so that the caller never waits for it.

Predicting a turn renders and tokenizes the whole prompt and replays it through the model of the server's cache:
about a millisecond of CPU. Done where the response body ends, it ran on the caller's thread, which for an async
client is the event loop: at 64 concurrent sessions every request waited for the predictions of the others. So the
middleware hands each finished call to :func:`defer`, and the caller gets its response at once.

One worker thread, first in first out: turns are predicted in the order their responses ended, which is the order
the server cached them in (the model of the cache is stateful). The worker runs each job in the context of the
call that ended (context variables: tracing, scopes), and gives up the GIL between jobs so an event loop waiting
for it is not held for a whole batch.

Whoever reads records waits for the jobs it depends on through a :class:`Pending`: a ledger's reads wait for the
turns still being recorded into it, a :class:`~agentcache.transport.session.Scope` for its own, :func:`settle` for
all. The worker drains its queue before the interpreter exits (``concurrent.futures`` joins it), so no turn of a
call that ended is lost to a short script.
"""

from __future__ import annotations

import contextvars
import threading
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["Pending", "defer", "settle"]

_WORKER_NAME = "agentcache-turns"


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
            return self._idle.wait_for(lambda: not self._count, timeout)


_ALL = Pending()
_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def defer(job: Callable[[], object], *waiters: Pending) -> None:
    """Run ``job`` on the worker after every job deferred before it, in the caller's current context; each of
    ``waiters`` (and :func:`settle`) counts it until it has run. An exception it raises becomes a warning."""
    global _executor
    counted = (_ALL, *waiters)
    for pending in counted:
        pending.add()
    context = contextvars.copy_context()

    def run() -> None:
        try:
            context.run(job)
        except Exception as exc:  # the caller is long gone: nobody else could hear of it
            warnings.warn(f"agentcache: a turn could not be recorded ({type(exc).__name__}: {exc})", stacklevel=1)
        finally:
            for pending in counted:
                pending.done()
            time.sleep(0)  # let a thread waiting for the GIL (an event loop) run before the next job

    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_WORKER_NAME)
        _executor.submit(run)


def settle(timeout: float | None = None) -> bool:
    """Wait until every turn of a call that has ended is recorded (all ledgers, scopes and listeners); True when
    all are, False when ``timeout`` seconds passed first."""
    return _ALL.wait(timeout)
