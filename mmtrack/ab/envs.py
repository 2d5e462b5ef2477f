"""Building one commit of the project into an isolated environment, cached.

A commit's environment is its source (``git archive`` with its submodules, no working-tree state)
and a fresh virtual environment with the project installed from that source
(``pip install --no-deps``). The benchmark tooling (asv's runner, mmtrack,
numpy...) comes from the environment mmtrack runs in: a ``.pth`` line adds that
site-packages *after* the new environment's own, so the project under test is
always the commit's build and everything else is the same on both sides of an
A/B run.

Environments are cached under ``.mmtrack/envs/<sha12>-<key>``, keyed by the
commit and what else decides the build (Python, the tooling's site-packages,
asv's ``build_command`` / ``install_command``), and reused across calls. An
environment is complete only once its ``built.json`` exists, so a killed build
is rebuilt, never reused.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import threading
import time
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..errors import UserError
from ..vcs import git_output, resolve_rev

MARKER = "built.json"
#: Set while builds running beside one another are abandoned (Ctrl-C or a failure in one): the others stop before
#: their next pip attempt instead of retrying a build the interrupt cut (:func:`mmtrack.ab.interleave.build_pair`).
ABANDONED = threading.Event()


@dataclass(frozen=True, slots=True)
class CommitEnv:
    """A built commit: where its Python is, and what building it cost (0 when cached)."""

    sha: str
    path: Path
    python: Path
    build_seconds: float
    cached: bool


def resolve_commit(repo: Path, rev: str, *, fetch: bool = True) -> str:
    """Full sha of ``rev``; in a shallow or partial clone, fetch it from origin first.

    Raises a one-line :class:`UserError` saying exactly what to fetch when git
    still does not know it.
    """
    sha = resolve_rev(repo, rev)
    if sha is None and fetch and git_output(repo, "remote"):
        remote, _, name = rev.partition("/") if rev.startswith("origin/") else ("origin", "", rev)
        remote = remote or "origin"
        name = name or rev
        ref = f"+refs/heads/{name}:refs/remotes/{remote}/{name}" if not _looks_like_sha(name) else name
        subprocess.run(["git", "fetch", "--quiet", "--no-tags", remote, ref], cwd=repo, capture_output=True,
                       text=True, timeout=300)
        sha = resolve_rev(repo, rev) or resolve_rev(repo, f"{remote}/{name}")
    if sha is None:
        shallow = git_output(repo, "rev-parse", "--is-shallow-repository") == "true"
        what = "this shallow clone lacks it" if shallow else "no such branch, tag or commit"
        raise UserError(
            f"{repo}: git does not know {rev!r} ({what}); fetch it first, e.g. `git fetch origin "
            f"{rev.removeprefix('origin/')}` (CI: actions/checkout with fetch-depth: 0)"
        )
    return sha


def _looks_like_sha(name: str) -> bool:
    return 7 <= len(name) <= 40 and all(c in "0123456789abcdef" for c in name.lower())


def tooling_sites() -> list[Path]:
    """The site-packages folders of the running Python, in its order: asv's runner, mmtrack, numpy..."""
    import site

    found = [Path(p) for p in site.getsitepackages()] + [Path(sysconfig.get_paths()["purelib"])]
    return list(dict.fromkeys(p for p in found if p.is_dir()))


def env_key(config: dict[str, Any]) -> str:
    """What, besides the commit, decides an environment's build."""
    parts = {
        "python": sys.version,
        "tooling": [str(p) for p in tooling_sites()],
        "build": config.get("build_command"),
        "install": config.get("install_command"),
        "format": 1,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:10]


def env_python(path: Path) -> Path:
    return path / "venv" / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def build_env(repo: Path, sha: str, cache: Path, config: dict[str, Any] | None = None,
              log: Any = None, twin: bool = False) -> CommitEnv:
    """The environment of ``sha``: reused from ``cache`` when built before, else built now. ``twin``: a
    second, separate build of the same commit (what two builds of identical code do: :mod:`.calibrate`)."""
    config = config or {}
    path = cache / f"{sha[:12]}-{env_key(config)}{'-twin' if twin else ''}"
    python = env_python(path)
    if (path / MARKER).is_file() and python.exists():
        return CommitEnv(sha, path, python, 0.0, cached=True)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    started = time.perf_counter()
    try:
        src = path / "src"
        _export(repo, sha, src)
        venv.EnvBuilder(with_pip=False, symlinks=os.name != "nt").create(path / "venv")
        site = _site_packages(python)
        # After the new site-packages: the commit's own build of the project wins.
        adds = "; ".join(f"site.addsitedir({str(p)!r})" for p in tooling_sites())
        (site / "zz_mmtrack_tooling.pth").write_text(f"import site; {adds}\n")
        _install(src, python, path / "build.log", config)
    except BaseException:
        if not (path / "build.log").exists():  # keep a failed build's log for the user to read
            shutil.rmtree(path, ignore_errors=True)
        raise
    seconds = time.perf_counter() - started
    (path / MARKER).write_text(json.dumps({"sha": sha, "seconds": seconds, "key": env_key(config)}))
    return CommitEnv(sha, path, python, seconds, cached=False)


