"""Colour for the terminal: only when the stream is a TTY, never when ``NO_COLOR`` is set (no-color.org)."""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from typing import TextIO

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


class Style:
    """Paints text for one stream; a no-op on pipes, files and with ``NO_COLOR``."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.enabled = stream.isatty() and not os.environ.get("NO_COLOR")

    def __call__(self, text: str, color: str | None) -> str:
        if not self.enabled or color is None:
            return text
        return f"\033[{_CODES[color]}m{text}\033[0m"


def terminal_width(stream: TextIO | None = None) -> int | None:
    """The columns text should fit: ``COLUMNS`` when set, else the terminal's width; None on a pipe or a file,
    where nothing is wrapped."""
    columns = os.environ.get("COLUMNS", "")
    if columns.strip().isdigit() and int(columns) > 0:
        return int(columns)
    if not (stream or sys.stdout).isatty():
        return None
    return shutil.get_terminal_size().columns


def fit(text: str, width: int | None, indent: int = 0) -> str:
    """``text`` as written on a pipe; on a terminal narrower than one of its lines, each paragraph (a blank line
    apart) re-wrapped to its width, later lines indented by ``indent``."""
    if width is None or all(len(line) <= width for line in text.splitlines()):
        return text
    paragraphs = text.split("\n\n")
    return "\n\n".join(textwrap.fill(" ".join(p.split()), width, subsequent_indent=" " * indent) for p in paragraphs)


class Progress:
    """A one-line progress bar on stderr, drawn only when stderr is a TTY (logs and pipes get nothing)."""

    def __init__(self, label: str, total: int, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.label = label
        self.total = total
        self.enabled = self.stream.isatty() and total > 0
        self._shown = -1

    def __call__(self, done: int) -> None:
        if not self.enabled:
            return
        percent = 100 * done // self.total
        if percent == self._shown:
            return
        self._shown = percent
        filled = 30 * done // self.total
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {done:,}/{self.total:,}")
        if done >= self.total:
            self.stream.write("\r" + " " * (len(self.label) + 50) + "\r")
        self.stream.flush()
