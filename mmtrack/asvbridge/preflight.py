"""Import every module of an asv benchmark suite the way asv's discovery does, one by one.

asv's discovery stops at the first module that fails to import, and then runs
no benchmark at all. ``mmtrack run`` runs this file first, as a script, with the
Python and the environment asv will use, to learn which files are broken; it
then records those as failed and lets asv run the rest.

Standard library only, and run by path (``python preflight.py SUITE``), so it
works in any environment asv can use, whether or not mmtrack is importable there.
Prints one JSON object: ``{"failures": [{"module", "path", "message", "missing"}...]}``, ``missing`` naming the
module a ``ModuleNotFoundError`` could not find (else empty).

Like asv's runner, it makes the suite's own package importable and nothing else beside it: the project
folder is not on ``sys.path``, so a project that is not installed into this environment fails here as in asv.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import json
import os
import pkgutil
import sys
import traceback


def _message(exc: BaseException, path: str | None) -> str:
    where = ""  # a SyntaxError names its file and line itself
    if not isinstance(exc, SyntaxError) and exc.__traceback__ is not None and path:
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == path]
        if frames:
            where = f" (line {frames[-1].lineno})"
    return f"{type(exc).__name__}: {exc}{where}"


def _path_of(name: str) -> str | None:
    try:
        spec = importlib.util.find_spec(name)
    except BaseException:  # noqa: BLE001  (the parent package itself may be broken)
        return None
    return os.path.abspath(spec.origin) if spec is not None and spec.origin else None


class _SuiteOnly:
    """Finds the suite's top-level package in its parent folder and nothing else there (asv_runner's
    SpecificImporter, which its update_sys_path puts first on ``sys.meta_path``)."""

    def __init__(self, name: str, parent: str) -> None:
        self.name, self.parent = name, parent

    def find_spec(self, fullname, path, target=None):  # noqa: ANN001, ANN201 - the meta path finder protocol
        if fullname != self.name:
            return None
        return importlib.machinery.PathFinder.find_spec(fullname, [self.parent], target)


def check(root: str) -> list[dict[str, str]]:
    """Import ``root`` (a benchmark folder) and every submodule; return the failures."""
    root = os.path.abspath(root)
    sys.meta_path.insert(0, _SuiteOnly(os.path.basename(root), os.path.dirname(root)))
    failures: list[dict[str, str]] = []

    def visit(name: str) -> None:
        path = _path_of(name)
        try:
            module = importlib.import_module(name)
        except (Exception, SystemExit) as exc:  # noqa: BLE001  (report, go on)
            missing = (exc.name or "") if isinstance(exc, ModuleNotFoundError) else ""
            failures.append({"module": name, "path": path or "", "message": _message(exc, path), "missing": missing})
            return
        for _, sub, _ in pkgutil.iter_modules(getattr(module, "__path__", None) or [], f"{name}."):
            visit(sub)

    visit(os.path.basename(root))
    return failures


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: preflight.py BENCHMARK_DIR", file=sys.stderr)
        return 2
    # Benchmark modules may print on import; keep our stdout for the JSON answer.
    real_stdout = sys.stdout
    sys.stdout = sys.stderr
    try:
        failures = check(argv[0])
    finally:
        sys.stdout = real_stdout
    print(json.dumps({"failures": failures}))
    return 0


if __name__ == "__main__":
    # Run as a script, Python put this file's folder first on sys.path: a benchmark's
    # ``import spool`` must not find our sibling modules.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.exit(main(sys.argv[1:]))
