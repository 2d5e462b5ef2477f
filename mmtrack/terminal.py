"""The one way out to the terminal: every command prints through :class:`SafeConsole` or :func:`echo`.

A benchmark name, a unit, a parameter, a file name or an error text comes from outside, and an
escape sequence in it (ESC ``[2J`` clears the screen, OSC 8 plants a link, a bidi override reorders
a line) must never reach the terminal as such. Renderers escape what they quote (textsafe.term);
this edge escapes whatever they missed, so one function (textsafe.visible) guards all output.
"""

from __future__ import annotations

from typing import Iterable

import click
from rich.console import Console
from rich.segment import Segment

from .textsafe import visible


class SafeConsole(Console):
    """A rich console whose text never carries control characters; its own styles and cursor moves do."""

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(visible(segment.text), segment.style, segment.control)
            for segment in buffer
        )


def echo(text: str, err: bool = False) -> None:
    """A rendered text (markdown, JSON, a passed-through line) to stdout, or stderr, as :class:`SafeConsole` would."""
    click.echo(visible(text), nl=not text.endswith("\n"), err=err)
