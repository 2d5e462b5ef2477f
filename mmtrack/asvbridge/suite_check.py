"""The suite's files as asv will import them: which fail (:func:`preflight`, in the Python asv runs), the one line
when the project itself is not installed there, and a copy of the suite without the broken files
(:func:`filtered_suite`, :func:`copy_suite`) for :func:`mmtrack.asvbridge.asvrun.prepare`."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from ..errors import UserError

PREFLIGHT = Path(__file__).resolve().parent / "preflight.py"


@dataclass(frozen=True, slots=True)
class ImportFailure:
    """A suite file that does not import: recorded as one failed case named after it."""

    module: str  # asv-style, relative to the suite (e.g. "sub.broken")
    path: str
    message: str
    missing: str = ""  # the module a ModuleNotFoundError named, else ""


def preflight(suite: Path, env: dict[str, str], python: str | None = None,
              meanwhile: Callable[[], None] | None = None) -> list[ImportFailure]:
    """Import every suite module as asv will (``python``, default this one; same PYTHONPATH rule); ``meanwhile`` runs
    in this process while that one imports (a real suite's import takes a second or more)."""
    env = dict(env)
    # asv drops PYTHONPATH for benchmark processes and uses ASV_PYTHONPATH instead.
    env.pop("PYTHONPATH", None)
    if env.get("ASV_PYTHONPATH"):
        env["PYTHONPATH"] = env["ASV_PYTHONPATH"]
    with tempfile.TemporaryDirectory(prefix="mmtrack-preflight-") as cwd:
        proc = subprocess.Popen([python or sys.executable, str(PREFLIGHT), str(suite)], cwd=cwd, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            if meanwhile is not None:
                meanwhile()
            stdout, stderr = proc.communicate()
        except BaseException:  # as subprocess.run: a SIGTERM or ^C leaves no import check behind
            proc.kill()
            proc.communicate()
            raise
    try:
        failures = json.loads(stdout.strip().splitlines()[-1])["failures"]
    except (IndexError, ValueError, KeyError, TypeError):
        raise UserError(
            f"{suite}: could not check which benchmark files import (exit {proc.returncode}): "
            f"{(stderr.strip().splitlines() or ['no output'])[-1]}"
        ) from None
    root = suite.name
    out = []
    for f in failures:
        module = f["module"]
        rel = module[len(root) + 1 :] if module.startswith(root + ".") else module
        out.append(ImportFailure(rel, f["path"], f["message"], f.get("missing") or ""))
    return out


def refuse_uninstalled_project(failures: Sequence[ImportFailure], folders: Sequence[Path], python: str) -> None:
    """A suite file that cannot import a package lying in the project's own folder: the project is not installed
    where asv runs (asv imports it from its environment, never from the folder). One line saying what to install,
    before asv runs and fails every benchmark with its traceback."""
    for failure in failures:
        name = failure.missing.split(".")[0]
        folder = next((f for f in folders if name and _holds_module(f, name)), None)
        if folder is not None:
            where = Path(failure.path).name if failure.path else failure.module
            raise UserError(
                f"{where}: `import {name}` fails in the Python asv runs ({python}): asv imports the project from "
                f"that environment, never from {folder}; install it there first, e.g. `{python} -m pip install -e "
                f"{folder}`, then run mmtrack again"
            )


def _holds_module(folder: Path, name: str) -> bool:
    return any((base / name / "__init__.py").is_file() or (base / f"{name}.py").is_file()
               for base in (folder, folder / "src"))


def filtered_suite(suite: Path, failures: Sequence[ImportFailure], dest: Path) -> tuple[Path, list[str]]:
    """A copy of the suite without its broken files (and broken packages), same folder name, and the notes of
    what else the copy left out."""
    broken = {Path(f.path).resolve() for f in failures if f.path}
    broken_pkgs = {p.parent for p in broken if p.name == "__init__.py"}
    target = dest / suite.name

    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder).resolve()
        skip = {"__pycache__"}
        for n in names:
            p = (here / n).resolve()
            if p in broken or p in broken_pkgs:
                skip.add(n)
        return skip

    if suite.resolve() in broken_pkgs:
        target.mkdir(parents=True)
        (target / "__init__.py").write_text("")
        return target, []
    return target, copy_suite(suite, target, ignore)


def copy_suite(suite: Path, target: Path, ignore: Any = None) -> list[str]:
    """Copy the suite folder as asv sees it, returning one note per entry left out.

    asv imports the suite in place, so what it never imports cannot stop it: a dangling link (networkx's
    ``benchmarks/pyproject.toml``), a FIFO or socket, a link back into the suite, an unreadable file. The copy
    follows links that resolve (their targets may lie outside the suite) and skips the rest with a note.
    """
    skipped: list[str] = []

    def leave_out(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        skip = set(ignore(folder, names)) if ignore is not None else set()
        for name in sorted(set(names) - skip):
            why = _not_copied(here / name)
            if why:
                skip.add(name)
                skipped.append(f"{(here / name).relative_to(suite)} ({why})")
        return skip

    try:
        shutil.copytree(suite, target, ignore=leave_out)
    except shutil.Error as exc:  # what could not be read; the rest is copied
        skipped += [f"{Path(src).relative_to(suite) if Path(src).is_relative_to(suite) else src} ({why})"
                    for src, _dst, why in exc.args[0]]
    if not skipped:
        return []
    more = f" and {len(skipped) - 1} more" if len(skipped) > 1 else ""
    return [f"{suite}: left {len(skipped)} entr{'y' if len(skipped) == 1 else 'ies'} out of the suite's copy, as asv "
            f"never imports them: {skipped[0]}{more}"]


def _not_copied(path: Path) -> str:
    """Why ``path`` stays out of the suite's copy, or ""."""
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return "a link to nowhere"
        if target.is_dir() and (target == path.parent.resolve() or target in path.parent.resolve().parents):
            return "a link back into its own folder"
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        return exc.strerror or "unreadable"
    import stat

    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "not a file or folder"
    return ""
