"""Install, start and stop real inference engines on a CPU machine, for the project's tests.

Plain standard library, so any venv (the test venv included) can drive it; each engine lives in its own
venv or build under the cache folder, which a second run reuses. The pins each one installs are in
``requirements/*.txt`` beside this file:

    python scripts/engines/engines.py install model|llama-server|sglang|vllm|cluster|cluster-vllm [--force]
    python scripts/engines/engines.py start ENGINE [--port P]   # prints the base URL when healthy
    python scripts/engines/engines.py start cluster|cluster-vllm [--workers N] [--policy P] [--kv-pool T]
                                                # SMG in front of N SGLang (cluster) or vLLM (cluster-vllm) workers
    python scripts/engines/engines.py stop ENGINE
    python scripts/engines/engines.py status [ENGINE]
    python scripts/engines/engines.py check ENGINE              # cached tokens + tokenizer agreement

The cache folder is ``$AGENTCACHE_ENGINE_CACHE`` or ``~/.cache/agentcache``: ``venvs/``, ``src/``,
``bin/``, ``models/``, ``logs/`` and ``run/`` (one JSON per started engine: pid, port, base URL, log).
Every engine serves the same tiny random-weight Llama with the o200k_base vocabulary (build_model.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("AGENTCACHE_ENGINE_CACHE") or Path.home() / ".cache" / "agentcache")
VENVS, SRC, BIN, MODELS, LOGS, RUN = (CACHE / d for d in ("venvs", "src", "bin", "models", "logs", "run"))
MODEL_DIR = MODELS / "tiny-llama-o200k"
SERVED_NAME = "tiny-llama-o200k"
CONTEXT = 4096

REQUIREMENTS = HERE / "requirements"


def requirements(name: str) -> tuple[str, ...]:
    """The pins in ``requirements/NAME.txt``, in file order: one requirement a line, ``#`` starts a comment."""
    lines = (line.partition("#")[0].strip() for line in (REQUIREMENTS / f"{name}.txt").read_text().splitlines())
    return tuple(line for line in lines if line)


MODEL_PACKAGES = requirements("model")
(LLAMA_CPP_PYTHON,) = requirements("llama-server")
LLAMA_SERVER_FLAGS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # otherwise the build downloads a web UI
    "-DLLAMA_BUILD_UI=OFF",
)


def log(message: str) -> None:
    print(f"[engines] {message}", file=sys.stderr, flush=True)


