"""Table cells that fit any terminal width without losing what tells rows apart.

A benchmark name (``suite.TimeSuite.time_sort(1000, 'float64')``) differs from its
neighbours in its tail, so a narrow column wraps it at its dots, and a single part
still too wide loses its *head* behind an ellipsis, never its tail.
"""

from __future__ import annotations

import re
from typing import Iterable

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style, StyleType
from rich.text import Text

from .textsafe import term

NAME_MIN_WIDTH = 20  # a name column never gets narrower than this (or the name itself)
_PARTS = re.compile(r"[^.(]+[.(]?|[.(]")  # "a.b.c(1, 2)" -> "a." "b." "c(" "1, 2)"


def left_ellipsis(text: str, width: int) -> str:
    """``text`` in ``width`` cells, its head replaced by ``…`` when it is too long."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1 :] if width > 1 else "…"


def wrap_at_dots(text: str, width: int) -> list[str]:
    """Lines of at most ``width`` cells, broken after dots (and before arguments)."""
    lines: list[str] = []
    line = ""
    for part in _PARTS.findall(text) or [text]:
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    lines.append(line)
    return [left_ellipsis(x, width) for x in lines]


class Name:
    """A name cell: whole on one line when it fits, else wrapped at dots; controls escaped."""

    def __init__(self, text: str, style: StyleType = "") -> None:
        self.text = term(text)
        self.style = style

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        longest = len(self.text)
        return Measurement(min(longest, NAME_MIN_WIDTH), longest).clamp(max_width=options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        style = console.get_style(self.style) if self.style else Style()
        lines = wrap_at_dots(self.text, max(1, options.max_width))
        for line in lines:
            yield Segment(line, style)
            yield Segment.line()

    def __str__(self) -> str:
        return self.text


def stacked(first: str, *details: str, detail_style: StyleType = "dim") -> Group:
    """A name over dim detail lines (e.g. benchmark over metric), all fitted."""
    return Group(Name(first), *(Text(term(d), style=detail_style, overflow="fold") for d in details))


def plain_lines(lines: Iterable[str]) -> Text:
    """Several lines of untrusted text as one cell."""
    return Text("\n".join(term(x) for x in lines))
