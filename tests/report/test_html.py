"""The HTML report: its figures are explain()'s, the trace cannot inject markup, the same trace gives the same
bytes, and ``agentcache report`` behaves like the other commands."""

from __future__ import annotations

import html
import shutil
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from itertools import accumulate
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentcache.cache.options import CACHE_KINDS
from agentcache.drift import CacheOptions, TurnReport, explain, read_trace
from agentcache.drift.summary import summarize
from agentcache.drift.trace import Trace, TraceRecord
from agentcache.report import build_report, render_html
from agentcache.report.charts import is_drift
from agentcache.report.svg import every, ticks
from tests.report import HOSTILE, PAYLOAD, write_demo_trace


class Page(HTMLParser):
    """The report parsed: each element with its attributes and the session article it sits in, the text, and
    the cells of each table row."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str], str | None]] = []
        self.text: list[str] = []
        self.rows: dict[tuple[str, int], list[str]] = {}
        self._session: str | None = None
        self._row: list[str] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "article":
            self._session = values["data-session"]
        if tag == "tr" and "data-turn" in values and self._session is not None:
            self._row = self.rows.setdefault((self._session, int(values["data-turn"])), [])
        if tag == "td" and self._row is not None:
            self._row.append("")
        self.elements.append((tag, values, self._session))

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self._session = None
        if tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._row:
            self._row[-1] += data

    def find(self, tag: str, cls: str | None = None) -> list[tuple[dict[str, str], str | None]]:
        return [(a, s) for t, a, s in self.elements if t == tag and (cls is None or cls in a.get("class", "").split())]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "agentcache", *args], capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_demo_trace(tmp_path_factory.mktemp("trace") / "demo.jsonl")


@pytest.fixture(scope="module")
def page(trace: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("html") / "report.html"
    result = run("report", str(trace), "--html", str(out))
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"wrote {out}: 13 requests in 3 sessions\n"
    return out.read_text(encoding="utf-8")


def by_session(reports: list[TurnReport]) -> dict[str, list[TurnReport]]:
    out: dict[str, list[TurnReport]] = {}
    for report in reports:
        out.setdefault(report.session, []).append(report)
    return out


def optional(value: int | None) -> str:
    return "" if value is None else str(value)


def test_per_turn_bars_are_explains_figures(trace: Path, page: str) -> None:
    parsed = Page(page)
    expected = explain(trace)  # the default model, as the report's default --cache
    in_page_order = [r for reports in by_session(expected).values() for r in reports]  # sessions as they appear
    for report, (attrs, session) in zip(in_page_order, parsed.find("g", "turn"), strict=True):
        assert session == report.session
        assert attrs["data-turn"] == str(report.turn)
        assert attrs["data-prompt"] == str(report.predicted_prompt_tokens)
        assert attrs["data-predicted"] == str(report.predicted_cached)
        assert attrs.get("data-reported", "") == optional(report.reported_cached)
        assert attrs["data-canonical"] == str(report.canonical_cached)
        assert attrs["data-wasted"] == str(report.wasted_tokens)
        assert attrs["data-cause"] == report.cause
    # one drift marker per turn that broke the prefix, and a server tick per turn with usage
    assert len(parsed.find("path", "drift")) == sum(is_drift(r.cause) for r in expected) > 0
    with_usage = sum(r.reported_cached is not None for r in expected)
    assert len(parsed.find("line", "reported")) == with_usage == len(by_session(expected)["agent"])


def test_cumulative_series_are_running_totals(trace: Path, page: str) -> None:
    series = {(s, a["data-series"]): a["data-values"] for a, s in Page(page).find("g", "series")}
    for session, reports in by_session(explain(trace)).items():

        def running(values: list[int]) -> str:
            return ",".join(str(v) for v in accumulate(values))

        assert series[(session, "prompt")] == running([r.predicted_prompt_tokens for r in reports])
        assert series[(session, "predicted")] == running([r.predicted_cached for r in reports])
        assert series[(session, "canonical")] == running([r.canonical_cached for r in reports])
        if all(r.reported_cached is not None for r in reports):
            assert series[(session, "reported")] == running([r.reported_cached or 0 for r in reports])
        else:
            assert (session, "reported") not in series
    assert ("agent", "reported") in series


def test_causes_ranked_by_wasted_tokens(trace: Path, page: str) -> None:
    summary = summarize(explain(trace))
    rows = [(a["data-cause"], int(a["data-wasted"]), int(a["data-turns"])) for a, _ in Page(page).find("g", "cause")]
    expected = {c: (summary.wasted_by_cause.get(c, 0), n) for c, n in summary.turns_by_cause.items() if is_drift(c)}
    assert {cause: (wasted, turns) for cause, wasted, turns in rows} == expected
    assert [wasted for _, wasted, _ in rows] == sorted((wasted for _, wasted, _ in rows), reverse=True)
    assert len(rows) >= 3  # volatile_value, tool_order, tool_added, model_changed at least in this trace


def test_what_if_runs_every_cache_kind(trace: Path, page: str) -> None:
    bars = {(a["data-kind"], a.get("data-mode")): a for a, _ in Page(page).find("g", "whatif")}
    for kind in CACHE_KINDS:
        reports = explain(trace, cache=CacheOptions(kind))
        for mode, cached in (("raw", "predicted_cached"), ("canonical", "canonical_cached")):
            bar = bars[(kind, mode)]
            assert int(bar["data-cached"]) == sum(getattr(r, cached) for r in reports)
            assert int(bar["data-prompt"]) == sum(r.predicted_prompt_tokens for r in reports)
    assert int(bars[("reported", None)]["data-cached"]) == summarize(explain(trace)).reported_cached
    assert len(bars) == 2 * len(CACHE_KINDS) + 1
    figures = [int(bars[(k, "raw")]["data-cached"]) for k in ("sglang", "vllm", "openai")]
    assert len(set(figures)) > 1  # the rules differ, and so do the figures


def test_tables_list_every_turn(trace: Path, page: str) -> None:
    rows = Page(page).rows
    reports = explain(trace)
    assert len(rows) == len(reports)
    for r in reports:
        counts = (r.predicted_prompt_tokens, r.predicted_cached, r.reported_cached, r.canonical_cached)
        numbers = [r.turn, *counts, r.wasted_tokens]
        cells = ["-" if n is None else f"{n:,}" for n in numbers] + [r.cause, r.detail]
        assert rows[(r.session, r.turn)] == cells


def test_header_totals(trace: Path, page: str) -> None:
    summary = summarize(explain(trace))
    text = " ".join(Page(page).text)
    for figure in (
        summary.predicted_prompt_tokens, summary.predicted_cached, summary.wasted_tokens, summary.canonical_cached
    ):
        assert f"{figure:,}" in text
    assert f"{summary.hit_ratio:.1%} of the prompt tokens" in text
    assert "13 requests in 3 sessions" in text and "SGLang (radix tree) model, tokenizer o200k_base" in text


def test_trace_text_cannot_inject_markup(page: str) -> None:
    assert PAYLOAD not in page and "<img" not in page and "<b>" not in page and "<script" not in page
    parsed = Page(page)
    tags = {tag for tag, _, _ in parsed.elements}
    assert not tags & {"img", "script", "b", "iframe", "object"}
    assert not [name for _, attrs, _ in parsed.elements for name in attrs if name.startswith("on")]
    text = "".join(parsed.text)
    assert f"added: tool{PAYLOAD}" in text  # the cause's detail, as text
    assert HOSTILE in text  # the session's name, in its heading and the navigation
    assert [a["data-session"] for a, _ in parsed.find("article")][-1] == HOSTILE
    assert html.escape(f"added: tool{PAYLOAD}", quote=True) in page


def test_page_is_self_contained(page: str) -> None:
    parsed = Page(page)
    refs = [a[k] for _, a, _ in parsed.elements for k in ("href", "src", "xlink:href", "action") if k in a]
    assert refs and all(ref.startswith(("#", "data:")) for ref in refs)
    assert "://" not in page and "@import" not in page and "url(" not in page
    policy = [a["content"] for a, _ in parsed.find("meta") if a.get("http-equiv") == "Content-Security-Policy"]
    assert policy == ["default-src 'none'; style-src 'unsafe-inline'; img-src data:"]
    charts = Counter(a["data-chart"] for a, _ in parsed.find("svg", "chart"))
    assert charts == {"causes": 1, "what-if": 1, "turns": 3, "cumulative": 3}


def test_same_trace_same_bytes(trace: Path, page: str, tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere" / trace.name
    copy.parent.mkdir()
    shutil.copy(trace, copy)
    out = tmp_path / "again.html"
    assert run("report", str(copy), "--html", str(out)).returncode == 0
    assert out.read_bytes() == page.encode()
    assert render_html(build_report(read_trace(trace), name=trace.name)).encode() == out.read_bytes()


def test_cache_option_picks_the_per_turn_model(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "vllm.html"
    assert run("report", str(trace), "--html", str(out), "--cache", "vllm", "--block-size", "32").returncode == 0
    parsed = Page(out.read_text())
    expected = explain(trace, cache=CacheOptions("vllm", block_size=32))
    drawn = {(s, int(a["data-turn"])): int(a["data-predicted"]) for a, s in parsed.find("g", "turn")}
    assert drawn == {(r.session, r.turn): r.predicted_cached for r in expected}
    assert drawn != {(r.session, r.turn): r.predicted_cached for r in explain(trace)}
    assert "vLLM (hashed blocks) model" in "".join(parsed.text)


def test_unreadable_trace_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "out.html"
    result = run("report", str(tmp_path / "missing.jsonl"), "--html", str(out))
    assert result.returncode == 2
    assert (
        result.stderr
        == f"agentcache report: error: cannot read trace {tmp_path / 'missing.jsonl'}: No such file or directory\n"
    )
    assert result.stdout == "" and not out.exists()


def test_unwritable_output_is_one_line_and_exit_2(trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "no-such-dir" / "out.html"
    result = run("report", str(trace), "--html", str(out))
    assert result.returncode == 2
    assert result.stderr == (
        f"agentcache report: error: cannot write {out}: No such file or directory; pick a writable path for --html\n"
    )


def test_html_is_required(trace: Path) -> None:
    result = run("report", str(trace))
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith("agentcache report: error: the following arguments are required")


def test_bad_lines_are_reported_in_the_page_and_exit_2(trace: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text(trace.read_text() + "{not json\n")
    out = tmp_path / "out.html"
    result = run("report", str(broken), "--html", str(out))
    assert result.returncode == 2
    line = len(trace.read_text().splitlines()) + 1
    assert result.stderr.startswith(f"agentcache report: error: {broken}:{line}: not JSON")
    text = "".join(Page(out.read_text()).text)
    assert f"line {line}: not JSON" in text and "1 line could not be read" in text


def test_empty_trace(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    out = tmp_path / "out.html"
    assert run("report", str(empty), "--html", str(out)).returncode == 0
    parsed = Page(out.read_text())
    assert "The trace holds no readable request." in parsed.text and not parsed.find("svg")


@settings(max_examples=25, deadline=None)
@given(name=st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40) | st.just(HOSTILE))
def test_any_session_name_stays_text(name: str) -> None:
    request = {"model": "m", "messages": [{"role": "user", "content": "hello"}]}
    trace = Trace([TraceRecord(1, name, request), TraceRecord(2, name, request)], [])
    parsed = Page(render_html(build_report(trace, name=name)))
    assert [a["data-session"] for a, _ in parsed.find("article")] == [name]
    assert name in "".join(parsed.text)
    assert {tag for tag, _, _ in parsed.elements} <= {
        "html",
        "head",
        "meta",
        "link",
        "title",
        "style",
        "body",
        "main",
        "header",
        "h1",
        "h2",
        "h3",
        "code",
        "p",
        "dl",
        "div",
        "dt",
        "dd",
        "small",
        "section",
        "article",
        "figure",
        "svg",
        "g",
        "rect",
        "line",
        "path",
        "polyline",
        "circle",
        "text",
        "ul",
        "li",
        "details",
        "summary",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "footer",
        "nav",
        "a",
    }


def test_ticks_and_label_steps() -> None:
    for maximum in (1, 7, 9_496, 14_566, 120_305, 3_000_000):
        scale = ticks(maximum)
        step = scale[1] - scale[0]
        assert scale[0] == 0 and scale[-1] >= maximum > scale[-2] and len(scale) - 1 <= 10
        assert len(scale) - 1 >= min(maximum, 3)  # a few gridlines, but never fractional tokens
        assert int(str(step)[0]) in (1, 2, 5) and set(str(step)[1:]) <= {"0"}
    assert [every(n, 25) for n in (10, 25, 26, 60, 200, 1000)] == [1, 1, 2, 5, 10, 50]
