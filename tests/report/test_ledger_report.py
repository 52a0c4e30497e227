"""The HTML report of a live ledger: the turns a cache-aware transport sent to a real engine, as it recorded them."""

from __future__ import annotations

from pathlib import Path

import httpx

from agentcache.cache.options import CacheOptions
from agentcache.drift import read_trace
from agentcache.httpx import CacheAwareTransport, TraceRecorder
from agentcache.report import build_report, ledger_report, render_html
from agentcache.transport import CacheMiddleware
from tests.conftest import EngineInfo
from tests.report.test_html import Page
from tests.transport.test_provider_diagnostics import SYSTEM as SYSTEM_RULES
from tests.transport.test_provider_diagnostics import anthropic_message, converse

SYSTEM = "You are a careful assistant. Answer in one short sentence. " * 8


def test_a_ledger_renders_its_own_figures(llama_server: EngineInfo) -> None:
    llama_server.empty_cache()
    transport = CacheAwareTransport(server=llama_server.profile, model_dir=llama_server.model_dir, ask_output_ids=True)
    history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Say hi."}]
    edited = [{"role": "system", "content": SYSTEM.replace("careful", "patient")}, *history[1:]]
    bodies = [history, [*history, {"role": "assistant", "content": "Hi."}, {"role": "user", "content": "Again."}]]
    bodies.append([*edited, *bodies[1][1:]])  # the system prompt edited: the whole prefix is lost
    with httpx.Client(transport=transport, base_url=llama_server.url, timeout=120) as http:
        for messages in bodies:
            body = {"model": llama_server.model, "messages": messages, "max_tokens": 2, "temperature": 0}
            assert http.post("/v1/chat/completions", json=body).status_code == 200
        http.post("/v1/chat/completions", json={"model": llama_server.model, "messages": "not a list"})

    ledger = transport.ledger
    report = ledger_report(ledger, transport.middleware.cache_options, llama_server.model_dir.name, name="run")
    page = Page(render_html(report))
    turns = ledger.turns()
    predicted = [t for t in turns if t.predicted_cached is not None]
    assert len(predicted) == 3 and len(report.problems) == 1  # the body that is not a chat request
    assert "not a chat request" in report.problems[0].message
    for turn in predicted:
        assert turn.predicted_cached == turn.reported_cached  # the guarantee the report shows
        numbers = (
            turn.turn,
            turn.predicted_prompt_tokens,
            turn.predicted_cached,
            turn.reported_cached,
            turn.predicted_cached,
            turn.wasted_tokens,
        )
        cells = ["-" if n is None else f"{n:,}" for n in numbers] + [turn.cause, turn.detail]
        assert page.rows[(turn.session, turn.turn)] == cells
    assert [t.cause for t in predicted] == ["new_session", "none", "system_edited"]
    assert predicted[2].divergence is not None and predicted[2].divergence.part == "system"
    text = " ".join(page.text)
    assert f"{sum(t.reported_cached or 0 for t in predicted):,}" in text
    assert "as a cache-aware transport sent them" in text


def test_provider_diagnoses_and_breakpoints_show_beside_the_causes(tmp_path: Path) -> None:
    """A hosted session with the provider's diagnosis asked for and breakpoints placed: the report shows each
    turn's verdict and placement account from the ledger, counts them, and lists where the provider disagrees;
    the trace of the same session shows the same verdicts (it keeps no placement account)."""
    trace = tmp_path / "trace.jsonl"
    middleware = CacheMiddleware(server="anthropic", diagnostics=True, breakpoints=True, recorder=TraceRecorder(trace))
    system = SYSTEM_RULES * 6  # over the model's minimum, so the stable prefix gets a breakpoint
    replies = [
        anthropic_message("msg_1", None),
        anthropic_message("msg_2", {"type": "system_changed", "cache_missed_input_tokens": 900}),
        anthropic_message("msg_3", {"type": "tools_changed", "cache_missed_input_tokens": 50}),
    ]
    converse(middleware, replies, [system, system.replace("careful", "thorough"), system.replace("careful", "keen")])
    turns = middleware.ledger.turns()
    assert [t.provider_agrees for t in turns] == [None, True, False]  # the third blames the tools, not the system

    live = Page(render_html(ledger_report(middleware.ledger, middleware.cache_options, "o200k_base")))
    offline = Page(render_html(build_report(read_trace(trace), cache=CacheOptions(kind="anthropic"))))
    for page, accounts in ((live, True), (offline, False)):
        for turn in turns:
            cells = page.rows[(turn.session, turn.turn)]
            verdict = cells[8]
            assert verdict.startswith(str(turn.provider_verdict))
            assert verdict.endswith({None: "", True: " · agrees", False: " · disagrees"}[turn.provider_agrees])
            assert len(cells) == 10 if accounts else len(cells) == 9
            if accounts:
                account = turn.breakpoints
                assert account is not None and cells[9].startswith(f"{len(account.placed)} placed")
                for placed in account.placed:
                    assert f"{placed.path} at {placed.tokens:,} tokens: {placed.reason}" in cells[9]
        text = " ".join(page.text)
        assert "The provider's own diagnosis" in text and "They agree on 1 and disagree on 1" in text
        assert "Where the two disagree" in text
        assert ("Cache breakpoints placed" in text) is accounts
    placed = sum(len(t.breakpoints.placed) for t in turns if t.breakpoints is not None)
    assert placed > 0 and f"agentcache placed {placed} cache breakpoints" in " ".join(live.text)
