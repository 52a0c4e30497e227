"""The report in a real browser: headless Chromium (Debian's ``chromium`` package) opens the file, loads nothing
from the network, logs no error, draws every chart at a real size, runs none of the trace's markup, and saves a
screenshot.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: file descriptors 3 and 4,
one JSON message per NUL-terminated frame), so the test needs no port and no websocket library.

``AGENTCACHE_REPORT_SCREENSHOT=docs/img/report.png`` also writes the screenshot of the session recorded from a
real SGLang server there (that is how the one in docs/report.md is made).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import signal
import struct
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentcache import get_tokenizer
from agentcache.demo.scenario import session
from agentcache.drift import CacheOptions, read_trace
from agentcache.httpx import SESSION_HEADER, CacheAwareTransport, TraceRecorder
from agentcache.report import build_report, render_html
from tests.conftest import EngineInfo
from tests.report import HOSTILE, PAYLOAD, write_demo_trace

WIDTH = 1280
TIMEOUT = 60.0


class Chromium:
    """One headless Chromium and one page in it."""

    def __init__(self, binary: str, profile: Path) -> None:
        commands, self._commands = os.pipe()
        self._replies, replies = os.pipe()
        commands, replies = _high(commands), _high(replies)  # so that moving them to 3 and 4 clobbers neither
        args = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "about:blank",
        ]
        profile.mkdir(parents=True, exist_ok=True)
        self.log = profile / "chromium.log"
        actions = [
            (os.POSIX_SPAWN_DUP2, commands, 3),
            (os.POSIX_SPAWN_DUP2, replies, 4),
            (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, str(self.log), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        ]
        self.pid = os.posix_spawn(binary, args, dict(os.environ), file_actions=actions)
        os.close(commands)
        os.close(replies)
        self._buffer = b""
        self._id = 0
        self.session: str | None = None
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, params: dict[str, Any] | None = None, page: bool = True) -> dict[str, Any]:
        """Send a command (to the page's session unless ``page`` is False) and return its result; events that
        arrive meanwhile are kept in ``events``."""
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if page and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive()
            if reply.get("id") != self._id:
                self.events.append(reply)
                continue
            if "error" in reply:
                raise AssertionError(f"{method}: {reply['error']}")
            result: dict[str, Any] = reply["result"]
            return result

    def _receive(self) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._replies], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(self._replies, 1 << 20) if ready else b""
            if not chunk:
                raise AssertionError(f"Chromium stopped answering; its log:\n{self.log.read_text()[-3000:]}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        reply: dict[str, Any] = json.loads(message)
        return reply

    def open(self, url: str) -> None:
        """A new page, with console, log and network events on, ``WIDTH`` wide; returns once ``url`` has loaded."""
        target = self.call("Target.createTarget", {"url": "about:blank"}, page=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, page=False)[
            "sessionId"
        ]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable")
        metrics = {"width": WIDTH, "height": 900, "deviceScaleFactor": 1, "mobile": False}
        self.call("Emulation.setDeviceMetricsOverride", metrics)
        self.events.clear()
        self.call("Page.navigate", {"url": url})
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._receive())
        # two animation frames: layout and paint are done, and late console messages have arrived
        self.evaluate("new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => done(true))))")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Every console error or warning, uncaught exception and browser log error or warning so far."""
        out = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                out.append(f"exception: {params['exceptionDetails'].get('text')}")
            elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "warning", "assert"):
                out.append(f"console.{params['type']}: {[a.get('value') for a in params['args']]}")
            elif method == "Log.entryAdded" and params["entry"]["level"] in ("error", "warning"):
                out.append(f"log {params['entry']['level']}: {params['entry']['text']}")
        return out

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events if e.get("method") == "Network.requestWillBeSent"]

    def screenshot(self, path: Path, height: int) -> None:
        clip = {"x": 0, "y": 0, "width": WIDTH, "height": height, "scale": 1}
        shot = self.call("Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        with contextlib.suppress(AssertionError):  # it may close the pipe before it answers
            self.call("Browser.close", page=False)
        deadline = time.monotonic() + 10
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                break
            time.sleep(0.05)
        os.close(self._commands)
        os.close(self._replies)


def _high(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


@pytest.fixture
def browser(tmp_path: Path) -> Any:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.fail("the browser test needs Chromium: apt-get install chromium (Debian's package)")
    chromium = Chromium(binary, tmp_path / "profile")
    try:
        yield chromium
    finally:
        chromium.close()


#: What the page says about its charts, measured by the browser.
MEASURE = """(() => {
  const box = e => { const r = e.getBoundingClientRect(); return [Math.round(r.width), Math.round(r.height)]; };
  return {
    charts: [...document.querySelectorAll('svg.chart')].map(s => [s.dataset.chart, ...box(s)]),
    bars: [...document.querySelectorAll('g.turn')].map(g => [+g.dataset.prompt, +g.dataset.predicted,
      g.querySelector('rect.prompt').getBoundingClientRect().height,
      g.querySelector('rect.predicted').getBoundingClientRect().height]),
    markers: [...document.querySelectorAll('path.drift')].filter(p => box(p)[0] > 0).length,
    lines: [...document.querySelectorAll('g.series polyline')].filter(p => box(p)[0] > 0).length,
    images: document.querySelectorAll('img, script, iframe, object, embed').length,
    title: document.title,
    text: document.body.innerText,
    overflow: document.documentElement.scrollWidth - innerWidth,
    height: document.documentElement.scrollHeight,
  };
})()"""


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_report_renders_without_errors(browser: Chromium, tmp_path: Path) -> None:
    trace = write_demo_trace(tmp_path / "demo.jsonl")
    report = build_report(read_trace(trace), name=trace.name)
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    browser.open(page.as_uri())
    seen = browser.evaluate(MEASURE)
    assert browser.problems() == []
    assert browser.requests() == [page.as_uri()]  # the page itself, nothing else
    sessions = report.sessions()
    kinds = sorted(chart for chart, _, _ in seen["charts"])
    assert kinds == sorted(["causes", "what-if", *["turns", "cumulative"] * len(sessions)])
    for chart, width, height in seen["charts"]:
        assert width > 900 and height > 60, chart  # a real size, at the page's width
    assert len(seen["bars"]) == len(report.turns)
    for prompt, predicted, prompt_height, predicted_height in seen["bars"]:  # drawn to scale
        assert prompt_height > 20 and abs(predicted_height / prompt_height - predicted / prompt) < 0.01
    assert seen["markers"] == sum(1 for t in report.turns if t.cause not in ("none", "new_session")) > 0
    assert seen["lines"] == sum(3 + all(t.reported_cached is not None for t in turns) for turns in sessions.values())
    assert seen["images"] == 0 and seen["title"] == f"agentcache report: {trace.name}"  # no handler ran
    assert HOSTILE in seen["text"] and f"added: tool{PAYLOAD}" in seen["text"]  # shown as text
    assert seen["overflow"] <= 0
    shot = tmp_path / "report.png"
    browser.screenshot(shot, seen["height"])
    assert png_size(shot) == (WIDTH, seen["height"])


def test_the_harness_sees_errors_and_loads(browser: Chromium, tmp_path: Path) -> None:
    """A control: a page that errs and fetches is caught, so the empty lists above mean something."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<!DOCTYPE html><title>bad</title><img src='missing.png'>"
        "<script>console.error('deliberate'); undefinedFunction();</script>",
        encoding="utf-8",
    )
    browser.open(page.as_uri())
    problems = browser.problems()
    assert any("deliberate" in p for p in problems)
    assert any(p.startswith("exception:") for p in problems)
    assert (tmp_path / "missing.png").as_uri() in browser.requests()


def record_demo(engine: EngineInfo, path: Path) -> Path:
    """The demo's drifting session and the same session without drift, sent to a real engine through the
    cache-aware transport (no canonicalization), which records each request with the usage the server sent."""
    transport = CacheAwareTransport(
        server=engine.name, canonicalize=False, recorder=TraceRecorder(path), telemetry=False
    )
    tokenizer = get_tokenizer("o200k_base")
    salt = uuid.uuid4().hex  # a cache namespace of our own on the server
    with httpx.Client(transport=transport, base_url=engine.url, timeout=600) as http:
        for name, drift in (("forge-drifting", True), ("forge-stable", False)):
            for body in session(tokenizer, 8, drift=drift, scale=0.05):
                request = {**body, "model": engine.model, "max_tokens": 2, "temperature": 0.0, "cache_salt": salt}
                response = http.post("/v1/chat/completions", json=request, headers={SESSION_HEADER: name})
                assert response.status_code == 200, response.text
    return path


def test_screenshot_of_a_session_recorded_from_sglang(browser: Chromium, sglang: EngineInfo, tmp_path: Path) -> None:
    trace = read_trace(record_demo(sglang, tmp_path / "forge.jsonl"))
    assert trace.problems == [] and all(r.usage for r in trace.records)
    report = build_report(trace, name="forge.jsonl", cache=CacheOptions(model_dir=str(sglang.model_dir)))
    # with the model folder, the predicted figures count the server's own prompt: they are what SGLang reported
    assert [t.predicted_cached for t in report.turns] == [t.reported_cached for t in report.turns]
    page = tmp_path / "report.html"
    page.write_text(render_html(report), encoding="utf-8")
    browser.open(page.as_uri())
    seen = browser.evaluate(MEASURE)
    assert browser.problems() == [] and browser.requests() == [page.as_uri()]
    assert len(seen["bars"]) == 16 and seen["lines"] == 8  # the server's figure is drawn for every turn
    reported = [t.reported_cached for t in report.turns]
    assert all(value is not None for value in reported) and any(reported)
    # the picture for the docs: the summary, both trace-wide charts and the first session's two charts
    bottom = browser.evaluate(
        "Math.ceil(document.querySelector('article.session figure:nth-of-type(2)').getBoundingClientRect().bottom)"
    )
    shot = tmp_path / "report.png"
    browser.screenshot(shot, bottom + 12)
    assert png_size(shot) == (WIDTH, bottom + 12)
    destination = os.environ.get("AGENTCACHE_REPORT_SCREENSHOT")
    if destination:
        shutil.copy(shot, destination)
