"""What each run says about a suite's newest commits, carried over from the last build where its inputs did not move.

A commit's :class:`~mmtrack.analysis.compare.InRun` (its run's frames and shift, :func:`..analysis.compare.suite_runs`)
reads, for every series of the suite measured at that commit, the series' values up to the commit and its
``confirm_window`` later ones. When every series of the suite only gained newer points since the last build, and each
series' later window of the commit was already closed then (full, cut by a code version, or the series' end is still
its end), those inputs are the last build's, so the InRun is too: its fingerprint is taken from the last build's state,
and the InRun itself is fitted only if a verdict must be worked out again (a benchmark rebuilt whole).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..analysis import deterministic
from ..analysis.compare import InRun, SuiteColumns, suite_runs

Case = tuple[Any, Any, Any]  # (benchmark, params, metric), as analysis.compare keys a suite's series
# Per series of a suite: the commit of its last point at the last build, and that build's run fingerprints by position.
LastBuild = tuple[str, Mapping[str, Any]]
_TAIL = 64  # how far back from a series' end its last point then and its judged commits are looked for first


def _later_closed(versions: Sequence[str | None], at: int, last: int, window: int) -> bool:
    """Whether the later window of commit ``at`` (up to ``window`` commits of its code version) ended by index
    ``last`` (the series' last point at the last build): no point after ``last`` joins it."""
    for j in range(at + 1, min(len(versions), at + window + 1)):
        if versions[j] != versions[at]:
            return True
        if j > last:
            return False
    return True


class _Index:
    """A series' commits by sha, its newest ones first (the judged commits are there); the rest on demand."""

    def __init__(self, shas: Sequence[str]) -> None:
        self.shas = shas
        start = max(0, len(shas) - _TAIL)
        self.tail = {s: start + i for i, s in enumerate(shas[start:])}
        self.whole: dict[str, int] | None = None

    def get(self, sha: str) -> int | None:
        i = self.tail.get(sha)
        if i is not None or len(self.shas) <= _TAIL:
            return i
        if self.whole is None:
            self.whole = {s: i for i, s in enumerate(self.shas)}
        return self.whole.get(sha)


def carried_prints(
    columns: Mapping[Case, SuiteColumns], judged: Iterable[str], last: Mapping[Case, LastBuild],
    pos: Mapping[str, int], window: int,
) -> dict[str, dict[Case, str]]:
    """The judged commits whose InRun is the last build's, each with every series' fingerprint from then (only the
    series a run fits: measured at the commit and after an earlier one, not deterministic counts); ``last``: every
    series of the suite must be in it (its benchmark only gained newer points), else nothing is carried."""
    if not columns or any(case not in last for case in columns):
        return {}
    index = {case: _Index(cols[0]) for case, cols in columns.items()}
    ends = {}
    for case, idx in index.items():
        end = idx.get(last[case][0])
        if end is None:
            return {}
        ends[case] = end
    out: dict[str, dict[Case, str]] = {}
    for sha in judged:
        at_pos = pos.get(sha)
        prints: dict[Case, str] | None = {} if at_pos is not None else None
        for case, cols in columns.items():
            if prints is None:
                break
            i = index[case].get(sha)
            if i is None:
                continue
            if i > ends[case] or not _later_closed(cols[2], i, ends[case], window):
                prints = None
            elif i >= 1 and not deterministic.is_deterministic(case[2]):
                fp = last[case][1].get(str(at_pos))
                if isinstance(fp, str):
                    prints[case] = fp
                else:
                    prints = None  # the last build had none: fit it now
        if prints is not None:
            out[sha] = prints
    return out


class SuiteRuns:
    """One suite's InRun of each series by after sha: those fitted for this build, and the carried commits' fitted
    on first use (all series of a commit at once)."""

    def __init__(self, columns: Mapping[Case, SuiteColumns], judged: Mapping[Case, Iterable[str]],
                 fitted: Mapping[Case, Mapping[str, InRun]], carried: Iterable[str], window: int) -> None:
        self.columns = columns
        self.judged = {case: set(shas) for case, shas in judged.items()}
        self.fitted = fitted
        self.carried = set(carried)
        self.window = window
        self.late: dict[str, dict[Case, InRun]] = {}

    def get(self, case: Case, sha: str) -> InRun | None:
        if sha not in self.carried:
            return self.fitted.get(case, {}).get(sha)
        if sha not in self.judged.get(case, ()):
            return None
        if sha not in self.late:
            runs = suite_runs(self.columns, {c: [sha] for c in self.columns}, window=self.window)
            self.late[sha] = {c: by_sha[sha] for c, by_sha in runs.items() if sha in by_sha}
        return self.late[sha].get(case)


class CaseRuns:
    """One series' view of :class:`SuiteRuns`: ``get(sha)``, as a dict of InRun by after sha reads."""

    __slots__ = ("suite", "case")

    def __init__(self, suite: SuiteRuns, case: Case) -> None:
        self.suite = suite
        self.case = case

    def get(self, sha: str) -> InRun | None:
        return self.suite.get(self.case, sha)
