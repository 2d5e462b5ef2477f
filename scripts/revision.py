"""The mmtrack package as it was at another git revision, imported beside the working tree's.

The revision is checked out whole with ``git worktree add`` into a temporary folder and its ``mmtrack`` package is
imported under another name (``mmtrack_at_<sha>``), so its modules import their own siblings at that revision, and a
module that became a package (or moved) since is still found by its dotted name. The worktree is removed at exit.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def checkout(rev: str) -> Path:
    """A temporary detached worktree of ``rev``, removed when this process exits."""
    sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    where = Path(tempfile.mkdtemp(prefix=f"mmtrack-at-{sha[:8]}-"))
    tree = where / "tree"
    _git("worktree", "add", "-q", "--detach", str(tree), sha)

    def remove() -> None:
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
        shutil.rmtree(where, ignore_errors=True)

    atexit.register(remove)
    return tree


def package_at(rev: str) -> ModuleType:
    """``mmtrack`` at ``rev``, imported as ``mmtrack_at_<sha>`` (once per process and revision)."""
    sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}")
    name = f"mmtrack_at_{sha[:12]}"
    if name in sys.modules:
        return sys.modules[name]
    package = checkout(sha) / "mmtrack"
    spec = importlib.util.spec_from_file_location(name, package / "__init__.py",
                                                  submodule_search_locations=[str(package)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its submodules and dataclasses look it up by name
    spec.loader.exec_module(module)
    return module


def module_at(rev: str, dotted: str) -> ModuleType:
    """The module ``dotted`` (e.g. ``mmtrack.analysis.compare``) as it was at ``rev``."""
    root, _, rest = dotted.partition(".")
    assert root == "mmtrack", dotted
    return importlib.import_module(f"{package_at(rev).__name__}.{rest}" if rest else package_at(rev).__name__)


def has_module(rev: str, dotted: str) -> bool:
    """Whether ``rev`` holds ``dotted`` as a module or a package (without checking it out)."""
    path = dotted.replace(".", "/")
    return any(subprocess.run(["git", "cat-file", "-e", f"{rev}:{p}"], cwd=ROOT, capture_output=True).returncode == 0
               for p in (f"{path}.py", f"{path}/__init__.py"))
