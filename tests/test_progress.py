"""The progress bar of long commands (import-asv, detect, publish): on a terminal only."""

from __future__ import annotations

import io

from rich.console import Console

from mmtrack.cli_progress import progress_bar


def test_the_bar_draws_on_a_terminal_with_what_it_is_on(monkeypatch):
    monkeypatch.setenv("TERM", "xterm-256color")  # rich draws no live bar on a dumb terminal (TERM=dumb)
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    with progress_bar(console, "importing", detail=True) as tick:
        assert tick is not None
        tick(3, 7, "[b]results/ci-linux/abc.json")  # markup in a file name is shown as written
    drawn = out.getvalue()
    assert "importing" in drawn and "3/7" in drawn and "[b]results/ci-linux/abc.json" in drawn


def test_no_bar_in_a_pipe_or_with_no_progress():
    piped = io.StringIO()
    with progress_bar(Console(file=piped, force_terminal=False), "detecting") as tick:
        assert tick is None
    assert piped.getvalue() == ""
    with progress_bar(None, "detecting") as tick:
        assert tick is None
