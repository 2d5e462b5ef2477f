"""Finding engine benchmarks in an asv-style benchmark folder.

Modules are imported the way asv imports them: as a package rooted at the
topmost folder that has an ``__init__.py``. A module that fails to import is
reported and the others still load.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import itertools
import re
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..textsafe import bounded
from .declaration import EngineDeclaration, declaration_of
from .timed import is_timed, time_benchmarks


@dataclass(frozen=True, slots=True)
class ImportFailure:
    path: Path
    message: str


@dataclass(slots=True)
class EngineBenchmark:
    """One decorated method (or module-level function) and the asv class around it."""

    name: str  # asv-style: module.Class.method, relative to the suite root
    owner: type | None  # the asv class; None for a module-level function
    attr: str
    declaration: EngineDeclaration
    source: Path  # the module's file
    suite: Path  # the path discovery was given: it decides the name, so a worker discovers from it too

    def code_version(self) -> str:
        """The benchmark's code version exactly as asv computes it (asv's ``version``).

        asv hashes the source of the benchmark, its setups and setup_cache; asking
        asv_runner itself keeps ``mmtrack bench`` and ``mmtrack run`` in agreement.
        """
        from asv_runner.benchmarks.track import TrackBenchmark

        module = sys.modules[self.declaration.fn.__module__]
        if self.owner is None:
            func = getattr(module, self.attr)
            sources = [func, module]
        else:
            instance = self.owner()
            func = getattr(instance, self.attr)
            sources = [func, instance, module]
        return TrackBenchmark(self.name, func, sources).version

    def param_grid(self) -> tuple[list[str], list[tuple[Any, ...]]]:
        """asv's params / param_names semantics: one list, or a list of lists."""
        holder = self.owner if self.owner is not None else self.declaration.fn
        params = getattr(holder, "params", [])
        if params and not isinstance(params[0], (list, tuple)):
            params = [params]
        names = list(getattr(holder, "param_names", []) or [])
        names += [f"param{i + 1}" for i in range(len(names), len(params))]
        combos = list(itertools.product(*params)) if params else [()]
        return names, combos

    def label(self, value: Any) -> str:
        """How a parameter value is named in results and reports (asv's repr)."""
        return repr(value)

    def declared_timeout(self) -> float | None:
        """asv's ``timeout`` attribute, of the method first, then of the class."""
        for holder in (self.declaration.fn, self.owner):
            value = getattr(holder, "timeout", None) if holder is not None else None
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                return float(value)
        return None

    @property
    def cache_key(self) -> str | None:
        """The class whose ``setup_cache`` this benchmark's cases share, or None."""
        if self.owner is None or getattr(self.owner, "setup_cache", None) is None:
            return None
        return f"{self.owner.__module__}.{self.owner.__qualname__}"

    @property
    def concurrent(self) -> bool:
        return self.declaration.concurrent is not None

    @property
    def timed(self) -> bool:
        """An asv ``time_`` benchmark run as an engine case (asvbridge/timed.py)."""
        return is_timed(self.declaration)

    def found(self) -> FoundBenchmark:
        """This benchmark as plain values, for a process that must not import its file."""
        names, combos = self.param_grid()
        try:
            version: str | None = self.code_version()
        except (OSError, TypeError):  # no source to hash (e.g. defined in a REPL)
            version = None
        return FoundBenchmark(
            name=self.name, source=self.source, suite=self.suite, param_names=tuple(names),
            combos=tuple(tuple(self.label(v) for v in combo) for combo in combos),
            timeout=self.declared_timeout(), cache_key=self.cache_key, concurrent=self.concurrent, timed=self.timed,
            version=version,
        )


@dataclass(frozen=True, slots=True)
class FoundBenchmark:
    """An engine benchmark as a discovery worker saw it: plain values, so ``mmtrack bench`` never imports
    the benchmark's file itself (an import that exits, crashes or hangs would take the run with it)."""

    name: str
    source: Path
    suite: Path
    param_names: tuple[str, ...]
    combos: tuple[tuple[str, ...], ...]  # each parameter combination, as its labels
    timeout: float | None  # asv's ``timeout`` attribute
    cache_key: str | None  # the class whose ``setup_cache`` the cases share
    concurrent: bool
    timed: bool  # an asv time_ benchmark (asvbridge/timed.py)
    version: str | None  # asv's code version; None when there is no source to hash

    def param_grid(self) -> tuple[list[str], list[tuple[str, ...]]]:
        return list(self.param_names), list(self.combos)

    def label(self, value: str) -> str:
        return value

    def declared_timeout(self) -> float | None:
        return self.timeout

    def code_version(self) -> str:
        if self.version is None:
            raise OSError(f"{self.name}: no source to hash")
        return self.version


@dataclass(slots=True)
class Suite:
    root: Path
    benchmarks: list[Any] = field(default_factory=list)  # EngineBenchmark, or FoundBenchmark from a worker
    failures: list[ImportFailure] = field(default_factory=list)

    def select(self, pattern: str | None) -> list[Any]:
        """Benchmarks whose name matches ``pattern`` (a regex, searched, as asv's -b)."""
        if not pattern:
            return list(self.benchmarks)
        rx = re.compile(pattern)
        return [b for b in self.benchmarks if rx.search(b.name)]


