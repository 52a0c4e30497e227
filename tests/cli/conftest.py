"""The CLI's text output as a pipe gets it: a library loaded by the test run may set COLUMNS in the process
environment behind os.environ's back, which would make every CLI subprocess wrap its tables."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "")  # known to os.environ, so that deleting it unsets it for children too
    monkeypatch.delenv("COLUMNS")
