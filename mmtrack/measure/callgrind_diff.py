"""Why a count changed: the functions whose instructions per op moved most between two callgrind profiles.

Each side's profile is the measured chunk's (:mod:`.callgrind`), read by Valgrind's own ``callgrind_annotate``
(self cost per function, ``Ir`` only). The frames that enclose the counted region (``main``, the interpreter's
entry) carry the whole region and say nothing: they are left out. Python-level functions show as the
interpreter's C functions (``_PyEval_EvalFrameDefault``); C extensions and the runtime show by name.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

_LINE = re.compile(r"^\s*([\d,]+)\s+(\S.*)$")
ENCLOSING = 0.99  # a function with this share of the region's total is a frame around it


@dataclass(frozen=True, slots=True)
class Delta:
    function: str
    before: float  # instructions per op
    after: float

    @property
    def change(self) -> float:
        return self.after - self.before


def function_costs(profile: Path) -> dict[str, int]:
    """Self instructions per function of one profile, as ``callgrind_annotate`` prints them."""
    exe = shutil.which("callgrind_annotate")
    if exe is None:
        raise FileNotFoundError("callgrind_annotate is not on PATH; install the Debian package 'valgrind'")
    out = subprocess.run([exe, "--show=Ir", "--threshold=100", "--auto=no", "--show-percs=no", "--inclusive=no",
                          str(profile)], capture_output=True, text=True, check=True).stdout
    lines = out.split("file:function", 1)[-1].splitlines()
    costs: dict[str, int] = {}
    for line in lines:
        m = _LINE.match(line)
        if m:
            function = m.group(2).split(" [", 1)[0].rsplit(":", 1)[-1]  # "file:function [object]"
            costs[function] = costs.get(function, 0) + int(m.group(1).replace(",", ""))
    total = max(costs.values(), default=0)
    return {f: c for f, c in costs.items() if c < ENCLOSING * total}


def top_deltas(before: Path, ops_before: int, after: Path, ops_after: int, n: int = 8) -> list[Delta]:
    """The ``n`` functions whose self instructions per op moved most, largest first."""
    a, b = function_costs(before), function_costs(after)
    deltas = [Delta(f, a.get(f, 0) / ops_before, b.get(f, 0) / ops_after) for f in set(a) | set(b)]
    return sorted((d for d in deltas if d.change), key=lambda d: -abs(d.change))[:n]