def run(cmd: Sequence[str | Path], logfile: Path) -> None:
    """Run a step with its output appended to ``logfile``; on failure show the tail and stop."""
    logfile.parent.mkdir(parents=True, exist_ok=True)
    with logfile.open("a") as out:
        out.write(f"\n$ {' '.join(map(str, cmd))}\n")
        out.flush()
        code = subprocess.call([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT)
    if code != 0:
        tail = logfile.read_text(errors="replace").splitlines()[-30:]
        sys.exit("\n".join([*tail, f"step failed (exit {code}): {' '.join(map(str, cmd))}; full log: {logfile}"]))


def timed(what: str, step: Callable[[], None]) -> None:
    start = time.monotonic()
    step()
    log(f"{what}: {time.monotonic() - start:.0f} s")


class Venv:
    """A venv whose pinned package list is stamped inside it, so an unchanged list is not reinstalled."""

    def __init__(self, name: str) -> None:
        self.path = VENVS / name
        self.python = self.path / "bin" / "python"
        self.stamp = self.path / "agentcache-packages.json"
        self.logfile = LOGS / f"install-{name}.log"

    def ready(self, recipe: object) -> bool:
        return self.stamp.is_file() and json.loads(self.stamp.read_text()) == recipe

    def create(self, recipe: object, install: Callable[[Venv], None], force: bool) -> None:
        if not force and self.ready(recipe):
            log(f"venv up to date: {self.path}")
            return
        shutil.rmtree(self.path, ignore_errors=True)
        self.logfile.unlink(missing_ok=True)
        # The venv gets the Python running this script, which must be one the pinned torch wheels are built for.
        run([sys.executable, "-m", "venv", self.path], self.logfile)
        timed(f"install into {self.path}", lambda: install(self))
        self.stamp.write_text(json.dumps(recipe))

    def pip(self, *args: str) -> None:
        run([self.python, "-m", "pip", "--disable-pip-version-check", *args], self.logfile)


def install_model(force: bool) -> None:
    venv = Venv("model")
    venv.create(list(MODEL_PACKAGES), lambda v: v.pip("install", *MODEL_PACKAGES), force)
    build: list[str | Path] = [venv.python, HERE / "build_model.py", MODEL_DIR, *(["--force"] if force else [])]
    timed("model build", lambda: run(build, LOGS / "build-model.log"))
    log(f"model: {MODEL_DIR}")


# --- llama.cpp llama-server ---------------------------------------------------------------------------

LLAMA_SERVER = BIN / f"llama-server-{LLAMA_CPP_PYTHON.split('==')[1]}"


def install_llama_server(force: bool) -> None:
    install_model(False)
    if LLAMA_SERVER.is_file() and not force:
        log(f"llama-server up to date: {LLAMA_SERVER}")
        return
    logfile = LOGS / "install-llama-server.log"
    logfile.unlink(missing_ok=True)
    name, version = LLAMA_CPP_PYTHON.split("==")
    sdist = SRC / f"{name.replace('-', '_')}-{version}.tar.gz"
    if not sdist.is_file():
        pip: list[str | Path] = [VENVS / "model" / "bin" / "python", "-m", "pip", "download", "--no-deps"]
        pip += ["--no-binary", ":all:", "-d", SRC, LLAMA_CPP_PYTHON]
        timed("sdist download", lambda: run(pip, logfile))
    tree = SRC / sdist.name.removesuffix(".tar.gz")
    if not (tree / "vendor" / "llama.cpp" / "CMakeLists.txt").is_file():
        with tarfile.open(sdist) as archive:
            archive.extractall(SRC, filter="data")
    build_dir = tree / "build-llama-server"
    nice = ["nice", "-n", "19"]  # a long compile: let the tests and engines sharing the cores go first
    configure: list[str | Path] = [*nice, "cmake", "-S", tree / "vendor" / "llama.cpp", "-B", build_dir, "-G", "Ninja"]
    timed("cmake configure", lambda: run([*configure, *LLAMA_SERVER_FLAGS], logfile))
    compile_: list[str | Path] = [*nice, "cmake", "--build", build_dir, "--target", "llama-server"]
    timed("llama-server build", lambda: run([*compile_, "-j", str(os.cpu_count() or 1)], logfile))
    BIN.mkdir(parents=True, exist_ok=True)
    staged = LLAMA_SERVER.with_name(LLAMA_SERVER.name + ".partial")
    shutil.copy2(build_dir / "bin" / "llama-server", staged)
    staged.rename(LLAMA_SERVER)
    log(f"llama-server: {LLAMA_SERVER} ({LLAMA_SERVER.stat().st_size / 1e6:.0f} MB)")


def launch_llama_server(port: int) -> tuple[list[str], dict[str, str]]:
    cmd = [str(LLAMA_SERVER), "-m", str(MODEL_DIR / "model.gguf"), "--alias", SERVED_NAME]
    # The KV pool is shared by the 4 slots (unified); when it fills, llama-server purges idle slots. 16k cells
    # (32 MB for this model) hold four sessions of 4k tokens, so the slot model holds without that purge.
    cmd += ["--host", "127.0.0.1", "--port", str(port), "-c", str(4 * CONTEXT), "-t", "2", "--metrics", "--jinja"]
    # Tests empty the cache between sessions: erasing slots needs a slot-save path, and the host-RAM prompt
    # cache (a second level that restores evicted prompts) is off so that erased means erased.
    slots = RUN / f"llama-server-{port}-slots"
    slots.mkdir(parents=True, exist_ok=True)
    cmd += ["--slot-save-path", f"{slots}/", "--cache-ram", "0"]
    return cmd, {}


# --- SGLang (CPU engine) ------------------------------------------------------------------------------

(SGLANG,) = requirements("sglang")  # installed with --no-deps
SGLANG_REQUIREMENTS = requirements("sglang-deps")
SGL_KERNEL_STANDIN = HERE / "sgl_kernel_cpu" / "sgl_kernel"


def install_sglang(force: bool) -> None:
    install_model(False)
    venv = Venv("sglang")

    def install(v: Venv) -> None:
        v.pip("install", "--no-deps", SGLANG)
        v.pip("install", *SGLANG_REQUIREMENTS)

    venv.create([SGLANG, *SGLANG_REQUIREMENTS], install, force)
    # Checked on every install, outside the stamp: a change to the stand-in needs no new venv. Copied only when it
    # changed, so an install beside a running engine leaves that engine's files alone.
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    target = Path(subprocess.check_output([str(venv.python), "-c", purelib], text=True).strip()) / "sgl_kernel"
    if source_files(target) != source_files(SGL_KERNEL_STANDIN):
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(SGL_KERNEL_STANDIN, target, ignore=shutil.ignore_patterns("__pycache__"))
    log(f"sglang: {venv.path} (sgl_kernel stand-in: {target})")


def source_files(folder: Path) -> dict[Path, bytes]:
    """The files under ``folder`` by relative path, without Python's byte-code caches."""
    files = (f for f in folder.rglob("*") if f.is_file() and "__pycache__" not in f.parts)
    return {f.relative_to(folder): f.read_bytes() for f in files}


KV_EVENTS_FLAG = "--kv-events-config"


def kv_events_endpoint(cmd: Sequence[str]) -> str | None:
    """Where a server launched with ``cmd`` publishes its KV cache events, or None."""
    if KV_EVENTS_FLAG not in cmd:
        return None
    endpoint: str = json.loads(cmd[cmd.index(KV_EVENTS_FLAG) + 1])["endpoint"]
    return endpoint


def launch_sglang(port: int, kv_pool: int = CONTEXT) -> tuple[list[str], dict[str, str]]:
    cmd = [str(VENVS / "sglang" / "bin" / "python"), "-m", "sglang.launch_server", "--model-path", str(MODEL_DIR)]
    cmd += ["--served-model-name", SERVED_NAME, "--device", "cpu", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--attention-backend", "torch_native", "--max-total-tokens", str(kv_pool), "--enable-cache-report"]
    # The model is stored in float32; `auto` would run it in float16, where the KV a decode step writes differs from
    # the KV a prefill of the same tokens writes by up to 2e-3 in logprob, enough to flip a near-tied greedy token.
    cmd += ["--dtype", "float32"]
    # Lets a request bring its own chat template (chat_template_kwargs), so one server runs the real-template matrix.
    cmd += ["--trust-request-chat-template"]
    # An idle scheduler otherwise polls its sockets in a busy loop: 40% of a core per server, all run long, on a
    # 2-core machine that also runs the cluster's workers. With it, the scheduler blocks on its sockets when idle.
    cmd += ["--sleep-on-idle"]
    # The server's own record of what it stored and evicted, published on a port of its own (in the run record);
    # SGLang binds only a wildcard host unless told to: a loopback address would make it connect instead.
    events = {"publisher": "zmq", "endpoint": f"tcp://127.0.0.1:{free_port()}", "bind": True, "topic": ""}
    cmd += [KV_EVENTS_FLAG, json.dumps(events)]
    return cmd, {"SGLANG_USE_CPU_ENGINE": "1"}  # without it the scheduler imports vllm and the parent hangs


# --- vLLM (CPU build) ----------------------------------------------------------------------------------

(VLLM,) = requirements("vllm")
VLLM_BLOCK = 32  # CPU attention wants blocks of a multiple of 32; the block is also what vLLM caches in
IPC_PATH_MAX = 100  # an ipc:// endpoint is a Unix socket path: 107 bytes at most on Linux, keep a margin
VLLM_CUDA_EXTRAS = ("torchvision", "torchaudio", "torchcodec")  # CUDA builds pulled in; they break the import


def install_vllm(force: bool) -> None:
    install_model(False)

    def install(v: Venv) -> None:
        v.pip("install", VLLM)
        v.pip("uninstall", "-y", *VLLM_CUDA_EXTRAS)

    Venv("vllm").create([VLLM, "-", *VLLM_CUDA_EXTRAS], install, force)


def launch_vllm(port: int, kv_pool: int = CONTEXT) -> tuple[list[str], dict[str, str]]:
    # `vllm serve` looks up a distribution named vllm and fails; the module entry point works.
    cmd = [str(VENVS / "vllm" / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server"]
    cmd += ["--model", str(MODEL_DIR), "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--enable-prefix-caching", "--enable-prompt-tokens-details", "--max-model-len", str(CONTEXT // 2)]
    cmd += ["--block-size", str(VLLM_BLOCK), "--enforce-eager"]  # eager starts 3x faster
    # Without a tool parser vLLM refuses any request with tools; the template writes hermes-style <tool_call>.
    cmd += ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]
    # Lets a request bring its own chat template (chat_template), so one server runs the real-template matrix.
    cmd += ["--trust-request-chat-template"]
    # A pool as small as SGLang's (CONTEXT tokens), so a test can make the server evict with a few prompts; the
    # override works on CPU too (without it, 1 GiB holds 524,288 tokens of the test model).
    cmd += ["--num-gpu-blocks-override", str(kv_pool // VLLM_BLOCK)]
    # The server's own record of what it stored and evicted. vLLM binds only wildcard hosts, `::`, ipc and inproc
    # (it connects to any other address), so it publishes on a socket file in the run folder (in the run record).
    socket = RUN / f"vllm-{port}.kv"
    if len(str(socket)) > IPC_PATH_MAX:
        sys.exit(f"vLLM's KV event socket {socket} is longer than ZMQ allows: use a shorter AGENTCACHE_ENGINE_CACHE")
    events = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": f"ipc://{socket}"}
    cmd += [KV_EVENTS_FLAG, json.dumps({**events, "topic": ""})]
    # Dev mode adds POST /reset_prefix_cache, which tests use to start a session from an empty cache.
    return cmd, {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_SERVER_DEV_MODE": "1"}


# --- SMG, the Shepherd Model Gateway, in front of N SGLang or vLLM workers ------------------------------

(SMG,) = requirements("smg")
POLICIES = ("round_robin", "cache_aware", "prefix_hash", "consistent_hashing", "manual", "random")
ROUTING_KEY_HEADER = "x-smg-routing-key"
"""The header SMG reads a routing key from (``--routing-key-headers``): agentcache sends its session keys there."""
# Routing that only the policy decides: no worker is dropped for load or after one error, no request is retried
# on another worker behind the client's back; health is probed every second, so a killed worker leaves the
# rotation within about a second. The probe is SGLang's /ping, a flag check: its /health runs a one-token
# generation (and waits a second for it), which every second on each worker would load the cores and put a
# request in the way of /flush_cache.
GATEWAY_FLAGS = (
    "--disable-worker-overload-protection",
    "--disable-retries",
    "--disable-circuit-breaker",
    "--health-check-interval-secs",
    "1",
    "--health-failure-threshold",
    "1",
    "--health-check-endpoint",
    "/ping",
)


def install_smg(force: bool) -> None:
    Venv("smg").create([SMG], lambda v: v.pip("install", SMG), force)


CLUSTERS = {"cluster": "sglang", "cluster-vllm": "vllm"}
"""Each cluster's name (its gateway's run record) and the engine its workers run: two can run side by side."""


def install_cluster(name: str) -> Callable[[bool], None]:
    def install(force: bool) -> None:
        ENGINES[CLUSTERS[name]].install(force)
        install_smg(force)

    return install


def cluster_installed(name: str) -> Callable[[], bool]:
    return lambda: ENGINES[CLUSTERS[name]].installed() and Venv("smg").stamp.is_file()


def launch_gateway(port: int, worker_urls: Sequence[str], policy: str) -> list[str]:
    """SMG on ``port`` routing to ``worker_urls`` by ``policy``; each answer names its worker in
    ``x-smg-routed-worker-id``."""
    cmd = [str(VENVS / "smg" / "bin" / "python"), "-m", "smg", "launch", "--host", "127.0.0.1", "--port", str(port)]
    cmd += ["--worker-urls", *worker_urls, "--policy", policy, "--routing-key-headers", ROUTING_KEY_HEADER]
    # Its metrics listener binds 0.0.0.0:29000 unless told otherwise: a second gateway would clash on it.
    cmd += ["--prometheus-host", "127.0.0.1", "--prometheus-port", str(free_port())]
    return [*cmd, *GATEWAY_FLAGS, "--log-level", "warn"]


def worker_name(cluster: str, index: int) -> str:
    return f"{cluster}-worker-{index}"


def spawn_worker(
    cluster: str, index: int, port: int, kv_pool: int = CONTEXT
) -> tuple[str, subprocess.Popen[bytes], str]:
    """Launch ``cluster``'s worker ``index`` (an SGLang or a vLLM server) on ``port`` (also how a test brings back
    a worker it killed)."""
    if CLUSTERS[cluster] == "vllm":  # SMG tells a vLLM worker by its /v1/models (owned_by "vllm"): it needs no flag
        cmd, env = launch_vllm(port, kv_pool)
        return spawn(worker_name(cluster, index), cmd, env, port)
    cmd, env = launch_sglang(port, kv_pool)
    # On CPU, SGLang sizes its pools from the host memory free at start-up, and fails when other processes took
    # some while it loaded ("Loaded weights leave no GPU memory for the KV cache"), which workers starting side by
    # side on a shared machine do. The pool is capped by --max-total-tokens anyway: let it claim what it needs.
    cmd += ["--mem-fraction-static", "0.95"]
    return spawn(worker_name(cluster, index), cmd, env, port)


def start_cluster(name: str, workers: int, policy: str, port: int | None, kv_pool: int) -> None:
    """Start ``workers`` workers of cluster ``name`` side by side, then SMG in front of them; print its URL.

    Each worker has a run record of its own (``NAME-worker-I``), so one can be stopped alone (a fault test); the
    gateway's record (``NAME``) lists them, and ``stop NAME`` stops them all. A running cluster is reused only
    when it is the one asked for: another shape is refused, not handed out as if it were."""
    engine = CLUSTERS[name]
    if (info := running(name)) is not None:
        asked = {"workers": workers, "policy": policy, "kv_pool": kv_pool}
        urls = info.get("workers")
        have = {
            "workers": len(urls) if isinstance(urls, list) else None,
            **{k: info.get(k) for k in ("policy", "kv_pool")},
        }
        if have != asked:
            shape = ", ".join(f"{key} {value}" for key, value in have.items())
            sys.exit(f"{name} already runs with {shape}; stop it first (engines.py stop {name}) to start another")
        print(info["url"])
        return
    if not ENGINES[name].installed():
        sys.exit(f"{name} is not installed: run engines.py install {name}")
    began = time.monotonic()
    try:
        spawned = [spawn_worker(name, index, free_port(), kv_pool) for index in range(workers)]
        # Workers start side by side, sharing the cores: give them the time one takes, times their number.
        health, timeout = ENGINES[engine].health_path, workers * ENGINES[engine].start_timeout
        for worker, process, url in spawned:
            wait_healthy(worker, process, url + health, timeout, began)
        port = port or free_port()
        urls = [url for _, _, url in spawned]
        gateway = spawn(
            name,
            launch_gateway(port, urls, policy),
            {},
            port,
            workers=urls,
            policy=policy,
            kv_pool=kv_pool,
        )
        wait_gateway(*gateway, workers)
    except SystemExit:
        stop_cluster(name)  # no worker is left behind by a failed start
        raise
    log(f"{name}: {workers} {engine} workers ({policy}) ready after {time.monotonic() - began:.1f} s")
    print(gateway[2])


def wait_gateway(name: str, process: subprocess.Popen[bytes], url: str, workers: int) -> None:
    """Wait until the gateway counts ``workers`` healthy workers: its /readiness answers 200 with the first."""

    def all_ready() -> bool:
        try:
            with urllib.request.urlopen(url + "/readiness", timeout=5) as response:
                return int(json.load(response).get("healthy_workers", 0)) >= workers
        except (urllib.error.URLError, OSError, ValueError):
            return False

    wait_healthy(name, process, url + "/readiness", 60.0, time.monotonic(), all_ready)


def stop_cluster(name: str) -> None:
    if running(name) is not None:
        stop(name)
    for index in range(64):
        if run_file(worker_name(name, index)).is_file():
            stop(worker_name(name, index))


# --- the command line ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Engine:
    """How to install one engine, tell that it is installed, launch it on a port and know it is ready."""

    name: str
    install: Callable[[bool], None]
    installed: Callable[[], bool]
    launch: Callable[[int], tuple[list[str], dict[str, str]]] | None = None
    health_path: str = "/health"
    start_timeout: float = 120.0


ENGINES = {
    e.name: e
    for e in (
        Engine("model", install_model, (MODEL_DIR / "recipe.json").is_file),
        Engine("llama-server", install_llama_server, LLAMA_SERVER.is_file, launch_llama_server, "/health", 60.0),
        Engine("sglang", install_sglang, Venv("sglang").stamp.is_file, launch_sglang, "/health_generate", 300.0),
        Engine("vllm", install_vllm, Venv("vllm").stamp.is_file, launch_vllm, "/health", 300.0),
        *(Engine(name, install_cluster(name), cluster_installed(name)) for name in CLUSTERS),
    )
}
SERVERS = (*(name for name, engine in ENGINES.items() if engine.launch), *CLUSTERS)
"""What ``start`` and ``stop`` take: the engines that serve, and the clusters (SMG in front of their workers)."""
_HANDED_OUT: set[int] = set()


def free_port() -> int:
    """A loopback port free now and outside the kernel's ephemeral range.

    A server binds its ports many seconds after they are chosen (SGLang binds its KV-event port once the model is
    loaded). A port from the ephemeral range can meanwhile become the local end of some outgoing connection, such as
    a health poll, and the bind fails; ports below that range are only ever taken by a bind."""
    low, _ = ephemeral_range()
    for _ in range(1000):
        # A machine whose ephemeral range starts low leaves no such ports: take what the kernel gives.
        port = random.randrange(PORT_FLOOR, low) if low > PORT_FLOOR + 1000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            port = int(s.getsockname()[1])
        if port in _HANDED_OUT:
            continue
        _HANDED_OUT.add(port)
        return port
    sys.exit(f"no free port in {PORT_FLOOR}-{low - 1}: stop some servers (engines.py stop ...) and retry")


PORT_FLOOR = 20000


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for the local ports of outgoing connections (Linux's default if it cannot be read)."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def run_file(engine: str) -> Path:
    return RUN / f"{engine}.json"


def running(engine: str) -> dict[str, object] | None:
    """The run record of a started engine whose processes still exist, else None (a stale record is removed).

    A process group id is never handed out again while any member lives, so a live group with this id is the
    engine's, unless a newer group reuses the id after ours died: then its leader runs another executable.
    """
    path = run_file(engine)
    if not path.is_file():
        return None
    info: dict[str, object] = json.loads(path.read_text())
    pid, program = info["pid"], info["program"]
    if isinstance(pid, int) and group_alive(pid):
        try:
            executable = os.readlink(f"/proc/{pid}/exe")  # survives setproctitle, unlike cmdline
        except OSError:
            executable = ""  # leader gone (or a zombie), its workers remain
        if executable in ("", os.path.realpath(str(program))):
            return info
    path.unlink()
    return None


def empty_cache(engine: str, url: str, attempts: int = 120) -> None:
    """Empty the prefix cache of the ``engine`` server at ``url`` (straight, not through a gateway). SGLang refuses
    (400) and vLLM declines (200, ``success: false``) while a request holds blocks, such as a gateway's probe:
    both are asked again until they empty it. llama-server erases each slot (its ``--slot-save-path``)."""
    if engine == "llama-server":
        with urllib.request.urlopen(url + "/slots", timeout=60) as response:
            slots = json.load(response)
        for slot in slots:
            _post(f"{url}/slots/{slot['id']}?action=erase")
        return
    path = "/reset_prefix_cache" if engine == "vllm" else "/flush_cache"  # vLLM's: VLLM_SERVER_DEV_MODE=1
    for _ in range(attempts):
        try:
            answer = _post(url + path)
        except urllib.error.HTTPError as refused:
            if refused.code != 400:
                raise
        else:
            if engine != "vllm" or json.loads(answer or b"{}").get("success", True):
                return
        time.sleep(0.5)
    sys.exit(f"{engine} at {url} did not empty its cache in {attempts / 2:.0f} s: a request still holds its blocks")


def _post(url: str) -> bytes:
    with urllib.request.urlopen(urllib.request.Request(url, data=b"", method="POST"), timeout=60) as response:
        body: bytes = response.read()
        return body


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def start(engine: Engine, port: int | None) -> None:
    if engine.launch is None:
        sys.exit(f"{engine.name} is not a server; use: engines.py install {engine.name}")
    if (info := running(engine.name)) is not None:
        print(info["url"])
        return
    if not engine.installed():
        sys.exit(f"{engine.name} is not installed: run engines.py install {engine.name}")
    port = port or free_port()
    cmd, extra_env = engine.launch(port)
    began = time.monotonic()
    name, process, url = spawn(engine.name, cmd, extra_env, port)
    wait_healthy(name, process, url + engine.health_path, engine.start_timeout, began)
    print(url)


def spawn(
    name: str, cmd: Sequence[str], extra_env: dict[str, str], port: int, **record: object
) -> tuple[str, subprocess.Popen[bytes], str]:
    """Launch ``cmd`` in a session of its own and write its run record (with ``record`` added)."""
    logfile = LOGS / f"{name}-{port}.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    RUN.mkdir(parents=True, exist_ok=True)
    with logfile.open("w") as out:
        out.write(f"$ {' '.join(cmd)}\n")
        out.flush()
        # A session of its own, so stop can signal the server and every worker it spawned.
        process = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **extra_env},
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    info = {"engine": name, "pid": process.pid, "program": cmd[0], "port": port, "url": url, "log": str(logfile)}
    info["kv_events"] = kv_events_endpoint(cmd)
    run_file(name).write_text(json.dumps({**info, **record}))
    return name, process, url


def wait_healthy(
    name: str,
    process: subprocess.Popen[bytes],
    health: str,
    timeout: float,
    began: float,
    ready: Callable[[], bool] | None = None,
) -> None:
    """Wait until ``health`` answers 200 (or ``ready()`` holds); if the process exits first or time runs out, stop
    it and fail."""
    deadline = began + timeout
    while not (ready() if ready else healthy(health)):
        if process.poll() is not None or time.monotonic() > deadline:
            reason = "exited" if process.poll() is not None else f"not healthy after {timeout:.0f} s"
            info = running(name)
            stop(name)
            logfile = Path(str(info["log"])) if info else LOGS
            tail = "\n".join(logfile.read_text(errors="replace").splitlines()[-25:]) if logfile.is_file() else ""
            sys.exit(f"{tail}\n{name} {reason}; full log: {logfile}")
        time.sleep(0.5)
    log(f"{name} healthy after {time.monotonic() - began:.1f} s (pid {process.pid})")


def stop(name: str, grace: float = 30.0) -> None:
    info = running(name)
    if info is None:
        log(f"{name} is not running")
        return
    pid = info["pid"]
    assert isinstance(pid, int)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and group_alive(pid):
        time.sleep(0.2)
    if group_alive(pid):
        log(f"{name} still running {grace:.0f} s after SIGTERM: killing process group {pid}")
        os.killpg(pid, signal.SIGKILL)
    run_file(name).unlink(missing_ok=True)
    shutil.rmtree(RUN / f"{name}-{info['port']}-slots", ignore_errors=True)  # llama-server's slot-save folder
    events = str(info.get("kv_events") or "")
    if events.startswith("ipc://"):  # vLLM's event socket file
        Path(events.removeprefix("ipc://")).unlink(missing_ok=True)
    log(f"{name} stopped")


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    # A zombie leader still counts as a member; reap it if it is our child (a failed start).
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pgid, os.WNOHANG)
    return True


def status(names: Sequence[str]) -> None:
    for name in names:
        engine = ENGINES[name]
        info = running(name)
        state = f", running at {info['url']} (pid {info['pid']})" if info else ", stopped" if name in SERVERS else ""
        print(f"{name}: {'installed' if engine.installed() else 'not installed'}{state}")


def check(name: str) -> None:
    info = running(name)
    if info is None:
        sys.exit(f"{name} is not running: run engines.py start {name}")
    python = VENVS / "model" / "bin" / "python"
    code = subprocess.call([str(python), str(HERE / "check_engine.py"), name, str(info["url"]), str(MODEL_DIR)])
    sys.exit(code)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="action", required=True)
    install_p = sub.add_parser("install")
    install_p.add_argument("engine", choices=ENGINES)
    install_p.add_argument("--force", action="store_true", help="rebuild even if the cache looks current")
    start_p = sub.add_parser("start")
    start_p.add_argument("engine", choices=SERVERS)
    start_p.add_argument("--port", type=int, default=None)
    start_p.add_argument("--workers", type=int, default=2, help="cluster: how many workers")
    start_p.add_argument("--policy", choices=POLICIES, default="cache_aware", help="cluster: SMG's routing policy")
    start_p.add_argument("--kv-pool", type=int, default=CONTEXT, help="cluster: KV pool of each worker, in tokens")
    sub.add_parser("stop").add_argument("engine", choices=SERVERS)
    sub.add_parser("check").add_argument("engine", choices=[n for n, e in ENGINES.items() if e.launch])
    sub.add_parser("status").add_argument("engine", nargs="?", choices=ENGINES)
    args = parser.parse_args()
    if args.action == "install":
        ENGINES[args.engine].install(args.force)
    elif args.action == "start" and args.engine in CLUSTERS:
        start_cluster(args.engine, args.workers, args.policy, args.port, args.kv_pool)
    elif args.action == "start":
        start(ENGINES[args.engine], args.port)
    elif args.action == "stop" and args.engine in CLUSTERS:
        stop_cluster(args.engine)
    elif args.action == "stop":
        stop(args.engine)
    elif args.action == "status":
        status([args.engine] if args.engine else list(ENGINES))
    else:
        check(args.engine)


if __name__ == "__main__":
    main()
