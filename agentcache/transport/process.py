"""Where a middleware's turns are predicted: in the prediction process (the default), or in this process.

The caller's process is CPU-bound under load: an async agent's event loop, httpx and agentcache's own
canonicalization share one core under the GIL, and a background thread adds no core to them. So the prediction
(rendering and tokenizing the prompt, replaying it through the model of the server's cache, about 0.3-0.5 ms of
CPU a turn, and the model's own heap, which the caller's garbage collector would otherwise scan) runs in one
child process that serves every middleware of the interpreter. Only the executor of the prediction changes: the
background worker thread (:mod:`agentcache.transport.background`) still takes the turns in order, sends each
prediction to the process and waits for it with the GIL released, then records the turn and calls the listeners
here, in the caller's context. Every guarantee of the background thread holds as it was.

- **Started lazily**, by the worker thread at the first turn to predict, never on the caller's path: a fresh
  interpreter (``sys.executable``, not ``multiprocessing``, which would import the agent's main module again)
  that imports agentcache and loads the tokenizer and chat template, about a second of CPU on another core. A
  script that exits right after its call waits for that, since no turn may be lost.
- **What is sent**: :class:`~agentcache.transport.predictor.PredictJob`, the canonical body as the bytes that
  went out plus a few numbers; the process parses them itself. The turns that ended while the worker was busy, or
  while it gathered them (:data:`~agentcache.transport.background.GATHER_SECONDS`), go in one message and come
  back in one answer: each message costs the worker a wake-up and the GIL taken back from the event loop. Once
  per middleware, its :class:`~agentcache.transport.predictor.PredictorSpec`: names and paths only.
- **In this process instead** (``predict_in="thread"``, or when a process cannot be used): a tokenizer or
  server prompt given as an object (it would have to be unpickled there, importing the module that defined it),
  no ``sys.executable``, or a process that could not start or build the model. If the process dies, the turns it
  was predicting get no prediction (with the reason), and that middleware's later turns are predicted here, from
  an empty model of the cache; a warning says so. A middleware created later starts a new process.
  :attr:`Predictions.where` and :attr:`Predictions.reason` tell which it is and why.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import itertools
import os
import pickle
import struct
import subprocess
import sys
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, Literal

import agentcache
from agentcache.predict.diff import Divergence
from agentcache.predict.replay import Prediction
from agentcache.servers import ServerPrompt
from agentcache.transport.background import Pending, defer
from agentcache.transport.predictor import PredictJob, Predictor, PredictorSpec

__all__ = ["PredictIn", "Predictions", "main", "process_cpu"]

PredictIn = Literal["process", "thread"]
_HEADER = struct.Struct("<QQ")
_PIPE_BYTES = 1 << 20


class _Gone(Exception):
    """The prediction process cannot be used (it did not start, or it ended)."""


class _Refused(Exception):
    """The prediction process could not build a middleware's predictor from its spec."""


class _Channel:
    """The one prediction process of this interpreter and the pipe to it. Used by the worker thread only, one
    message at a time; ``drop`` alone may come from any thread (a garbage-collected middleware). A process that
    ended is replaced when a middleware that never used it asks for one; those that did lose their model."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._known: set[int] = set()
        self._dropped: list[int] = []
        self.cpu = 0.0
        """The CPU seconds the process has used, as of its last answer."""

    def predict(self, key: int, spec: PredictorSpec, jobs: Sequence[PredictJob]) -> list[Prediction | str | Exception]:
        """The jobs' predictions, in one message each way (their bodies one after the other, as they are)."""
        self.add(key, spec)
        message = ("predict", key, [(len(job.sent), job[1:]) for job in jobs])
        answers = self._ask(message, [job.sent for job in jobs])
        return [_prediction(value) if status == "ok" else RuntimeError(value) for status, value in answers]

    def add(self, key: int, spec: PredictorSpec) -> None:
        """Have the process build the middleware's predictor, unless it has."""
        if key not in self._known:
            try:
                self._ask(("add", key, spec))
            except RuntimeError as exc:
                raise _Refused(f"the prediction process could not build the model of the cache ({exc})") from None
            self._known.add(key)

    def drop(self, key: int) -> None:
        self._dropped.append(key)  # sent before the next message, by the worker thread

    def _ask(self, message: tuple[str, int, object], bodies: Sequence[bytes] = ()) -> Any:
        try:
            process = self._process or self._start()
            assert process.stdin is not None and process.stdout is not None
            while self._dropped:
                key = self._dropped.pop()
                if key in self._known:
                    self._known.discard(key)
                    _write(process.stdin, ("drop", key, None))
            _write(process.stdin, message, bodies)
            process.stdin.flush()
            (status, value, self.cpu), _ = _read(process.stdout)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            gone = _ended(self._process, exc)
            if self._process is not None:  # the next middleware to predict starts a new one
                self._process.kill()
                self._process = None
            self._known.clear()
            raise _Gone(gone) from None
        if status == "error":
            raise RuntimeError(value)
        return value

    def _start(self) -> subprocess.Popen[bytes]:
        if not sys.executable:
            raise OSError("no Python executable to start it with (sys.executable is empty)")
        root = str(Path(agentcache.__file__).resolve().parent.parent)
        code = f"import sys; sys.path.insert(0, {root!r}); from agentcache.transport.process import main; main()"
        self._process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._process.stdin is not None
        _widen(self._process.stdin)
        return self._process

    def close(self) -> None:
        """At exit, after the worker thread has recorded every turn: close the pipe, so that the process ends."""
        if self._process is not None:
            with contextlib.suppress(OSError):
                self._process.stdin.close()  # type: ignore[union-attr]
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5)


