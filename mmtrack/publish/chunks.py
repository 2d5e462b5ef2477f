"""The benchmarks' points, grouped: one file per group of benchmarks and chunk of commits.

``data/b/<g>.<k>.js`` holds one ``MM.points(id, k, rows);`` line per benchmark whose id starts with ``g`` (16 groups),
in id order; the page's callback is the same as for a file of its own. A new commit adds a point to every benchmark's
last chunk: grouped, that rewrites 16 files instead of one per benchmark (each file created costs the kernel most of
what one update spends on it: docs/design/nightly-update-profile.md). Each line's inputs are fingerprinted in the
manifest (``<file>#<id>``), so a group whose lines are all unchanged is kept unread, and a kept benchmark's line is
copied from the last build's file.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

from ..errors import UserError

GROUP_CHARS = 1  # a benchmark id's first hex digit: 16 groups


def chunk_file(bid: str, k: int) -> str:
    """The file of chunk ``k`` of benchmark ``bid``'s group."""
    return f"data/b/{bid[:GROUP_CHARS]}.{k}.js"


def _member(file: str, bid: str) -> str:
    return f"{file}#{bid}"


class PointChunks:
    """Each group file's lines as the benchmarks put or keep them; :meth:`write` puts the files once all are known."""

    def __init__(self, writer: Any) -> None:  # the SiteWriter that holds it (writer.py imports this module)
        self.writer = weakref.proxy(writer)  # no cycle: a writer dropped unfinished releases its lock at once
        # file -> benchmark id -> (fingerprint, the line's bytes made on demand); (None, None): the last build's line
        self.members: dict[str, dict[str, tuple[str | None, Callable[[], bytes] | None]]] = {}
        self._old_lines: dict[str, dict[str, bytes]] = {}
        self._then: dict[str, list[str]] | None = None  # file -> the benchmark ids it held at the last build
        self._chunks_then: dict[str, list[int]] = {}  # benchmark id -> the chunks it had lines in then

    def put(self, bid: str, k: int, fingerprint: str, produce: Callable[[], bytes]) -> None:
        self.members.setdefault(chunk_file(bid, k), {})[bid] = (fingerprint, produce)

    def keepable(self, bid: str, k: int) -> bool:
        file = chunk_file(bid, k)
        return _member(file, bid) in self.writer.old_inputs and self.writer.keepable(file)

    def keep(self, bid: str, k: int) -> None:
        self.members.setdefault(chunk_file(bid, k), {})[bid] = (None, None)

    def chunks_then(self, bid: str) -> list[int]:
        """The chunks the last build wrote lines of ``bid`` to."""
        self._members_then()
        return sorted(self._chunks_then.get(bid, ()))

    def old_line(self, bid: str, k: int) -> bytes | None:
        """The last build's line of ``bid`` in chunk ``k``, if its file is still exactly what that build wrote."""
        file = chunk_file(bid, k)
        if file not in self._old_lines:
            data = self.writer.old_bytes(file)
            lines = data.splitlines(keepends=True) if data is not None else []
            # a line starts MM.points("<id>", ...: JSON escapes every newline and U+2028/9 inside it
            self._old_lines[file] = {line[11:11 + len(bid)].decode(): line for line in lines}
        return self._old_lines[file].get(bid)

    def _members_then(self) -> dict[str, list[str]]:
        if self._then is None:
            self._then = {}
            for key in self.writer.old_inputs:
                file, sep, bid = key.partition("#")
                if sep:
                    self._then.setdefault(file, []).append(bid)
                    self._chunks_then.setdefault(bid, []).append(int(file.rsplit(".", 2)[1]))
        return self._then

    def write(self) -> None:
        """Put every group file: kept as it is where each of its lines is, else written from its lines."""
        w = self.writer
        for file in sorted(self.members):
            members = self.members[file]
            old = {bid: w.old_inputs.get(_member(file, bid)) for bid in members}
            same = all(fp is None or fp == old[bid] for bid, (fp, _) in members.items())
            if same and sorted(members) == sorted(self._members_then().get(file, ())) and w.keep(file):
                w.new_inputs.update({_member(file, bid): old[bid] for bid in members})  # type: ignore[misc]
                continue
            k = int(file.rsplit(".", 2)[1])
            lines = []
            for bid in sorted(members):
                fp, produce = members[bid]
                line = self.old_line(bid, k) if fp is None or fp == old[bid] else None
                if line is None and produce is not None:
                    line = produce()
                if line is None:
                    raise UserError(f"{w.out / file}: is not what the last build wrote; remove it and publish again")
                lines.append(line)
                w.new_inputs[_member(file, bid)] = fp if fp is not None else old[bid]  # type: ignore[assignment]
            w.put(file, b"".join(lines))
