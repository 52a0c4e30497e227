"""Real inference engines for the tests, one session-scoped fixture per engine.

A test that takes ``llama_server``, ``sglang`` or ``vllm`` gets a :class:`EngineInfo` of a live server started
by the project's own ``scripts/engines/engines.py`` (installed on first use, reused when already running).
Such tests are marked with the engine's name (``pytest -m "not vllm"``), run after the others, and the
engines they need start in the background as soon as collection ends, so start-up overlaps the unit tests.
An engine this session started is stopped at its end; one that was already running is left running.

``AGENTCACHE_SKIP_ENGINES`` (``all``, or a comma list such as ``vllm,sglang``) opts out: those tests are
skipped with that reason. ``.ci/run`` never sets it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentcache.cache.options import CacheOptions

ROOT = Path(__file__).resolve().parent.parent
ENGINES_PY = ROOT / "scripts" / "engines" / "engines.py"
sys.path.insert(0, str(ENGINES_PY.parent))
import engines as engine_script  # noqa: E402  # the one place that knows the engines' folders

FIXTURES = {
    "llama_server": "llama-server",
    "sglang": "sglang",
    "vllm": "vllm",
    "cluster": "cluster",
    "vllm_cluster": "cluster-vllm",
}
"""Fixture name (and marker) to engine name."""
PICKERS = ("each_cluster",)
"""Fixtures whose parameter is the name of the engine fixture they return."""
SERVED_MODEL = engine_script.SERVED_NAME
CLUSTER_START = ("--workers", "2", "--policy", "consistent_hashing")
"""Each shared cluster: two workers (SGLang in ``cluster``, vLLM in ``cluster-vllm``) behind SMG hashing
agentcache's routing keys (tests that need another policy put a gateway of their own in front of the same
workers: :func:`gateway`)."""


@dataclass(frozen=True)
class EngineInfo:
    name: str
    url: str
    model: str
    model_dir: Path
    started_here: bool
    workers: tuple[str, ...] = ()
    """The cluster's workers behind its gateway (``url``); empty for a single engine."""
    kv_events: str | None = None
    """Where the engine publishes its KV cache events (SGLang, vLLM), else None."""
    worker_events: tuple[tuple[str, str], ...] = ()
    """``(worker, endpoint)``: where each of the cluster's workers publishes its KV cache events."""

    @property
    def engine(self) -> str:
        """The engine that answers: a cluster's workers' (SGLang or vLLM), else this one's own name."""
        return engine_script.CLUSTERS.get(self.name, self.name)

    @property
    def profile(self) -> str:
        """The agentcache server profile of the engine that answers."""
        return {"llama-server": "llama.cpp"}.get(self.engine, self.engine)

    @property
    def block(self) -> int:
        """The tokens the engine caches in: vLLM's ``--block-size`` (engines.py's ``VLLM_BLOCK``); SGLang's page on
        CPU and llama-server's slot hold single tokens."""
        return engine_script.VLLM_BLOCK if self.engine == "vllm" else 1

    def reusable(self, prompt_tokens: int) -> int:
        """What a prompt of ``prompt_tokens`` finds cached when it was sent before: all but its last token (which
        is computed again for the answer's first logits), in whole blocks."""
        return (prompt_tokens - 1) // self.block * self.block

    @property
    def cache_options(self) -> CacheOptions:
        """How a cache-aware transport or ``explain`` models this engine exactly: with the model folder, and the
        block size."""
        block = {"block_size": self.block} if self.engine == "vllm" else {}
        return CacheOptions(self.profile, model_dir=str(self.model_dir), **block)  # type: ignore[arg-type]

    @property
    def python(self) -> Path:
        """The interpreter of the engine's own venv (SGLang, vLLM): what runs code that imports the engine."""
        return engine_script.Venv(self.name).python

    def empty_cache(self) -> None:
        """Drop every cached prefix, so a test starts from the state a fresh client-side model assumes."""
        for server in self.workers or (self.url,):  # a cluster's workers straight, not through the gateway
            engine_script.empty_cache(self.engine, server)


_started: dict[str, Future[EngineInfo]] = {}
_lock = threading.Lock()
_install_lock = threading.Lock()


def _skipped(engine: str) -> bool:
    opt_out = {e.strip() for e in os.environ.get("AGENTCACHE_SKIP_ENGINES", "").split(",") if e.strip()}
    return "all" in opt_out or engine in opt_out


