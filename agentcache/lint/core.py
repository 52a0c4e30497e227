"""The lint engine: rules, findings, the registry of file kinds, and the walk that hands each file to its checker.

A file kind (Python source, tool-schema JSON, trace JSONL) is chosen by suffix and owns a family of rules. A
checker is pure: it reads one file's bytes and returns findings, plus the file's canonical bytes when it can
rewrite it; the engine alone touches the disk, and writes fixes only after every file was checked, so a usage
error never leaves half the files rewritten.
"""

from __future__ import annotations

import gc
import os
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agentcache.cache.options import CacheOptions
from agentcache.errors import InputError
from agentcache.lint.config import Config


@dataclass(frozen=True)
class Rule:
    """A stable code (``AC`` + three digits, never reused) and what it means."""

    code: str
    name: str
    """Kebab-case name, as ruff names its rules."""
    summary: str
    """One line: what the rule finds."""
    hint: str
    """How to fix a finding of this rule."""
    fixable: bool = False
    """``--fix`` rewrites the file so that the finding disappears."""


@dataclass(frozen=True)
class Finding:
    """One problem at one place. Lines and columns are 1-based and count Unicode code points; the end is
    exclusive (the column just past the last character), as SARIF regions are."""

    path: str
    line: int
    column: int
    code: str
    message: str
    hint: str
    end_line: int | None = None
    end_column: int | None = None

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.path, self.line, self.column, self.code, self.message)


@dataclass(frozen=True)
class SourceFile:
    """A file handed to a checker. ``explicit`` tells a file named on the command line from one found by walking
    a directory: a checker may refuse a walked file that is not its kind, but must judge a named one."""

    path: Path
    display: str
    data: bytes
    explicit: bool
    cache: CacheOptions | None = None
    """The server model trace files are replayed through (its ``model_dir`` renders the model's own template);
    None for explain's default."""
    lenient: bool = False
    """Named, but refused like a walked file when it is not the checker's kind (``--skip-unrecognized``)."""

    @property
    def must_judge(self) -> bool:
        """Whether the checker must judge the file as its kind (named, not leniently), not refuse it."""
        return self.explicit and not self.lenient


@dataclass(frozen=True)
class Checked:
    """A checker's verdict on one file. ``rewrite`` is the file's canonical bytes, when the checker can produce
    them; writing them fixes every finding whose rule is fixable."""

    findings: tuple[Finding, ...] = ()
    rewrite: bytes | None = None
    note: str | None = None
    """Why the file was not (fully) checked, when it was not: not a finding, since nothing is known to be wrong."""


class NotThisKind(Exception):
    """Raised by a checker for a file whose suffix matched but whose content is not its kind (a ``.json`` file
    holding no tools). A walked file is then skipped; a named one is a usage error. With ``note``, the skip is
    reported as a note (a ``.jsonl`` dataset that looks like chat data but is no trace)."""

    def __init__(self, reason: str, note: bool = False) -> None:
        super().__init__(reason)
        self.note = note


Checker = Callable[[SourceFile], Checked]


class Session(Protocol):
    """A checker for one lint run whose files inform each other (a Python module reads helpers in others)."""

    def check(self, source: SourceFile) -> Checked:
        """The verdict on one file, with what the files checked before it taught."""

    def revisit(self) -> Mapping[Path, Hashable]:
        """Files checked too early, in the order to check them again, each with why (what was learned since that
        it may read): what files checked after them taught may change their verdict. A parallel run checks a file
        again in a worker as soon as it is named here, and again when its why changes (:class:`_Early`)."""

    def lesson(self) -> object:
        """What the last :meth:`check` read from this session and taught it, picklable: a worker process of a
        parallel run sends it with the verdict, for the parent's :meth:`adopt`."""

    def adopt(self, lesson: object) -> bool:
        """Learn what a check in another process taught, when it read there what it would read here; False: the
        verdict may differ here, so the file must be checked here again."""

    def state(self) -> object:
        """What the files checked so far taught, picklable: a worker process's session :meth:`resume` s from it
        to check again, in parallel, the files :meth:`revisit` names."""

    def resume(self, state: object) -> None:
        """Know what another session knew (its :meth:`state`), and nothing else."""