def _export(repo: Path, sha: str, dest: Path) -> None:
    """The commit's files, without the working tree's state (git archive), its submodules' included.

    ``git archive`` leaves a submodule's folder empty: each one is exported from its checkout at the
    commit the parent records, or the build is refused in one line before it starts."""
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryFile() as tar:
        proc = subprocess.run(["git", "archive", "--format=tar", sha], cwd=repo, stdout=tar, stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise UserError(f"{repo}: cannot export commit {sha[:12]}: {proc.stderr.decode(errors='replace').strip()}")
        tar.seek(0)
        with tarfile.open(fileobj=tar) as tf:
            tf.extractall(dest, filter="data") if hasattr(tarfile, "data_filter") else tf.extractall(dest)
    for path, sub_sha in _submodules(repo, sha):
        _export(_submodule_checkout(repo, sha, path, sub_sha), sub_sha, dest / path)


def _submodules(repo: Path, sha: str) -> list[tuple[str, str]]:
    """(path, recorded commit) of every submodule of commit ``sha``."""
    out = subprocess.run(["git", "ls-tree", "-r", "-z", sha], cwd=repo, capture_output=True, check=True).stdout
    found = []
    for entry in out.decode("utf-8", "surrogateescape").split("\0"):
        meta, _, path = entry.partition("\t")
        mode, _, rest = meta.partition(" ")
        if mode == "160000":  # a gitlink: "160000 commit <sha>\t<path>"
            found.append((path, rest.split()[-1]))
    return found


def _submodule_checkout(repo: Path, sha: str, path: str, sub_sha: str) -> Path:
    """The checkout of submodule ``path`` that holds ``sub_sha``; a one-line refusal where there is none."""
    checkout = repo / path
    has_commit = (checkout / ".git").exists() and subprocess.run(
        ["git", "cat-file", "-e", f"{sub_sha}^{{commit}}"], cwd=checkout, capture_output=True).returncode == 0
    if not has_commit:
        raise UserError(f"{repo}: commit {sha[:12]} uses submodule {path} at {sub_sha[:12]}, which is not checked "
                        "out here; run `git submodule update --init --recursive` first (CI: actions/checkout "
                        "with submodules: recursive)")
    return checkout


def _site_packages(python: Path) -> Path:
    out = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


def _has_build_files(src: Path) -> bool:
    return any((src / name).is_file() for name in ("pyproject.toml", "setup.py", "setup.cfg"))


def _install(src: Path, python: Path, log: Path, config: dict[str, Any]) -> None:
    """Install the commit's project into its environment; a failure is one line (exit 2)."""
    if not _has_build_files(src):
        log.write_text("no pyproject.toml/setup.py: nothing to install; the suite imports the source as is\n")
        return
    env = dict(os.environ, SETUPTOOLS_SCM_PRETEND_VERSION=os.environ.get("SETUPTOOLS_SCM_PRETEND_VERSION", "0.0"))
    env.pop("PYTHONPATH", None)
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-input",
           "--disable-pip-version-check", "--no-cache-dir"]
    # Offline and fast first: the build backend of the running environment. When it lacks what the
    # project's build needs (e.g. an old setuptools without bdist_wheel), pip's isolated build fetches it.
    attempts: list[Sequence[str]] = [[*pip, "--no-build-isolation", str(src)], [*pip, str(src)]]
    logs = []
    for cmd in attempts:
        if ABANDONED.is_set():
            raise UserError(f"building commit {src.parent.name[:12]} abandoned: the build beside it stopped")
        proc = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True)
        logs.append(f"$ {' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}")
        log.write_text("\n".join(logs))
        if proc.returncode == 0:
            return
    lines = [ln.strip(" ╰─>×│") for ln in proc.stderr.splitlines() if ln.strip()]
    why = next((ln for ln in lines if ln.lower().startswith("error:") and "subprocess-exited" not in ln),
               lines[-1] if lines else "pip failed")
    raise UserError(f"building commit {src.parent.name[:12]} failed: {why.strip()[:300]} (full log: {log})")


def refuse_dirty(repo: Path) -> None:
    """One line, exit 2, where the working tree has uncommitted changes: the suite is read from it."""
    changed = git_output(repo, "status", "--porcelain", "--untracked-files=no").splitlines()
    if changed:
        raise UserError(
            f"{repo}: the working tree has uncommitted changes ({len(changed)} files, e.g. "
            f"{changed[0].split(maxsplit=1)[-1]}); the suite is read from the working tree, so commit or stash them"
        )
