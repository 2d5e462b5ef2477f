"""Where ``mmtrack bench --instrument callgrind`` keeps each saved run's callgrind profiles (why a count changed).

Beside ``mmtrack run``'s per-commit folders (:func:`mmtrack.asvbridge.callgrind_run.profiles_of`): a bench run is
keyed by its run number, since several runs may measure one commit's working tree. The session keeps them in a
folder of this process until the run is saved and has its number.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from ..asvbridge.callgrind_run import profiles_of


def pending(project: Path) -> Path:
    """This process's folder for the profiles of a run not yet saved."""
    return profiles_of(project, f"bench-pending-{os.getpid()}")


def of_run(project: Path, run_id: int) -> Path:
    """The profiles kept for saved bench run ``run_id``."""
    return profiles_of(project, f"bench-run-{run_id}")


def settle(folder: Path | None, project: Path, run_id: int | None) -> Path | None:
    """The pending profiles under their run's number; removed when the run was not saved. Returns the folder."""
    if folder is None or not folder.is_dir():
        return None
    if run_id is None:
        shutil.rmtree(folder, ignore_errors=True)
        return None
    target = of_run(project, run_id)
    shutil.rmtree(target, ignore_errors=True)  # a store recreated from scratch numbers its runs again
    return Path(shutil.move(str(folder), target))


__all__ = ["of_run", "pending", "settle"]
