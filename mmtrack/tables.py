"""Table cells that fit any terminal width without losing what tells rows apart.

A benchmark name (``suite.TimeSuite.time_sort(1000, 'float64')``) differs from its
neighbours in its tail, so a narrow column wraps it at its dots, and a single part
still too wide folds: no character is cut (:class:`FitTable` keeps tables inside the terminal).
"""

from __future__ import annotations

import os
import re
from typing import Iterable

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.measure import Measurement
from rich.segment import Segment
from rich.style import Style, StyleType
from rich.table import Table
from rich.text import Text

from .textsafe import term

NAME_MIN_WIDTH = 20  # a name column never gets narrower than this (or the name itself)
# "a.b.c(1, 2)" -> "a." "b." "c" "(1, " "2)"; "m/n [u]" -> "m/" "n " "[u]": an argument list opens its own line
_PARTS = re.compile(r"\(?[^.( /]+[. /]?|[.( /]")


def plural(n: int, word: str, many: str | None = None) -> str:
    """``n`` and ``word`` in the number it takes: "1 benchmark", "2 benchmarks", "0 series"."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def left_ellipsis(text: str, width: int) -> str:
    """``text`` in ``width`` cells, its head replaced by ``…`` when it is too long."""
    if width <= 0:
        return ""
    if len(text) <= width:
        return text
    return "…" + text[len(text) - width + 1 :] if width > 1 else "…"


def wrap_at_dots(text: str, width: int) -> list[str]:
    """Lines of at most ``width`` cells, broken after dots, slashes and spaces (and before arguments); a part
    longer than a line folds: nothing is cut."""
    lines: list[str] = []
    line = ""
    for part in _PARTS.findall(text) or [text]:
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    lines.append(line)
    width = max(1, width)
    return [x[i : i + width] for x in lines for i in range(0, max(1, len(x)), width)]


class FitTable(Table):
    """A rich Table whose columns share the width without going below what each needs.

    Rich collapses the widest columns first, past a column's ``min_width``; the table then comes out wider than
    the terminal and the console crops each line, title included (characters lost at 80 columns). Where the
    columns' minimums fit, this gives each its minimum and shares the rest by what each could still use."""

    def _calculate_column_widths(self, console: Console, options: ConsoleOptions) -> list[int]:
        widths = super()._calculate_column_widths(console, options)
        room = options.max_width
        if sum(widths) <= room:
            return widths
        ranges = [self._measure_column(console, options, column) for column in self.columns]
        lows, highs = [r.minimum for r in ranges], [r.maximum for r in ranges]
        if sum(lows) > room:
            return widths  # no fit: rich's own choice
        return _share(lows, highs, room)


def _share(lows: list[int], highs: list[int], room: int) -> list[int]:
    """Widths from ``lows`` up towards ``highs``, the room left shared in proportion to what each still wants."""
    wants = [hi - lo for lo, hi in zip(lows, highs)]
    spare = room - sum(lows)
    if sum(wants) <= spare:
        return list(highs)
    given = [spare * w // sum(wants) for w in wants]
    for i in sorted(range(len(wants)), key=lambda i: wants[i] - given[i], reverse=True)[: spare - sum(given)]:
        given[i] += 1
    return [lo + g for lo, g in zip(lows, given)]


def unwrapped(console: Console) -> bool:
    """A summary line's ``soft_wrap``: on a terminal, or where COLUMNS gives the width, it wraps on words (nothing cut,
    nothing past the edge); in a pipe of unknown width it stays one line, whole for grep."""
    return not (console.is_terminal or os.environ.get("COLUMNS", "").isdigit())


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