def _package_root(path: Path) -> Path:
    """Topmost folder above ``path`` (inclusive) that is still a package."""
    root = path
    while (root.parent / "__init__.py").exists() and root.parent != root:
        root = root.parent
    return root


def _module_names(path: Path, only: Path | None = None) -> Iterator[tuple[str, Path]]:
    """(dotted module name, file) for every .py file under path (or ``only`` that one), asv-style."""
    path = path.resolve()
    base = path.parent if path.is_file() else path
    if only is not None:
        files = [only.resolve()]  # no walk of the whole tree: a worker imports its one file
    elif path.is_file():
        files = [path]
    else:
        files = sorted(p for p in path.rglob("*.py") if "__pycache__" not in p.parts)
    is_pkg = (base / "__init__.py").exists()
    root = _package_root(base) if is_pkg else base
    prefix_root = root.parent if is_pkg else root
    for f in files:
        rel = f.relative_to(prefix_root).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
            if not parts:
                continue
        yield ".".join(parts), f


def _import(name: str, file: Path, sys_path_entry: Path, as_asv: bool = False) -> Any:
    if as_asv:  # asv's way: the suite's package alone, so the checkout around it cannot shadow an installed build
        from asv_runner._aux import update_sys_path

        top = sys_path_entry / name.split(".", 1)[0]
        if not any(getattr(f, "_name", None) == top.name for f in sys.meta_path):
            update_sys_path(str(top))
    elif sys.path[:1] != [str(sys_path_entry)]:
        # First, even where PYTHONPATH names it further down: a folder before it may hold another package of the
        # suite's name (mmtrack's own checkout has a `benchmarks` package), which would shadow the suite's modules.
        if str(sys_path_entry) in sys.path:
            sys.path.remove(str(sys_path_entry))
        sys.path.insert(0, str(sys_path_entry))
    return importlib.import_module(name)


def _layout(path: Path) -> tuple[Path, Path, bool, Path]:
    """(resolved path, suite root, whether the root is a package, the sys.path entry to import from)."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such benchmark file or folder; pass the folder holding your asv benchmarks")
    resolved = path.resolve()
    base = resolved if resolved.is_dir() else resolved.parent
    is_pkg = (base / "__init__.py").exists()
    root = _package_root(base) if is_pkg else base
    return resolved, root, is_pkg, root.parent if is_pkg else root


def suite_files(path: Path | str) -> tuple[Path, list[Path]]:
    """The suite root and the module files :func:`discover` imports, without importing any."""
    resolved, root, _, _ = _layout(Path(path))
    return root, [file for _, file in _module_names(resolved)]


def discover(path: Path | str, only: Path | None = None, timed: bool = False, as_asv: bool = False) -> Suite:
    """The engine benchmarks under ``path`` (a file or a folder), named relative to it as asv names them; with
    ``only``, just that file's, named as a discovery of all of ``path`` names them (what a worker needs).

    It imports the files in this process: ``mmtrack bench`` calls it in workers only (discover_worker.py)."""
    resolved, root, is_pkg, sys_path_entry = _layout(Path(path))
    suite = Suite(root=root)
    for modname, file in _module_names(resolved, only):
        try:
            module = _import(modname, file, sys_path_entry, as_asv and is_pkg)
        except BaseException as exc:  # noqa: BLE001  (SyntaxError, SystemExit...: report, go on)
            if isinstance(exc, KeyboardInterrupt):
                raise
            last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
            where = f" (line {last[0].lineno})" if last and Path(last[0].filename) == file else ""
            if isinstance(exc, SyntaxError) and exc.lineno:
                where = f" (line {exc.lineno})"
            suite.failures.append(ImportFailure(file, bounded(f"{type(exc).__name__}: {exc}") + where))
            continue
        # asv names benchmarks relative to the suite root package.
        rel = modname.split(".", 1)[1] if is_pkg and "." in modname else modname
        suite.benchmarks.extend(_engine_benchmarks(module, rel, file, resolved))
        if timed:  # asv's time_ benchmarks too, for an instrument that counts (asvbridge/timed.py)
            suite.benchmarks.extend(time_benchmarks(module, rel, file, resolved, EngineBenchmark))
    return suite


def _engine_benchmarks(module: Any, rel: str, file: Path, suite: Path) -> Iterator[EngineBenchmark]:
    for attr, obj in vars(module).items():
        if attr.startswith("_"):
            continue
        if inspect.isclass(obj) and obj.__module__ == module.__name__:
            for mattr in dir(obj):
                decl = declaration_of(getattr(obj, mattr, None))
                if decl is not None:
                    yield EngineBenchmark(f"{rel}.{obj.__name__}.{mattr}", obj, mattr, decl, file, suite)
        elif inspect.isfunction(obj) and obj.__module__ == module.__name__:
            decl = declaration_of(obj)
            if decl is not None:
                yield EngineBenchmark(f"{rel}.{attr}", None, attr, decl, file, suite)