def _widen(pipe: IO[bytes]) -> None:
    """Let the pipe hold a batch of bodies (Linux: 1 MiB, an unprivileged process's limit; 64 kB by default), so that
    the worker writes a batch without waiting for the process to read part of it: each wait is a wake-up and the
    GIL taken back from the event loop."""
    try:
        import fcntl  # not on Windows

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, AttributeError, OSError):  # no such call here, or a lower limit: the pipe stays as it is
        pass


def _write(pipe: IO[bytes], message: object, bodies: Sequence[bytes] = ()) -> None:
    """One message: its lengths, the pickled message, then ``bodies`` as they are (request bodies are not
    pickled), in one write. Written apart, the bodies (larger than the pipe's buffer) went out in system calls of
    their own, and each gave up the GIL and waited to take it back from the event loop."""
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    length = sum(map(len, bodies))
    pipe.write(b"".join((_HEADER.pack(len(data), length), data, *bodies)))


def _read(pipe: IO[bytes]) -> tuple[Any, bytes]:
    head = pipe.read(_HEADER.size)
    if len(head) < _HEADER.size:
        raise EOFError("the pipe closed")
    size, length = _HEADER.unpack(head)
    data, body = pipe.read(size), pipe.read(length)
    if len(data) < size or len(body) < length:
        raise EOFError("the pipe closed mid-message")
    return pickle.loads(data), body


_PREDICTION = [field.name for field in dataclasses.fields(Prediction)]


def _plain(prediction: Prediction | str) -> object:
    """A prediction as plain tuples, which pickle several times faster than the dataclasses."""
    if isinstance(prediction, str):
        return prediction
    divergence = prediction.divergence
    values = [getattr(prediction, name) for name in _PREDICTION]
    values[_PREDICTION.index("divergence")] = None if divergence is None else dataclasses.astuple(divergence)
    return tuple(values)


def _prediction(plain: Any) -> Prediction | str:
    if isinstance(plain, str):
        return plain
    fields = dict(zip(_PREDICTION, plain, strict=True))
    if fields["divergence"] is not None:
        fields["divergence"] = Divergence(*fields["divergence"])
    return Prediction(**fields)


def _ended(process: subprocess.Popen[bytes] | None, exc: BaseException) -> str:
    if process is None:
        return f"the prediction process could not start ({type(exc).__name__}: {exc})"
    code = process.poll()
    return f"the prediction process ended ({'still running' if code is None else f'exit status {code}'}: {exc})"


_CHANNEL = _Channel()
atexit.register(_CHANNEL.close)  # atexit runs after the worker thread was joined (concurrent.futures' own hook)
_keys = itertools.count(1)


def process_cpu() -> float:
    """CPU seconds the prediction process has used so far (0 before it starts), for benchmarks: the caller's own
    ``time.process_time()`` does not count it."""
    return _CHANNEL.cpu


