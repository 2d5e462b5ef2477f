"""Writing the site: only inside the output folder, only what changed, atomically per build.

A manifest (``.mmtrack-site.json``) records the sha256 of every file the builder
wrote, and what the build was made from (``state``, the builder's business). A file
whose new content hashes the same is left alone (and a file whose inputs
fingerprint the same is not even re-encoded); a file the previous build wrote and
this one does not is removed. Files mmtrack did not write are never touched.

How a build stays inside its folder and survives a kill:

* Before anything is written, the output tree is walked: a symbolic link (or a
  FIFO, a device) anywhere in it stops the build with one line.
* Every new file is created with ``O_CREAT|O_EXCL|O_NOFOLLOW`` in a fresh private
  staging folder (``mkdtemp``, mode 0700) reached only through directory file
  descriptors opened with ``O_NOFOLLOW``: no name in it can be planted.
* A top-level folder with a changed file (``data``, ``b``, ``assets``) is staged
  complete (unchanged files hard-linked, never copied) and swapped with the live
  one in one ``renameat2(RENAME_EXCHANGE)``; top-level files are renamed over.
  A reader sees the old folder or the new one, never a mix.
* A journal (``.mmtrack-site.pending.json``) naming the build's files is put in
  place before the first swap, the manifest last. A killed build leaves at most a
  staging folder (marked as mmtrack's) and the journal: the next publish removes
  the one and counts the other's files as its own, then completes the site.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import hashlib
import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import orjson

from ..errors import UserError
from .chunks import PointChunks

MANIFEST = ".mmtrack-site.json"
JOURNAL = ".mmtrack-site.pending.json"
STAGING_PREFIX = ".mmtrack-build-"
STAGING_MARK = ".mmtrack-staging"  # inside a staging folder: it is ours to remove
_SAFE_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class SitePath:
    """A checked relative path inside the site (pathlib's parsing cost more than the rest of a carried-on
    benchmark's bookkeeping: every file is looked up several times)."""

    parts: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.parts[-1]

    def as_posix(self) -> str:
        return "/".join(self.parts)


@functools.lru_cache(maxsize=None)  # a carried-on benchmark's files are looked up several times each
def safe_relpath(rel: str) -> SitePath:
    """A relative path whose every part is a plain, strictly sanitised name ("a//b", "./a", "a/" refused)."""
    parts = tuple(rel.split("/"))
    for part in parts:
        if part in (".", "..") or not _SAFE_PART.match(part):  # "" too: an absolute path, a doubled slash
            raise ValueError(f"unsafe site path {rel!r}")
    return SitePath(parts)


@dataclass(slots=True)
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    bytes_written: int = 0
    # Set when nothing was new (publish stopped before reading the store): what the last build
    # recorded it showed, {"benchmarks": n, "series": n, "change_points": n}.
    up_to_date: dict[str, int] | None = None

    @property
    def total(self) -> int:
        return len(self.written) + self.unchanged


def _tree(root: Path) -> Iterator[tuple[str, os.DirEntry]]:
    """Every entry below ``root`` with its path relative to it; links are listed, never followed."""
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(root / rel if rel else root) as entries:
            for entry in entries:
                name = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    stack.append(name)
                yield name, entry


def check_tree(root: Path) -> set[str]:
    """Refuse (one line) an output tree holding a symbolic link or anything but files and folders; return the
    relative paths of its files."""
    files = set()
    for name, entry in _tree(root):
        if entry.is_file(follow_symlinks=False):
            files.add(name)
            continue
        if entry.is_symlink():
            raise UserError(
                f"{entry.path}: is a symbolic link inside the site folder (a link can lead outside the site"
                " folder); publish writes nothing through links: remove it and publish again"
            )
        if not entry.is_dir(follow_symlinks=False) and not entry.is_file(follow_symlinks=False):
            raise UserError(f"{entry.path}: is not a regular file or folder; remove it and publish again")
    return files


def last_build_state(root: Path) -> dict[str, Any] | None:
    """The ``state`` the last build recorded, when the site is as that build left it: its manifest
    readable, no killed build's journal or staging folder, every file it wrote still a regular file.
    None otherwise (then a build repairs the site). Reads the tree, writes nothing."""
    try:
        root_fd = os.open(root, _DIR_FLAGS)
    except OSError:
        return None
    try:
        manifest = _read_json(root_fd, MANIFEST)
        if not manifest or _read_raw(root_fd, JOURNAL) is not None:
            return None
    finally:
        os.close(root_fd)
    present: set[str] = set()
    for name, entry in _tree(root):
        if entry.is_dir(follow_symlinks=False):
            if "/" not in name and entry.name.startswith(STAGING_PREFIX):
                return None
        elif entry.is_file(follow_symlinks=False):
            present.add(name)
    state = manifest.get("state")
    files = _str_map(manifest.get("files"))
    return state if isinstance(state, dict) and files and present.issuperset(files) else None


_RENAME_EXCHANGE = 2


def _renameat2() -> Callable[..., int] | None:
    try:
        fn = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True).renameat2
    except (AttributeError, OSError, TypeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def swap_dirs(src_fd: int, name: str, dst_fd: int) -> None:
    """Put folder ``name`` of ``src_fd`` in place of the one in ``dst_fd``, which moves to ``src_fd``.

    One ``renameat2(RENAME_EXCHANGE)`` where the kernel and file system have it; else two renames,
    with an instant where the folder is missing (a kill there is completed by the next publish)."""
    fn = _renameat2()
    if fn is not None:
        if fn(src_fd, name.encode(), dst_fd, name.encode(), _RENAME_EXCHANGE) == 0:
            return
        err = ctypes.get_errno()
        if err not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
            raise OSError(err, os.strerror(err), name)
    os.rename(name, f"{name}.old", src_dir_fd=dst_fd, dst_dir_fd=src_fd)
    os.rename(name, name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
    os.rename(f"{name}.old", name, src_dir_fd=src_fd, dst_dir_fd=src_fd)


class _Dirs:
    """Folders below one root, each opened once with ``O_NOFOLLOW`` (created when asked)."""

    def __init__(self, root_fd: int) -> None:
        self.fds: dict[tuple[str, ...], int] = {(): root_fd}

    def get(self, parts: tuple[str, ...], create: bool) -> int | None:
        fd = self.fds.get(parts)
        if fd is not None:
            return fd
        parent = self.get(parts[:-1], create)
        if parent is None:
            return None
        if create:
            try:
                os.mkdir(parts[-1], 0o755, dir_fd=parent)
            except FileExistsError:
                pass
        try:
            fd = os.open(parts[-1], _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            if create:
                raise
            return None
        except OSError as exc:  # ELOOP / ENOTDIR: a link or a file where a folder should be
            raise UserError(f"{'/'.join(parts)}: is not a plain folder ({exc.strerror}); remove it and publish again")
        self.fds[parts] = fd
        return fd

    def close(self, keep_root: bool = True) -> None:
        for parts, fd in self.fds.items():
            if parts or not keep_root:
                os.close(fd)
        self.fds = {(): self.fds[()]} if keep_root else {}


def _write_new(dir_fd: int, name: str, data: bytes) -> None:
    fd = os.open(name, _NEW_FILE, 0o644, dir_fd=dir_fd)
    try:  # straight to the descriptor: a buffered file object per page file cost more than the write
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _read_json(dir_fd: int, name: str) -> dict[str, Any] | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        try:
            data = orjson.loads(f.read())
        except ValueError:
            return {}
    return data if isinstance(data, dict) else {}


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


class RecordingWriter:
    """Stands in for a :class:`SiteWriter` where benchmarks are rendered in a forked child: records what they put, for
    the build's writer to replay in the serial order (the same files, manifest and report as written there)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, bytes | str]] = []  # (path, put_lazy's fingerprint or None, content)

    def put(self, rel: str, content: bytes | str) -> None:
        self.calls.append((rel, None, content))

    def put_lazy(self, rel: str, fingerprint: str, produce: Callable[[], bytes | str]) -> None:
        self.calls.append((rel, fingerprint, produce()))  # the last build's inputs are the writer's to compare

    def put_points(self, bid: str, k: int, fingerprint: str, produce: Callable[[], bytes]) -> None:
        self.calls.append(("", (bid, k, fingerprint), produce()))  # type: ignore[arg-type]


def replay(writer: SiteWriter, calls: list[tuple[str, str | None, bytes | str]]) -> None:
    """Put what a :class:`RecordingWriter` recorded, in its order."""
    for rel, fingerprint, content in calls:
        if not rel:  # a benchmark's line of a points chunk (chunks.py)
            writer.put_points(*fingerprint, lambda c=content: c)  # type: ignore[misc,arg-type]  # made later
        elif fingerprint is None:
            writer.put(rel, content)
        else:
            writer.put_lazy(rel, fingerprint, lambda: content)  # noqa: B023 - called at once, if at all


#: How long a build waits for another build of the same site folder before it gives up.
SITE_LOCK_WAIT_S = 600.0


def lock_site(out: Path, wait_s: float | None = None) -> int:
    """An exclusive ``flock`` on the site folder itself (no lock file: the folder is the lock), held by the returned
    descriptor until it is closed. Two builds of one site at once (two ``update`` runs) would switch each other's
    staged folders away: the second waits, saying so in one line, and gives up in one line after ``wait_s``."""
    import fcntl
    import sys
    import time

    wait_s = SITE_LOCK_WAIT_S if wait_s is None else wait_s
    fd = os.open(out, _DIR_FLAGS)
    deadline = time.monotonic() + wait_s
    said = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                raise UserError(f"{out}: another mmtrack is still writing this site after {wait_s:.0f} s; let it "
                                "finish (or end it) and publish again") from None
            if not said:
                print(f"waiting for another mmtrack writing the site {out} to finish", file=sys.stderr, flush=True)
                said = True
            time.sleep(0.05)


class SiteWriter:
    """Collects files by relative path and writes the ones that changed, atomically at :meth:`finish`."""

    def __init__(self, out_dir: Path) -> None:
        self.out = Path(out_dir)
        if self.out.is_symlink():
            raise UserError(f"{self.out}: the site folder is a symbolic link; pass the real folder")
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out}: exists and is not a folder; pass a folder for the site")
        self.out.mkdir(parents=True, exist_ok=True)
        self._lock_fd: int | None = lock_site(self.out)  # before anything is read: another build may be switching
        # The live tree's files as found here: nothing changes the live tree before finish() swaps the staged
        # folders in, and a stat per lookup cost more than the carried-on benchmarks' other bookkeeping
        self.live_files = {k for k in check_tree(self.out) if not k.startswith(STAGING_PREFIX)}
        self.root = self.out.resolve()
        self.root_fd = os.open(self.root, _DIR_FLAGS)
        self.live = _Dirs(self.root_fd)
        manifest = _read_json(self.root_fd, MANIFEST)
        journal = _read_json(self.root_fd, JOURNAL)
        self._remove_leftover_staging()
        if manifest is None and journal is None:
            others = [name for name in os.listdir(self.root_fd)]
            if others:
                os.close(self.root_fd)
                self.release()
                raise UserError(
                    f"{self.out}: folder is not empty and holds no {MANIFEST} (not written by mmtrack publish);"
                    " publish into a new or empty folder"
                )
        manifest = manifest or {}
        self.old_manifest = manifest
        self.old: dict[str, str] = _str_map(manifest.get("files"))
        self.old_inputs: dict[str, str] = _str_map(manifest.get("inputs"))
        self.old_state: dict[str, Any] = manifest.get("state") if isinstance(manifest.get("state"), dict) else {}
        # A killed build's files are ours too (its journal says so); their hashes are unknown.
        self.owned: set[str] = set(self.old) | set(_str_map((journal or {}).get("files")))
        self.had_journal = journal is not None
        self.new: dict[str, str] = {}
        self.new_inputs: dict[str, str] = {}
        self.state: dict[str, Any] = {}
        self.report = WriteReport()
        self._staging: Path | None = None
        self._staged: _Dirs | None = None
        self._old_below: dict[str, list[str]] | None = None
        self.chunks = PointChunks(self)  # the points files, grouped: put at the end of the build

    # -- what the builder calls -------------------------------------------------------------------

    def put(self, rel: str, content: bytes | str) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else content
        relpath = safe_relpath(rel)
        key = relpath.as_posix()
        if key in self.new:
            raise ValueError(f"site path written twice: {key}")
        digest = hashlib.sha256(data).hexdigest()
        self.new[key] = digest
        if self.old.get(key) == digest and self._live_is_file(relpath):
            self.report.unchanged += 1
            return
        if key not in self.owned and self._live_bytes(relpath) == data:
            self.report.unchanged += 1
            return
        _write_new(self._staging_dir(relpath.parts[:-1]), relpath.name, data)
        self.report.written.append(key)
        self.report.bytes_written += len(data)

    def put_lazy(self, rel: str, fingerprint: str, produce: Callable[[], bytes | str]) -> None:
        """Like :meth:`put`, but skip producing the content when the inputs' fingerprint
        matches the last build's and the file it wrote is still there."""
        key = safe_relpath(rel).as_posix()
        if self.old_inputs.get(key) == fingerprint and self.keep(key):
            self.new_inputs[key] = fingerprint
            return
        self.put(rel, produce())
        self.new_inputs[key] = fingerprint

    def put_points(self, bid: str, k: int, fingerprint: str, produce: Callable[[], bytes]) -> None:
        self.chunks.put(bid, k, fingerprint, produce)

    def keepable(self, key: str) -> bool:
        return key in self.old and key not in self.new and self._live_is_file(safe_relpath(key))

    def keep(self, key: str) -> bool:
        """Keep a file of the last build as it is (the builder knows its inputs did not change)."""
        if not self.keepable(key):
            return False
        self.new[key] = self.old[key]
        if key in self.old_inputs:
            self.new_inputs[key] = self.old_inputs[key]
        self.report.unchanged += 1
        return True

    def old_bytes(self, key: str) -> bytes | None:
        """The content of a file of the last build, if it is still exactly what that build wrote."""
        if key not in self.old:
            return None
        data = self._live_bytes(safe_relpath(key))
        return data if data is not None and hashlib.sha256(data).hexdigest() == self.old[key] else None

    def old_files(self, prefix: str) -> list[str]:
        """The last build's files whose path starts with ``prefix``: found in an index when the prefix
        ends a folder ("data/b/") or the stem of a name ("data/b/<id>.": every file of one benchmark)."""
        if not prefix.endswith(("/", ".")):
            return [k for k in self.old if k.startswith(prefix)]
        if self._old_below is None:  # asked once per benchmark: index the files by every folder above them
            self._old_below = {}
            for k in self.old:
                i = k.find("/")
                while i >= 0:
                    self._old_below.setdefault(k[: i + 1], []).append(k)
                    i = k.find("/", i + 1)
                stem = k.find(".", k.rfind("/") + 1)
                if stem > 0:
                    self._old_below.setdefault(k[: stem + 1], []).append(k)
        return list(self._old_below.get(prefix, ()))

    # -- the live tree ----------------------------------------------------------------------------

    def _live_is_file(self, relpath: SitePath) -> bool:
        return relpath.as_posix() in self.live_files

    def _live_bytes(self, relpath: SitePath) -> bytes | None:
        if not self._live_is_file(relpath):
            return None
        fd = os.open(relpath.name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=self.live.get(relpath.parts[:-1], False))
        with os.fdopen(fd, "rb") as f:
            return f.read()

    # -- staging ----------------------------------------------------------------------------------

    def _staging_dir(self, parts: tuple[str, ...]) -> int:
        if self._staged is None:
            self._staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=self.root))
            fd = os.open(self._staging, _DIR_FLAGS)
            _write_new(fd, STAGING_MARK, b"mmtrack publish staging folder; removed by the next publish\n")
            self._staged = _Dirs(fd)
        fd = self._staged.get(parts, create=True)
        assert fd is not None
        return fd

    def _remove_leftover_staging(self) -> None:
        for name in os.listdir(self.root_fd):
            if not name.startswith(STAGING_PREFIX):
                continue
            st = os.stat(name, dir_fd=self.root_fd, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                continue
            try:
                os.stat(f"{name}/{STAGING_MARK}", dir_fd=self.root_fd, follow_symlinks=False)
            except FileNotFoundError:
                # Killed between mkdtemp and the mark: empty. Anything else is not ours.
                try:
                    os.rmdir(name, dir_fd=self.root_fd)
                except OSError:
                    pass
                continue
            shutil.rmtree(self.root / name)

    def _stage_rest(self, top: str, written: set[str], removed: set[str]) -> None:
        """Complete the staged copy of folder ``top``: link every live file this build neither rewrote nor removed."""
        self._staging_dir((top,))
        below = f"{top}/"
        for key in sorted(k for k in self.live_files if k.startswith(below) and k not in written and k not in removed):
            parts = tuple(key.split("/"))
            src = self.live.get(parts[:-1], create=False)
            dst = self._staging_dir(parts[:-1])
            try:
                os.link(parts[-1], parts[-1], src_dir_fd=src, dst_dir_fd=dst, follow_symlinks=False)
            except OSError:  # a file system without hard links: copy
                fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW, dir_fd=src)
                with os.fdopen(fd, "rb") as f:
                    _write_new(dst, parts[-1], f.read())

    # -- the switch -------------------------------------------------------------------------------

    def _manifest_bytes(self) -> bytes:
        return orjson.dumps(
            {
                "version": 2,
                "files": dict(sorted(self.new.items())),
                "inputs": dict(sorted(self.new_inputs.items())),
                "state": self.state,
            },
        )  # keys not sorted: the builder's cached records keep their key order

    def finish(self) -> WriteReport:
        try:
            return self._finish()
        finally:
            if self._staged is not None:
                self._staged.close(keep_root=False)
            if self._staging is not None:
                _remove_tree(self.root_fd, self._staging.name)
            self.live.close(keep_root=False)
            self.release()

    def release(self) -> None:
        """Let the next build of this site in (finish does; a build that failed before it, when collected)."""
        if self._lock_fd is not None:
            fd, self._lock_fd = self._lock_fd, None
            os.close(fd)

    def __del__(self) -> None:
        if getattr(self, "_lock_fd", None) is not None:
            self.release()

    def _finish(self) -> WriteReport:
        removed = set()
        for key in self.owned - set(self.new):
            try:
                relpath = safe_relpath(key)
            except ValueError:
                continue  # a tampered manifest names nothing we delete
            if self._live_is_file(relpath):
                removed.add(key)
        manifest = self._manifest_bytes()
        written = set(self.report.written)
        if not written and not removed and not self.had_journal:
            old = _read_raw(self.root_fd, MANIFEST)
            if old == manifest:
                return self.report  # nothing new: nothing is written
        self.report.removed = sorted(removed)
        changed = written | removed
        tops = sorted({k.split("/", 1)[0] for k in changed if "/" in k})
        files = sorted(k for k in changed if "/" not in k)
        staged = self._staging_dir(())  # also when only the manifest changes
        for top in tops:
            self._stage_rest(top, written, removed)
        _write_new(staged, JOURNAL, orjson.dumps({"files": dict(sorted({**self.old, **self.new}.items()))}))
        os.rename(JOURNAL, JOURNAL, src_dir_fd=staged, dst_dir_fd=self.root_fd)
        # The folder the pages read last goes last: data/ switches the site from the old build to the new one.
        for top in sorted(tops, key=lambda t: (t == "data", t)):
            self._staged.close()  # type: ignore[union-attr] - no fd may point into a folder being moved
            self.live.close()
            if self._live_is_dir(top):
                swap_dirs(staged, top, self.root_fd)
            else:
                os.rename(top, top, src_dir_fd=staged, dst_dir_fd=self.root_fd)
        for name in files:
            if name in written:
                os.rename(name, name, src_dir_fd=staged, dst_dir_fd=self.root_fd)
            else:
                os.unlink(name, dir_fd=self.root_fd)
        _write_new(staged, MANIFEST, manifest)
        os.rename(MANIFEST, MANIFEST, src_dir_fd=staged, dst_dir_fd=self.root_fd)
        os.unlink(JOURNAL, dir_fd=self.root_fd)
        return self.report

    def _live_is_dir(self, name: str) -> bool:
        try:
            st = os.stat(name, dir_fd=self.root_fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        return stat.S_ISDIR(st.st_mode)


def _read_raw(dir_fd: int, name: str) -> bytes | None:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read()


def _remove_tree(parent_fd: int, name: str) -> None:
    """Remove folder ``name`` of ``parent_fd`` and everything below it, links not followed, errors ignored (what
    ``shutil.rmtree(ignore_errors=True)`` does, by file descriptors and names alone: it joined a path per file)."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError:
        return
    try:
        with os.scandir(fd) as entries:
            listed = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
        for child, is_dir in listed:
            try:
                if is_dir:
                    _remove_tree(fd, child)
                else:
                    os.unlink(child, dir_fd=fd)
            except OSError:
                pass
    finally:
        os.close(fd)
    try:
        os.rmdir(name, dir_fd=parent_fd)
    except OSError:
        pass
