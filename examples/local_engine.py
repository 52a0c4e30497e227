"""The examples' engine: a project test engine started (and installed, the first time) by
``scripts/engines/engines.py``, or one already running at ``--url``."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ENGINES_PY = Path(__file__).resolve().parent.parent / "scripts" / "engines" / "engines.py"
sys.path.insert(0, str(ENGINES_PY.parent))
import engines as engine_script  # noqa: E402  # the one place that knows the engines' folders

MODEL = engine_script.SERVED_NAME


def engines(*args: str) -> str:
    """Run the engine script; its last line of output (the URL, for ``start``)."""
    done = subprocess.run([sys.executable, str(ENGINES_PY), *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"engines.py {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def start(engine: str) -> str:
    """Install (the first time) and start one of the project's CPU engines, or reuse it if running; its URL."""
    print(f"installing and starting {engine} with scripts/engines/engines.py (the first time builds it)...")
    engines("install", "model")
    engines("install", engine)
    return engines("start", engine)


def model_dir() -> Path:
    """The folder every test engine loads the model from: its chat template and tokenizer.json."""
    return engine_script.MODEL_DIR


def main(run: Callable[[str, Path], None], description: str | None) -> None:
    """An example's command line: ``--url`` of a running llama-server, or one started here; then ``run(url,
    model_dir)``."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="base URL of a running llama-server (default: start one with engines.py)")
    args = parser.parse_args()
    with llama_server(args.url) as url:
        run(url, model_dir())


@contextmanager
def llama_server(url: str | None) -> Iterator[str]:
    """A llama-server with empty slots (so predictions line up from the first call); stopped after if started."""
    started = False
    if url is None:
        started = "running" not in engines("status", "llama-server")
        url = start("llama-server")
    try:
        with httpx.Client(base_url=url, timeout=60) as http:
            for slot in http.get("/slots").json():
                http.post(f"/slots/{slot['id']}", params={"action": "erase"}).raise_for_status()
        yield url
    finally:
        if started:
            engines("stop", "llama-server")
