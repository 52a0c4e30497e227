"""Just enough SVG to draw the report's charts in Python: escaped elements, round axis ticks, short numbers.

Every text and attribute value goes through :func:`escape`, because labels come from the trace (session names,
tool names, prompt excerpts) and the trace is untrusted. Coordinates are printed with at most one decimal, so
the same figures always give the same bytes.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping

Attrs = Mapping[str, object]


def escape(value: object) -> str:
    """Text safe inside an element or a quoted attribute."""
    return html.escape(str(value), quote=True)


def coord(value: float) -> str:
    """A coordinate with at most one decimal, without a trailing ``.0`` (and never ``-0``)."""
    text = f"{value:.1f}".removesuffix(".0")
    return "0" if text == "-0" else text


def _attribute(name: str, value: object) -> str:
    text = coord(value) if isinstance(value, float) else str(value)
    return f' {name}="{escape(text)}"'


def element(tag: str, attrs: Attrs | None = None, children: str | Iterable[str] = "") -> str:
    """``<tag attrs>children</tag>``; attributes whose value is None are left out. Children are markup."""
    head = "".join(_attribute(k, v) for k, v in (attrs or {}).items() if v is not None)
    body = children if isinstance(children, str) else "".join(children)
    return f"<{tag}{head}>{body}</{tag}>" if body or tag in ("text", "title", "g", "svg") else f"<{tag}{head}/>"


def text(x: float, y: float, content: object, attrs: Attrs | None = None) -> str:
    return element("text", {"x": float(x), "y": float(y), **(attrs or {})}, escape(content))


def title(content: object) -> str:
    """A native tooltip for the enclosing SVG element: no script needed."""
    return element("title", None, escape(content))


def svg(width: int, height: int, label: str, body: Iterable[str], attrs: Attrs | None = None) -> str:
    """A chart that scales to its container's width and keeps its aspect ratio."""
    head = {"viewBox": f"0 0 {width} {height}", "role": "img", "aria-label": label, **(attrs or {})}
    return element("svg", head, [title(label), *body])


def ticks(maximum: float, count: int = 5) -> list[int]:
    """Round tick values from 0 to at least ``maximum``, about ``count`` intervals: steps of 1, 2 or 5 x 10^k."""
    if maximum <= 0:
        return [0, 1]
    raw = maximum / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    step = max(1, int(step))
    top = math.ceil(maximum / step) * step
    return list(range(0, top + 1, step))


def compact(value: float) -> str:
    """An axis label: ``950``, ``12k``, ``1.5M``."""
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if abs(value) >= size:
            return f"{value / size:.1f}".removesuffix(".0") + suffix
    return f"{value:g}"


def every(count: int, room: int) -> int:
    """Label every n-th of ``count`` items, n in 1, 2, 5, 10, 20, ..., so at most ``room`` labels fit."""
    step = 1
    while math.ceil(count / step) > room:
        step = step * 5 // 2 if str(step).startswith("2") else step * 2
    return step


def text_width(content: str, size: float) -> float:
    """Rough width of a label in a sans-serif font, to decide whether labels fit (browsers measure the rest)."""
    return len(content) * size * 0.6
