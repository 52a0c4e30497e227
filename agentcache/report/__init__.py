"""Reports people look at rather than read: a trace's cache story as one self-contained HTML page of charts.

>>> from agentcache.drift import read_trace
>>> from agentcache.report import build_report, render_html
>>> page = render_html(build_report(read_trace("trace.jsonl"), name="trace.jsonl"))  # doctest: +SKIP

A live transport's ledger renders the same way: ``render_html(ledger_report(transport.ledger, ...))``.
"""

from __future__ import annotations

from agentcache.report.analysis import Report, build_report, ledger_report
from agentcache.report.html import render_html

__all__ = ["Report", "build_report", "ledger_report", "render_html"]