class Predictions:
    """Where one middleware's turns are predicted, and the model of the server's cache they go through.

    ``predict`` runs on the background worker thread only (one turn at a time, in order). ``local`` builds the
    in-process predictor, when it is needed: always for ``thread``, for ``process`` only as the fallback."""

    def __init__(self, spec: PredictorSpec | None, local: Callable[[], Predictor], where: PredictIn) -> None:
        self.reason: str | None = None
        """Why the turns are predicted in this process although ``process`` was asked for; None otherwise."""
        if where == "process" and spec is None:
            where, self.reason = "thread", "the tokenizer or the server prompt was given as an object"
        self.where: PredictIn = where
        self._spec = spec
        self._local = local
        self._built: list[Predictor] = []
        """The in-process predictor, once built: closed with this object (a list, which the finalizer can hold
        without holding ``self``)."""
        self._sent = False
        self._key = next(_keys)
        weakref.finalize(self, _forget, self._key, self._built)

    def prepare(self) -> None:
        """Build the predictor now, where it runs (on the worker thread, as every use of the process), and wait for
        it: a predictor that subscribes to KV events must do so before the first request."""
        done = Pending()
        defer(self._build, done)
        done.wait()

    def _build(self) -> None:
        if self.where == "process" and self._spec is not None:
            try:
                _CHANNEL.add(self._key, self._spec)
                return
            except (_Gone, _Refused) as exc:
                self.where, self.reason = "thread", str(exc)
        self._in_process()

    def _in_process(self) -> Predictor:
        if not self._built:
            self._built.append(self._local())
        return self._built[0]

    def predict(self, jobs: Sequence[PredictJob]) -> list[Prediction | str | Exception]:
        """Each turn's prediction, or why there is none, in the order given; an error the prediction raised (here
        or inside the prediction process) in its place, for the caller to raise with that turn alone."""
        if self.where == "process" and self._spec is not None:
            try:
                predictions = _CHANNEL.predict(self._key, self._spec, jobs)
                self._sent = True
                return predictions
            except (_Gone, _Refused) as exc:
                self.where, self.reason = "thread", str(exc)
                if self._sent:  # the model of the cache the process held is lost with it
                    warnings.warn(
                        f"agentcache: {exc}; turns are predicted in this process from now on, from an"
                        " empty model of the cache",
                        stacklevel=2,
                    )
                    return [f"no prediction: {exc}"] * len(jobs)
        return [self._predict_here(job) for job in jobs]

    def _predict_here(self, job: PredictJob) -> Prediction | str | Exception:
        try:
            return self._in_process().predict(job)
        except Exception as exc:
            return exc
        finally:
            time.sleep(0)  # a prediction here holds the GIL for its CPU: let an event loop waiting for it run now


def _forget(key: int, built: list[Predictor]) -> None:
    """A middleware's :class:`Predictions` went: drop its predictor from the process, close the one built here."""
    _CHANNEL.drop(key)
    for predictor in built:
        predictor.close()


def _predict_all(predictor: Predictor, jobs: list[tuple[int, tuple[Any, ...]]], bodies: bytes) -> list[Any]:
    """Each job's answer, ``("ok", prediction)`` or ``("error", why)``: one turn's error is that turn's alone."""
    answers: list[Any] = []
    start = 0
    for length, rest in jobs:
        job = PredictJob(bodies[start : start + length], *rest)
        start += length
        try:
            answers.append(("ok", _plain(predictor.predict(job))))
        except Exception as exc:
            answers.append(("error", f"{type(exc).__name__}: {exc}"))
    return answers


def main() -> None:
    """The prediction process: read messages from stdin, answer each ``add`` and ``predict`` on stdout, until
    stdin closes (the caller's interpreter exited, or died)."""
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print must not corrupt the replies
    requests = sys.stdin.buffer
    predictors: dict[int, Predictor] = {}
    prompts: dict[tuple[str, str], ServerPrompt] = {}
    while True:
        try:
            (kind, key, payload), body = _read(requests)
        except EOFError:
            return
        if kind == "drop":
            if (dropped := predictors.pop(key, None)) is not None:
                dropped.close()
            continue
        try:
            if kind == "add":
                predictors[key] = payload.build(prompts)
                reply: tuple[str, object] = ("ok", None)
            else:
                reply = ("ok", _predict_all(predictors[key], payload, body))
        except Exception as exc:  # answered, so that the caller falls back instead of waiting forever
            reply = ("error", f"{type(exc).__name__}: {exc}")
        _write(replies, (*reply, time.process_time()))
        replies.flush()