def _engines_py(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ENGINES_PY), *args], capture_output=True, text=True, check=False, timeout=7200
    )
    if done.returncode != 0:
        raise RuntimeError(f"engines.py {' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout.strip()


def _bring_up(engine: str) -> EngineInfo:
    with _install_lock:  # installs share the model and the pip cache: one at a time; starts overlap
        _engines_py("install", "model")
        _engines_py("install", engine)
    was_running = engine_script.run_file(engine).is_file() and "running" in _engines_py("status", engine)
    url = _engines_py("start", engine, *CLUSTER_START if engine in engine_script.CLUSTERS else ()).splitlines()[-1]
    record = engine_script.running(engine) or {}
    workers = tuple(map(str, record.get("workers", ())))  # type: ignore[call-overload]
    events = record.get("kv_events")
    worker_records = (engine_script.running(engine_script.worker_name(engine, i)) or {} for i in range(len(workers)))
    worker_events = tuple((str(r["url"]), str(r["kv_events"])) for r in worker_records if r.get("kv_events"))
    return EngineInfo(
        engine,
        url,
        SERVED_MODEL,
        engine_script.MODEL_DIR,
        not was_running,
        workers,
        None if events is None else str(events),
        worker_events,
    )


def _future(engine: str) -> Future[EngineInfo]:
    """Start ``engine`` once per session, in a background thread."""
    with _lock:
        if engine not in _started:
            future: Future[EngineInfo] = Future()
            _started[engine] = future

            def work() -> None:
                try:
                    future.set_result(_bring_up(engine))
                except BaseException as exc:  # surfaced to every test that needs the engine
                    future.set_exception(exc)

            threading.Thread(target=work, name=f"start-{engine}", daemon=True).start()
        return _started[engine]


def pytest_configure(config: pytest.Config) -> None:
    for fixture, engine in FIXTURES.items():
        config.addinivalue_line("markers", f"{fixture}: needs the real {engine} engine (scripts/engines)")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselection, so that the engines' markers select
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for fixture in _engine_fixtures(item):
            item.add_marker(getattr(pytest.mark, fixture))
    items.sort(key=lambda item: bool(_engine_fixtures(item)))  # stable: engines last


@pytest.hookimpl(trylast=True)  # after ``-k``/``-m`` deselection: start only the engines of tests that will run
def pytest_collection_finish(session: pytest.Session) -> None:
    needed = dict.fromkeys(FIXTURES[fixture] for item in session.items for fixture in _engine_fixtures(item))
    for engine in needed:
        if not _skipped(engine):
            _future(engine)


def _engine_fixtures(item: pytest.Item) -> list[str]:
    """The engine fixtures ``item`` uses: by name, or as the parameter of a fixture that picks one (such as
    :func:`each_cluster`)."""
    callspec = getattr(item, "callspec", None)
    picked = [callspec.params[name] for name in PICKERS if name in callspec.params] if callspec else []
    used = {*getattr(item, "fixturenames", ()), *picked}
    return [fixture for fixture in FIXTURES if fixture in used]


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop the engines this session started, waiting for any still starting, so that none is left behind."""
    for engine, future in _started.items():
        if future.exception() is None and future.result().started_here:
            _engines_py("stop", engine)


def _engine(engine: str) -> EngineInfo:
    if _skipped(engine):
        pytest.skip(f"{engine} opted out by AGENTCACHE_SKIP_ENGINES")
    return _future(engine).result()


@pytest.fixture(scope="session")
def llama_server() -> EngineInfo:
    return _engine("llama-server")


@pytest.fixture(scope="session")
def sglang() -> EngineInfo:
    return _engine("sglang")


@pytest.fixture(scope="session")
def vllm() -> EngineInfo:
    return _engine("vllm")


@pytest.fixture(scope="session")
def cluster() -> EngineInfo:
    return _engine("cluster")


@pytest.fixture(scope="session")
def vllm_cluster() -> EngineInfo:
    return _engine("cluster-vllm")


@pytest.fixture(params=["cluster", "vllm_cluster"])
def each_cluster(request: pytest.FixtureRequest) -> EngineInfo:
    """Each shared cluster in turn: SGLang workers, then vLLM workers, each behind SMG."""
    info: EngineInfo = request.getfixturevalue(request.param)
    return info


@contextmanager
def gateway(cluster: EngineInfo, policy: str) -> Iterator[str]:
    """One more SMG gateway, routing by ``policy`` to the shared cluster's workers; yields its URL, then stops it.
    It starts in about a second: a Rust binary, with the workers already up."""
    name, port = f"{cluster.name}-gateway-{policy}", engine_script.free_port()
    cmd = engine_script.launch_gateway(port, cluster.workers, policy)
    _, process, url = engine_script.spawn(name, cmd, {}, port)
    try:
        engine_script.wait_gateway(name, process, url, len(cluster.workers))
        yield url
    finally:
        engine_script.stop(name)


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The test model's folder (tokenizer.json, chat template), as every engine serves it."""
    with _install_lock:
        _engines_py("install", "model")
    return engine_script.MODEL_DIR
