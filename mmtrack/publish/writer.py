"""Writing the site: only inside the output folder, only what changed, atomically.

A manifest (``.mmtrack-site.json``) records the sha256 of every file the
builder wrote. A file whose new content hashes the same is left alone (and a file whose
inputs fingerprint the same is not even re-encoded); a file
the previous build wrote and this one does not is removed. Files mmtrack did
not write are never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from ..errors import UserError

MANIFEST = ".mmtrack-site.json"
_SAFE_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def safe_relpath(rel: str) -> PurePosixPath:
    """A relative path whose every part is a plain, strictly sanitised name."""
    path = PurePosixPath(rel)
    if path.is_absolute() or not path.parts:
        raise ValueError(f"unsafe site path {rel!r}")
    for part in path.parts:
        if part in (".", "..") or not _SAFE_PART.match(part):
            raise ValueError(f"unsafe site path {rel!r}")
    return path


@dataclass(slots=True)
class WriteReport:
    written: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    bytes_written: int = 0

    @property
    def total(self) -> int:
        return len(self.written) + self.unchanged


class SiteWriter:
    """Collects files by relative path and writes the ones that changed."""

    def __init__(self, out_dir: Path) -> None:
        self.out = Path(out_dir)
        if self.out.exists() and not self.out.is_dir():
            raise UserError(f"{self.out}: exists and is not a folder; pass a folder for the site")
        self.out.mkdir(parents=True, exist_ok=True)
        self.root = self.out.resolve()
        self.old_inputs: dict[str, str] = {}
        self.old: dict[str, str] = self._read_manifest()
        self.new: dict[str, str] = {}
        self.new_inputs: dict[str, str] = {}
        self.report = WriteReport()

    def _read_manifest(self) -> dict[str, str]:
        path = self.out / MANIFEST
        if not path.exists():
            others = [p.name for p in self.out.iterdir()]
            if others:
                raise UserError(
                    f"{self.out}: folder is not empty and holds no {MANIFEST} (not written by mmtrack publish);"
                    " publish into a new or empty folder"
                )
            return {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            files = data["files"]
            self.old_inputs = {str(k): str(v) for k, v in (data.get("inputs") or {}).items()}
            return {str(k): str(v) for k, v in files.items()}
        except (ValueError, KeyError, TypeError, AttributeError):
            return {}

    def _target(self, rel: PurePosixPath) -> Path:
        target = self.root.joinpath(*rel.parts)
        # Resolve the parent: a symlinked subfolder must not lead outside the site.
        parent = target.parent.resolve()
        if parent != self.root and self.root not in parent.parents:
            raise UserError(f"{target}: resolves outside the site folder {self.root}; remove the link")
        if target.is_symlink():
            raise UserError(f"{target}: is a symbolic link; remove it and publish again")
        return parent / target.name

    def put(self, rel: str, content: bytes | str) -> None:
        data = content.encode("utf-8") if isinstance(content, str) else content
        relpath = safe_relpath(rel)
        key = relpath.as_posix()
        if key in self.new:
            raise ValueError(f"site path written twice: {key}")
        digest = hashlib.sha256(data).hexdigest()
        self.new[key] = digest
        target = self.root.joinpath(*relpath.parts)
        if self.old.get(key) == digest and target.is_file() and not target.is_symlink():
            self.report.unchanged += 1
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        target = self._target(relpath)
        if key not in self.old and target.is_file() and target.read_bytes() == data:
            self.report.unchanged += 1
            return
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, target)
        self.report.written.append(key)
        self.report.bytes_written += len(data)

    def put_lazy(self, rel: str, fingerprint: str, produce: Callable[[], bytes | str]) -> None:
        """Like :meth:`put`, but skip producing the content when the inputs' fingerprint
        matches the last build's and the file it wrote is still there."""
        key = safe_relpath(rel).as_posix()
        target = self.root.joinpath(*PurePosixPath(key).parts)
        if (
            self.old_inputs.get(key) == fingerprint
            and key in self.old
            and key not in self.new
            and target.is_file()
            and not target.is_symlink()
        ):
            self.new[key] = self.old[key]
            self.new_inputs[key] = fingerprint
            self.report.unchanged += 1
            return
        self.put(rel, produce())
        self.new_inputs[key] = fingerprint

    def finish(self) -> WriteReport:
        for key in sorted(set(self.old) - set(self.new)):
            try:
                relpath = safe_relpath(key)
            except ValueError:
                continue  # a tampered manifest names nothing we delete
            target = self._target(relpath)
            if target.is_file():
                target.unlink()
                self.report.removed.append(key)
        manifest = json.dumps(
            {"version": 1, "files": dict(sorted(self.new.items())), "inputs": dict(sorted(self.new_inputs.items()))},
            indent=0,
        )
        tmp = self.root / f".{MANIFEST}.tmp-{os.getpid()}"
        tmp.write_text(manifest, encoding="utf-8")
        os.replace(tmp, self.root / MANIFEST)
        return self.report
