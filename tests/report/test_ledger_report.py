"""The HTML report of a live ledger: the turns a cache-aware transport sent to a real engine, as it recorded them."""

from __future__ import annotations

import httpx

from agentcache.httpx import CacheAwareTransport
from agentcache.report import ledger_report, render_html
from tests.conftest import EngineInfo
from tests.report.test_html import Page

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
