"""A command's errors as one line on stderr, and the exit that skips the interpreter's teardown: what the entry
point (:func:`mmtrack.cli.main`) and the verbs share."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

from .terminal import SafeConsole

err_console = SafeConsole(stderr=True, soft_wrap=True)


def exit_without_teardown(code: int) -> NoReturn:
    """Exit at once, skipping the interpreter's teardown, for a command that has nothing left to clean up
    (its store closed, no worker process, no temporary file): finalising SQLAlchemy's and numpy's modules
    is a tenth of `mmtrack update`'s budget (docs/design/nightly-update-profile.md)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def error_line(message: str) -> None:
    """``error: MESSAGE`` on stderr, one line (control characters escaped: a message may quote a benchmark name)."""
    from rich.text import Text

    from .textsafe import term

    err_console.print(Text.assemble(("error:", "bold red"), " ", term(message)), highlight=False, soft_wrap=True)


def os_error_line(exc: OSError) -> str:
    """One line for an operating-system error: what failed, on which path, what to check."""
    from .errors import os_reason

    return f"{os_reason(exc)}; check that path, its permissions and the free space on its disk"
