"""An asv results folder: its layout (``<machine>/*.json``, machine.json, the asv.conf.json above it) and
the one check that a folder given by a user holds asv results."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..errors import UserError
from .machine_class import ClassRule, rules_from_config
from .results_file import ResultsFileError, _load_json


def check_is_folder(results_dir: Path) -> None:
    """Refuse, in one line, a results folder that is no folder."""
    if not results_dir.is_dir():
        raise UserError(f"{results_dir}: not a directory; give an asv results folder (the one with benchmarks.json)")


def _holds_results(folder: Path) -> bool:
    """Whether ``folder`` is an asv results folder: its benchmarks.json, or results files in its machine folders.
    A project root's ``results/benchmarks.json`` is not a results file of a machine called "results"."""
    return (folder / "benchmarks.json").is_file() or any(
        f.name != "benchmarks.json" for f, _ in find_results_files(folder))


def check_results_folder(folder: Path, verb: str = "mmtrack import-asv") -> None:
    """Refuse, in one line, a folder that is no folder or holds no asv results, naming the results folder of a
    project root. The one check of a folder a user gives (``import-asv``, ``update``)."""
    check_is_folder(folder)
    if _holds_results(folder):
        return
    candidates = [folder / "results", folder / ".asv" / "results"]
    conf = folder / "asv.conf.json"
    if conf.is_file():
        try:
            from asv.util import load_json

            configured = load_json(str(conf), js_comments=True).get("results_dir")
            if isinstance(configured, str):
                candidates.insert(0, folder / configured)
        except Exception:  # noqa: BLE001 - an unreadable config only loses a hint
            pass
    found = next((c for c in candidates if c.is_dir() and _holds_results(c)), None)
    if found is not None:
        raise UserError(f"{folder} is a project, not an asv results folder; pass its results folder: "
                        f"{verb} {found}")
    raise UserError(f"{folder} holds no asv results (no benchmarks.json, no <machine>/*.json); give the folder "
                    "`asv run` writes to (asv.conf.json's results_dir, default .asv/results)")


def _display(path: Path) -> str:
    """A printable path, even for names that are not valid UTF-8."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")




def find_results_files(results_dir: Path) -> list[tuple[Path, str]]:
    """(file, machine directory) for every results file under ``results_dir``."""
    out = []
    for machine_dir in sorted(p for p in results_dir.iterdir() if p.is_dir()):
        name = os.fsencode(machine_dir.name).decode("utf-8", "backslashreplace")
        try:
            entries = sorted(machine_dir.iterdir())
        except OSError:  # an unreadable machine folder: the import reports it as one failed entry
            out.append((machine_dir, name))
            continue
        for f in entries:
            # Not only regular files: a dangling link, a loop, a folder or a FIFO named x.json is
            # reported by the import as a failed entry, never skipped silently.
            if f.suffix == ".json" and f.name != "machine.json":
                out.append((f, name))
    return out


def _machine_info(machine_dir: Path, cache: dict[Path, dict[str, Any]]) -> dict[str, Any]:
    if machine_dir not in cache:
        info: dict[str, Any] = {}
        f = machine_dir / "machine.json"
        if f.is_file():
            try:
                data = _load_json(f)
                if isinstance(data, dict):
                    info = {str(k): v for k, v in data.items() if k != "version" and isinstance(v, (str, int, float))}
                    json.dumps(info, allow_nan=False)
                    for v in info.values():
                        if isinstance(v, str):
                            v.encode("utf-8")
            except (ResultsFileError, ValueError, UnicodeEncodeError, OSError):
                info = {}
        cache[machine_dir] = info
    return cache[machine_dir]



def config_class_rules(results_dir: Path) -> list[ClassRule]:
    """The ``machine_classes`` rules of the asv.conf.json above the results folder, if it has any."""
    for conf in (results_dir.parent / "asv.conf.json", results_dir.parent.parent / "asv.conf.json"):
        try:
            text = conf.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if '"machine_classes"' not in text:
            return []
        from asv.util import load_json

        try:
            config = load_json(str(conf), js_comments=True)
        except Exception as exc:  # noqa: BLE001 - asv's own reader words what is wrong
            raise UserError(f"{conf}: cannot read machine_classes: {exc}") from None
        return rules_from_config(config, str(conf))
    return []

