"""Who measured: a stable host identity and a description of the machine."""

from __future__ import annotations

import os
import platform
import socket
import sys
from functools import lru_cache
from pathlib import Path


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


@lru_cache(maxsize=1)
def host_info() -> dict[str, str]:
    """asv-like machine facts, with MMTRACK_MACHINE naming the host when set."""
    name = os.environ.get("MMTRACK_MACHINE") or socket.gethostname()
    return {
        "machine": name,
        "os": f"{platform.system()} {platform.release()}",
        "arch": platform.machine(),
        "cpu": _cpu_model(),
        "num_cpu": str(os.cpu_count() or 0),
        "python": platform.python_version(),
        "implementation": sys.implementation.name,
    }


def host_name() -> str:
    return host_info()["machine"]


def asv_machine(given: str | None) -> str:
    """The asv machine a run records under: ``given`` (``--machine``), else MMTRACK_MACHINE, else the host name.

    It names a folder of asv's results, so it must be one plain folder name: ``../x`` or ``a/b`` would write
    results outside that folder or where asv does not look."""
    from ..errors import UserError
    from .spool import ENV_MACHINE

    name = given or os.environ.get(ENV_MACHINE) or host_name()
    if name in (".", "..") or any(c in name for c in "/\\") or not name.isprintable() or name != name.strip():
        raise UserError(f"machine name {name!r} (--machine or MMTRACK_MACHINE) is not a plain folder name; "
                        "give one without '/', '..', control characters or spaces at either end, e.g. 'ci-linux-x64-1'")
    return name
