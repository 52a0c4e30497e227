"""Real models' chat templates on llama-server: every turn the server accepts is predicted to the token.

The templates are the ones llama.cpp ships with its source (``models/templates/`` of the sdist the engine script
builds llama-server from); nothing is downloaded and nothing is copied into the repository. For each template a
model folder is made in a temporary directory (the test model's tokenizer and config, that template as its
``chat_template``), a llama-server is started on it with ``--chat-template-file``, and multi-turn sessions of many
shapes go through :class:`CacheAwareTransport`. The assistant turns in the history are fixed texts and tool
calls, never what the random-weight model generates, so every run sends the same requests.

A template llama-server refuses at start is passed over with a warning that gives its reason. On every turn the
server accepts, the prediction must equal the report; a turn the client cannot render must say why, and its
request must have gone out as the agent wrote it.

Cost: one llama-server start (a few seconds) and 29 turns per template; most of a turn is llama-server's own
request handling (its template analysis and tool grammar), not prompt evaluation. The 70 templates took 20 minutes
on two CPUs shared with other work (9 to 74 s a template), about 7 s a template on a quiet machine. Run it
alone with ``scripts/test tests/servers/test_real_templates.py``, on some templates with
``AGENTCACHE_TEMPLATES='*Qwen3*'``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import warnings
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import httpx
import pytest

from agentcache.servers import ChatTemplate, ServerPrompt, get_profile
from tests.conftest import EngineInfo, engine_script
from tests.servers.realtemplates import TEMPLATES, Outcome, chosen, problems, run_sessions, tokenizer

START_TIMEOUT = 60.0


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes] | None
    refused: str | None


def start_server(template: Path, log: Path) -> Server:
    """A llama-server of the test model on ``template``; ``refused`` holds its log's tail when it will not start."""
    port = engine_script.free_port()
    command, _ = engine_script.launch_llama_server(port)
    command += ["--chat-template-file", str(template), "--no-warmup"]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    while not engine_script.healthy(url + "/health"):
        if process.poll() is not None or time.monotonic() > deadline:
            stop_server(process)
            tail = [line for line in log.read_text(errors="replace").splitlines() if "error" in line.lower()]
            return Server(url, None, " | ".join(tail[-3:]) or "exited")
        time.sleep(0.2)
    return Server(url, process, None)


def stop_server(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def model_folder(template: Path, into: Path, url: str) -> Path:
    """The test model's tokenizer with ``template`` as its chat template. The test model's GGUF declares no BOS
    token, so llama.cpp falls back to its BPE default (id 11, ","), which templates render as ``bos_token``;
    the folder says the same, as a real model's GGUF and tokenizer_config agree."""
    into.mkdir()
    (into / "tokenizer.json").symlink_to(engine_script.MODEL_DIR / "tokenizer.json")
    config = json.loads((engine_script.MODEL_DIR / "tokenizer_config.json").read_text())
    config["chat_template"] = template.read_text()
    config["bos_token"] = httpx.get(f"{url}/props", timeout=30).json()["bos_token"]
    (into / "tokenizer_config.json").write_text(json.dumps(config))
    return into


def erase_slots(url: str) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        for slot in http.get("/slots").json():
            http.post(f"/slots/{slot['id']}", params={"action": "erase"}).raise_for_status()


def server_prompt(model_dir: Path) -> ServerPrompt:
    """What ``model_dir=`` makes of the folder, with the tokenizer already loaded."""
    profile = get_profile("llama.cpp")
    return ServerPrompt(profile, ChatTemplate.from_pretrained(model_dir, profile.float_format), tokenizer())


def run_template(template: Path, workdir: Path) -> tuple[str | None, list[Outcome]]:
    """``(why llama-server refused the template, None if it did not; the outcome of every turn)``."""
    server = start_server(template, workdir / "llama-server.log")
    try:
        if server.refused is not None:
            return server.refused, []
        prompt = server_prompt(model_folder(template, workdir / "model", server.url))
        return None, run_sessions(server.url, prompt, partial(erase_slots, server.url))
    finally:
        stop_server(server.process)
        shutil.rmtree(engine_script.RUN / f"llama-server-{server.url.rsplit(':', 1)[1]}-slots", ignore_errors=True)


@pytest.fixture(scope="module")
def installed(llama_server: EngineInfo) -> EngineInfo:
    """The shared llama-server fixture installs the binary, the model and the sdist the templates come from."""
    return llama_server


def test_every_accepted_turn_is_predicted_exactly(installed: EngineInfo, tmp_path: Path) -> None:
    """One test over all the templates, not one per template: they come with the sdist, which a fresh machine
    downloads only when the engine fixtures run, after collection. ``AGENTCACHE_TEMPLATES=GLOB`` picks some."""
    picked = chosen()
    if "AGENTCACHE_TEMPLATES" not in os.environ:
        assert len(picked) >= 30, f"the real templates are missing from {TEMPLATES}"
    found = []
    for template in picked:
        workdir = tmp_path / template.stem
        workdir.mkdir()
        refused, outcomes = run_template(template, workdir)
        if refused is not None:
            warnings.warn(f"llama-server refuses {template.stem}: {refused}", stacklevel=1)
        found += problems(template, outcomes)
    assert not found, "\n".join(found)