@dataclass(frozen=True)
class FileKind:
    """A family of rules and the files it checks."""

    name: str
    suffixes: tuple[str, ...]
    rules: tuple[Rule, ...]
    check: Checker
    session: Callable[[Mapping[str, Any]], Session] | None = None
    """Makes the checker of one run from the settings of ``[tool.agentcache.lint]``, when files of this kind inform
    each other or read settings; ``check`` judges a file alone, with the defaults."""


UNPARSABLE = Rule(
    "AC001",
    "unparsable-file",
    "a tool-schema file cannot be parsed, so none of its rules could run",
    "fix the syntax error (or the encoding) the message names",
)

#: Directories never walked into: tool caches, virtual environments, vendored dependencies.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "__pycache__",
        "node_modules",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
    }
)


def is_test_code(name: str, folder: bool) -> bool:
    """Whether a directory or file name says tests (``tests``, ``tests_integ``, ``unit_tests``, ``test_x.py``,
    ``conftest.py``): test code and fixtures are not what a deployment sends, so a walk leaves them out (its
    uuids and clocks make each run's prompt unique on purpose; its request files are never sent)."""
    stem = name.lower() if folder else name.lower().rpartition(".")[0]
    if folder and stem in ("test", "tests", "testing"):
        return True
    return stem == "conftest" or stem.startswith(("test_", "tests_")) or stem.endswith(("_test", "_tests"))


_KINDS: dict[str, FileKind] = {}


def register_kind(kind: FileKind) -> None:
    """Check files with these suffixes by this kind; replaces the kind that held a suffix before."""
    for suffix in kind.suffixes:
        _KINDS[suffix] = kind


def kinds() -> list[FileKind]:
    """The registered kinds, each once, by name."""
    unique = {id(kind): kind for kind in _KINDS.values()}
    return sorted(unique.values(), key=lambda kind: kind.name)


def rules() -> dict[str, Rule]:
    """Every rule of every registered kind, and AC001, by code."""
    found = {UNPARSABLE.code: UNPARSABLE}
    for kind in kinds():
        found.update((rule.code, rule) for rule in kind.rules)
    return dict(sorted(found.items()))


