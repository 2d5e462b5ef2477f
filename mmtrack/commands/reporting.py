"""How a verb tells its caller what happens while it runs, without printing: events handed to a callback.

A verb returns its result; what a long verb has to say before it returns (a note, a lock it waits for, a run
finished before it is saved) goes to ``report(event)``, an event being a small record of the verb's own. The CLI
renders each event to the terminal (mmtrack/cli_events.py); a Python caller passes its own callback or none.
"""

from __future__ import annotations

from typing import Any, Callable

#: ``report(event)``: called with each event a verb announces, in order, as it happens
Report = Callable[[Any], None]


def silent(_event: Any) -> None:
    """The default report: the events are dropped, the result alone tells what happened."""
