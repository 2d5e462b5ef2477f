"""The mmtrack package as it was at another git revision, imported beside the working tree's.

The revision is checked out whole with ``git worktree add`` into a temporary folder and its ``mmtrack`` package is
imported under another name (``mmtrack_at_<sha>``), so its modules import their own siblings at that revision, and a
module that became a package (or moved) since is still found by its dotted name. The worktree is removed at exit.

That package has its own classes (its own ``Direction``, ``Measurement``, ``ComparePolicy``), which its code checks
by identity. :func:`reference` wraps one of its modules so that each call takes today's records and rebuilds them
with that revision's classes of the same name first: each side runs its own code on equal inputs.
"""

from __future__ import annotations

import atexit
import dataclasses
import enum
import functools
import importlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

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


#: Where a record's class may live at another revision, beside its own module today (``Direction`` moved from
#: ``measure.metrics`` to ``vocabulary``).
_HOMES = ("mmtrack.vocabulary", "mmtrack.results", "mmtrack.measure.metrics", "mmtrack.analysis.compare",
          "mmtrack.analysis.policy", "mmtrack.analysis.frames")


@functools.lru_cache(maxsize=None)
def _class_at(package: str, cls: type) -> type:
    """``cls``'s namesake in ``package`` (another revision's mmtrack), or ``cls`` itself where it has none."""
    for home in (cls.__module__, *_HOMES):
        try:
            module = importlib.import_module(package + home.removeprefix("mmtrack"))
        except ImportError:
            continue
        found = getattr(module, cls.__qualname__, None)
        if isinstance(found, type):
            return found
    return cls


def translate(obj: Any, package: str, memo: dict[int, Any] | None = None) -> Any:
    """``obj`` with every mmtrack record in it (frozen dataclasses, enums, inside tuples, lists, dicts and sets)
    rebuilt with ``package``'s classes of the same name; a live object (an open store) is handed over as it is."""
    memo = {} if memo is None else memo
    if id(obj) in memo:
        return memo[id(obj)]
    cls = type(obj)
    if cls.__module__.split(".")[0] == "mmtrack":
        theirs = _class_at(package, cls)
        if theirs is cls:
            out = obj
        elif isinstance(obj, enum.Enum):
            out = theirs(obj.value)
        elif dataclasses.is_dataclass(obj) and cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            fields = dataclasses.fields(obj)
            out = theirs(**{f.name: translate(getattr(obj, f.name), package, memo) for f in fields if f.init})
            for f in fields:
                if not f.init:
                    object.__setattr__(out, f.name, translate(getattr(obj, f.name), package, memo))
        else:
            out = obj
    elif cls is tuple:
        out = tuple(translate(v, package, memo) for v in obj)
    elif cls is list:
        out = [translate(v, package, memo) for v in obj]
    elif cls is dict:
        out = {translate(k, package, memo): translate(v, package, memo) for k, v in obj.items()}
    elif cls in (set, frozenset):
        out = cls(translate(v, package, memo) for v in obj)
    else:
        out = obj
    memo[id(obj)] = out
    return out


class Reference:
    """A module of another revision whose functions take today's records (see :func:`translate`)."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.__name__ = module.__name__
        self._package = module.__name__.split(".")[0]

    def own(self, obj: Any) -> Any:
        """``obj`` as this revision's records (to look up what its functions returned, keyed by its classes)."""
        return translate(obj, self._package)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.module, name)
        if not callable(value) or isinstance(value, type):
            return value

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            memo: dict[int, Any] = {}
            return value(*translate(args, self._package, memo), **translate(kwargs, self._package, memo))

        return call


def reference(rev: str, dotted: str) -> Reference:
    """``dotted`` at ``rev`` (:func:`module_at`), taking today's records."""
    return Reference(module_at(rev, dotted))