@dataclass(frozen=True)
class LintResult:
    """Findings left, findings fixed (both sorted by path, line, column, code), and how many files were checked."""

    findings: tuple[Finding, ...]
    fixed: tuple[Finding, ...] = ()
    files: int = 0
    rewritten: tuple[str, ...] = ()
    """Paths ``--fix`` rewrote."""
    notes: tuple[str, ...] = ()
    """``path: why`` for each file skipped or not fully checked (a dataset, syntax newer than the parser)."""


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Run the cyclic garbage collector less often while linting: the syntax trees and values of the analysis are
    millions of objects that hold no cycles, and collecting among them took a sixth of the time."""
    before = gc.get_threshold()
    gc.set_threshold(100_000, 50, 1_000)
    try:
        yield
    finally:
        gc.set_threshold(*before)


@_fewer_collections()
def lint_paths(
    paths: Iterable[str | os.PathLike[str]],
    fix: bool = False,
    config: Config | None = None,
    cache: CacheOptions | None = None,
    jobs: int = 1,
    skip_unrecognized: bool = False,
) -> LintResult:
    """Lint files and directories (walked, skipping :data:`SKIP_DIRS` and test code); with ``fix``, rewrite what
    can be fixed. ``config`` selects the rules reported per file and holds the kinds' settings (default: every
    rule, defaults). ``skip_unrecognized``: a named file its kind's checker does not recognize (a ``.json`` of
    data, without tools) is skipped with a note, as a walk skips it, instead of being a usage error: pre-commit
    names every staged file.
    Traces are replayed through ``cache`` (explain's server model), by default SGLang's with o200k_base tokens.
    ``jobs`` > 1 checks the files in that many worker processes when there are at least :data:`PARALLEL_FILES`
    of them; the result is the same as in one process.

    Raises :class:`~agentcache.errors.InputError` for a usage error: a path that does not exist or cannot be
    read, a named file of no registered kind, a named file its kind's checker does not recognize (unless
    ``skip_unrecognized``).
    """
    catalog = rules()
    config = config or Config()
    run = _Run(config.settings)
    targets = list(_targets(paths, lenient=skip_unrecognized))
    parallel = jobs > 1 and len(targets) >= PARALLEL_FILES
    verdicts: dict[Path, tuple[str, bool, Checked]] = {}
    notes: list[str] = []
    with _pool(jobs, config.settings) if parallel else nullcontext() as pool:
        early = _Early(run, cache, pool, targets) if pool is not None else None
        for (path, display, explicit, _), outcome in zip(
            targets, _outcomes(targets, run, cache, pool, jobs, early=early), strict=True
        ):
            if outcome.verdict is None:
                if explicit and not skip_unrecognized:
                    raise InputError(f"{display}: {outcome.skipped}")  # a named file must be its checker's kind
                if outcome.note or explicit:
                    notes.append(f"{display}: skipped: {outcome.skipped}")
                continue
            verdicts[path] = (display, explicit, outcome.verdict)
        for name, session in run.sessions.items():
            # A file checked again can teach what another file it taught nothing before needs (a class's field
            # made by a helper in a third module): again, until none is named, as deep as such chains go.
            for depth in range(MAX_REVISITS):
                named = session.revisit()
                if not named:
                    break
                again = [(path, verdicts[path][0], verdicts[path][1], skip_unrecognized) for path in named]
                ready = early.ready(name, named) if early is not None and depth == 0 else {}
                for (path, display, explicit, _), outcome in zip(
                    again, _outcomes(again, run, cache, pool, jobs, {name: session.state()}, ready), strict=True
                ):
                    if outcome.verdict is not None:
                        verdicts[path] = (display, explicit, outcome.verdict)
    findings: list[Finding] = []
    fixed: list[Finding] = []
    rewrites: list[tuple[Path, str, bytes]] = []
    for path, (display, _, verdict) in verdicts.items():
        if verdict.note is not None:
            notes.append(f"{display}: {verdict.note}")
        checked = Checked(tuple(f for f in verdict.findings if config.enabled(f.code, f.path)), verdict.rewrite)
        if fix and checked.rewrite is not None:
            done = [finding for finding in checked.findings if catalog[finding.code].fixable]
            if done:
                fixed.extend(done)
                findings.extend(finding for finding in checked.findings if not catalog[finding.code].fixable)
                rewrites.append((path, display, checked.rewrite))
                continue
        findings.extend(checked.findings)
    for path, display, data in rewrites:
        try:
            path.write_bytes(data)
        except OSError as exc:
            raise InputError(f"cannot write the fix to {display}: {exc.strerror}") from None
    return LintResult(
        tuple(sorted(findings, key=Finding.sort_key)),
        tuple(sorted(fixed, key=Finding.sort_key)),
        len(verdicts),
        tuple(display for _, display, _ in rewrites),
        tuple(sorted(notes)),
    )


#: Fewer files than this are checked in the calling process whatever ``jobs`` says: starting worker processes
#: costs more than it saves.
PARALLEL_FILES = 100
#: Rounds of checking files again at the end, at most: each round follows one more link of a chain of modules that
#: teach each other (a helper, the class field it makes, the subclass that sends it); real code needs two or three.
MAX_REVISITS = 8
#: Files per task handed to a worker process, at most: small enough to share the work out evenly.
CHUNK_FILES = 200
#: Tasks per worker process, at least, as long as they stay under :data:`CHUNK_FILES`: the modules checked again at
#: the end are few and large (44 files, 8% of the corpus's bytes), and in tasks of one or two no worker waits long
#: for the other's last one.
TASKS_PER_JOB = 16
#: Tasks handed to the pool ahead of the one whose outcomes the parent reads, per worker process: enough that no
#: worker waits while the parent checks a file again, few enough that a file :class:`_Early` sends goes out before
#: most of the files after it.
AHEAD = 2

#: A file to check: its path, how to show it, whether it was named, and whether a named one not of its checker's
#: kind is skipped rather than refused (``skip_unrecognized``).
Target = tuple[Path, str, bool, bool]


@dataclass(frozen=True)
class _Outcome:
    """One file's result, as a worker process sends it back: a verdict, or why the file is not of its kind."""

    verdict: Checked | None
    lesson: object = None
    """What the check read from its kind's session and taught it (:meth:`Session.lesson`)."""
    skipped: str = ""
    note: bool = False


