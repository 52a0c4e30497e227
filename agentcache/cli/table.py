"""Plain aligned tables for the terminal: numbers right-aligned, text left-aligned."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from agentcache.cli.style import Style

Cell = str | int | float | None


def cell(value: Cell) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.1%}"
    if isinstance(value, int):
        return f"{value:,}"
    return value


#: Picks a colour for a cell from its value (None: no colour).
Colorer = Callable[[Cell], str | None]


def table(
    header: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    style: Style | None = None,
    colors: Mapping[int, Colorer] | None = None,
) -> str:
    """Rows under a header; a column is right-aligned when its cells are numbers. With a style, the header is bold
    and ``colors`` paints cells by column index; colour goes around the padded text, so columns stay aligned."""
    paint = style or (lambda text, color: text)
    colors = colors or {}
    text = [[cell(value) for value in row] for row in rows]
    numeric = [all(isinstance(row[i], (int, float)) or row[i] is None for row in rows) for i in range(len(header))]
    widths = [max([len(header[i])] + [len(row[i]) for row in text]) for i in range(len(header))]

    def line(cells: Sequence[str], values: Sequence[Cell] | None) -> str:
        parts = []
        for i, (c, w, num) in enumerate(zip(cells, widths, numeric, strict=True)):
            padded = c.rjust(w) if num else c.ljust(w)
            color = "bold" if values is None else (colors[i](values[i]) if i in colors else None)
            parts.append(paint(padded, color) if i < len(cells) - 1 else paint(padded.rstrip(), color))
        return "  ".join(parts).rstrip()

    return "\n".join([line(list(header), None), *(line(row, values) for row, values in zip(text, rows, strict=True))])
