"""Plain aligned tables for the terminal: numbers right-aligned, text left-aligned."""

from __future__ import annotations

from collections.abc import Sequence

Cell = str | int | float | None


def cell(value: Cell) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1%}"
    if isinstance(value, int):
        return f"{value:,}"
    return value


def table(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    """Rows under a header; a column is right-aligned when its cells are numbers."""
    text = [[cell(value) for value in row] for row in rows]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(header))]
    widths = [max([len(header[i])] + [len(row[i]) for row in text]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        parts = [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(cells, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(list(header)), *(line(row) for row in text)])