class _Run:
    """The checkers of one lint run in one process: each kind's session, made when its first file comes."""

    def __init__(self, settings: Mapping[str, Any]) -> None:
        self.settings = settings
        self.sessions: dict[str, Session] = {}

    def session(self, kind: FileKind) -> Session | None:
        if kind.session is None:
            return None
        if kind.name not in self.sessions:
            self.sessions[kind.name] = kind.session(self.settings)
        return self.sessions[kind.name]

    def judge(self, target: Target, cache: CacheOptions | None) -> _Outcome:
        path, display, explicit, lenient = target
        kind = _KINDS[path.suffix.lower()]
        session = self.session(kind)
        source = SourceFile(path, display, _read(path, display), explicit, cache, lenient)
        try:
            if session is None:
                return _Outcome(kind.check(source))
            return _Outcome(session.check(source), session.lesson())
        except NotThisKind as exc:
            return _Outcome(None, skipped=str(exc), note=exc.note)


def _outcomes(
    targets: list[Target],
    run: _Run,
    cache: CacheOptions | None,
    pool: ProcessPoolExecutor | None,
    jobs: int,
    states: Mapping[str, object] | None = None,
    ready: Mapping[Path, Future[list[_Outcome]]] | None = None,
    early: _Early | None = None,
) -> Iterator[_Outcome]:
    """The outcomes of ``targets`` in their order: checked here, one after another, or by the ``pool``'s ``jobs``
    worker processes, each task (a run of consecutive files) resuming its sessions from ``states`` (kind name ->
    :meth:`Session.state`) when given, but for the files a task already ``ready`` checks. The parent's sessions
    adopt each lesson in order, and check here again a file whose check read something else in its worker than
    it reads here. After each task's files, ``early`` sends what the sessions now name to check again."""
    if pool is None:
        yield from (run.judge(target, cache) for target in targets)
        return
    ready = ready or {}
    rest = [target for target in targets if target[0] not in ready]
    size = max(1, min(CHUNK_FILES, -(-len(rest) // (jobs * TASKS_PER_JOB))))
    chunks = iter([rest[start : start + size] for start in range(0, len(rest), size)])
    window: deque[Future[list[_Outcome]]] = deque()

    def top_up() -> None:
        while len(window) < AHEAD * jobs and (chunk := next(chunks, None)) is not None:
            window.append(pool.submit(_check_chunk, chunk, cache, states or {}))

    def checked() -> Iterator[_Outcome]:
        top_up()
        while window:
            yield from window.popleft().result()
            if early is not None:  # the task's files are adopted: send what they named before the next task
                early.send()
            top_up()

    stream = checked()
    for target in targets:
        future = ready.get(target[0])
        outcome = future.result()[0] if future is not None else next(stream)
        session = run.session(_KINDS[target[0].suffix.lower()])
        if session is None or outcome.verdict is None or session.adopt(outcome.lesson):
            yield outcome
        else:
            yield run.judge(target, cache)


class _Early:
    """The files a parallel run's sessions will check again at the end, checked again in the workers as soon as a
    session names them (:meth:`Session.revisit`), from what it knew then, and again whenever their why changes.
    The workers need not wait for the last file to start on them, and the parent adopts such a verdict at the end
    only where it holds there, as any worker's: the result is the same."""

    def __init__(self, run: _Run, cache: CacheOptions | None, pool: ProcessPoolExecutor, targets: list[Target]) -> None:
        self.run = run
        self.cache = cache
        self.pool = pool
        self.targets = {target[0]: target for target in targets}
        self.sent: dict[tuple[str, Path], tuple[Hashable, Future[list[_Outcome]]]] = {}

    def send(self) -> None:
        """Check again in a worker each file a session names for a why it was not yet sent for."""
        for name, session in self.run.sessions.items():
            state: object = None
            for path, why in session.revisit().items():
                sent = self.sent.get((name, path))
                if sent is None or sent[0] != why:
                    if sent is not None:
                        sent[1].cancel()
                    state = session.state() if state is None else state
                    task = self.pool.submit(_check_chunk, [self.targets[path]], self.cache, {name: state})
                    self.sent[(name, path)] = (why, task)

    def ready(self, name: str, named: Mapping[Path, Hashable]) -> dict[Path, Future[list[_Outcome]]]:
        """The checks sent of the files ``name``'s session names at the end, for the why it names them for; the
        others are cancelled."""
        found = {}
        for (kind, path), (why, task) in self.sent.items():
            if kind == name and path in named and named[path] == why:
                found[path] = task
            elif kind == name:
                task.cancel()
        return found


def _pool(jobs: int, settings: Mapping[str, Any]) -> ProcessPoolExecutor:
    """``jobs`` worker processes, each with one :class:`_Run` for all its tasks (and one for those given states): a
    session that keeps what the worker's earlier tasks taught reads more as the parent does, so the parent checks
    fewer files again."""
    return ProcessPoolExecutor(max_workers=jobs, initializer=_start_worker, initargs=(settings,))


#: The worker process's runs, which :func:`_start_worker` makes from the lint run's settings: its own, and the one
#: each task that gives states resumes. A resumed session knows only what it is given, but keeps what it read of the
#: project's files (they do not change during a run: indexing a large project's names takes seconds).
_worker = _Run({})
_resumed = _Run({})


def _start_worker(settings: Mapping[str, Any]) -> None:
    global _worker, _resumed
    _worker, _resumed = _Run(settings), _Run(settings)


@_fewer_collections()
def _check_chunk(targets: list[Target], cache: CacheOptions | None, states: Mapping[str, object]) -> list[_Outcome]:
    """A worker process's task: judge consecutive files, with the worker's sessions, or with sessions resumed from
    ``states`` when given (the worker's own keep what its other tasks taught)."""
    run = _worker
    if states:
        run = _resumed
        run.sessions = {name: session for name, session in run.sessions.items() if name in states}
        for kind in kinds():
            if kind.name in states:
                session = run.session(kind)
                if session is not None:
                    session.resume(states[kind.name])
    return [run.judge(target, cache) for target in targets]


def _read(path: Path, display: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {display}: {exc.strerror}") from None


def _targets(paths: Iterable[str | os.PathLike[str]], lenient: bool = False) -> Iterator[Target]:
    """(path, how to show it, named explicitly, ``lenient``) for every file to check, each file once, walks
    sorted."""
    paths = list(paths)
    seen: set[Path] = set()
    # A file named on the command line is judged as named, even when a directory walk reaches it first.
    named = {Path(raw).resolve() for raw in paths if Path(raw).is_file()}

    def fresh(key: Path) -> bool:
        if key in seen:
            return False
        seen.add(key)
        return True

    for raw in paths:
        given = Path(raw)
        if given.is_dir():
            for found, key in _walk(given):
                if fresh(key):
                    yield found, str(found), key in named, lenient
        elif given.exists():
            if given.suffix.lower() not in _KINDS:
                known = ", ".join(sorted(_KINDS))
                raise InputError(f"{raw}: no lint rules for this kind of file; lint checks {known} files")
            if fresh(given.resolve()):
                yield given, str(given), True, lenient
        else:
            raise InputError(f"cannot read {raw}: no such file or directory")


def _as_written(root: Path) -> Path:
    """The part of ``root`` its user chose: below the working directory, or its last name for a path elsewhere
    (a temporary or CI folder called ``test_...`` above it says nothing of what is in it)."""
    if not root.is_absolute():
        return root
    try:
        return root.relative_to(Path.cwd())
    except ValueError:
        return Path(root.name)


def _walk(root: Path) -> Iterator[tuple[Path, Path]]:
    """(path, resolved path) of each file of a registered kind under ``root``, but test code below it
    (:func:`is_test_code`) unless ``root`` is in a test folder, as it is written. A directory is resolved once for
    all its files (resolving costs a system call per path component); a file that is a symlink, on its own."""

    def refuse(error: OSError) -> None:
        raise InputError(f"cannot read {error.filename}: {error.strerror}")

    tests = any(is_test_code(part, True) for part in _as_written(root).parts)  # a test folder named: lint its tests
    for directory, subdirs, names in os.walk(root, onerror=refuse):
        subdirs[:] = sorted(
            name for name in subdirs if name not in SKIP_DIRS and (tests or not is_test_code(name, True))
        )
        folder = Path(directory)
        real = folder.resolve()
        for name in sorted(names):
            if Path(name).suffix.lower() in _KINDS and (tests or not is_test_code(name, False)):
                path = folder / name
                yield path, path.resolve() if path.is_symlink() else real / name
