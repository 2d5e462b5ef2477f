"""The order of commits that detect reads: git's history where a repository knows them, the results' dates otherwise.

Commit dates can disagree with the history: a rebase or cherry-pick keeps the author's date, a merged branch's
commits are older than the merge, a committer's clock is off. A step then sits between two commits that are not
neighbours in the code. Where a repository is at hand, the commits it knows take its order (parents before
children); every commit it does not know keeps its place in date order, so that one stray result neither vanishes
nor moves the others.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Mapping, Sequence

#: What the outputs say when no repository ordered the commits.
BY_DATE = "commit dates recorded in the results"


@dataclass(frozen=True, slots=True)
class CommitOrder:
    """Each commit's position, and the line that says where the order came from."""

    position: dict[str, int]
    source: str

    def sort_key(self, sha: str) -> int:
        return self.position.get(sha, -1)


def by_date(date_order: Sequence[str], why: str = "") -> CommitOrder:
    """The commits in the order of their recorded dates (``why``: the reason no repository ordered them)."""
    return CommitOrder({s: i for i, s in enumerate(date_order)}, BY_DATE + (f" ({why})" if why else ""))


def from_history(date_order: Sequence[str], history: Sequence[str], where: str) -> CommitOrder | None:
    """``date_order`` (the store's commits, by date) with the commits that ``history`` (git's, parents first) holds
    in its order, in the places those commits take in date order; the others keep theirs. None where the history
    holds fewer than two of them: nothing to order."""
    index = {s: i for i, s in enumerate(history)}
    full = _full_names(date_order, index, sorted(index))
    known = sorted((s for s in date_order if s in full), key=lambda s: index[full[s]])
    if len(known) < 2:
        return None
    taken = iter(known)
    order = [next(taken) if s in full else s for s in date_order]
    rest = len(date_order) - len(known)
    tail = f"; {rest} commit{'s' if rest != 1 else ''} not in it by their recorded dates" if rest else ""
    return CommitOrder({s: i for i, s in enumerate(order)}, f"git history of {where}{tail}")


def _full_names(shas: Sequence[str], index: Mapping[str, int], names: Sequence[str]) -> dict[str, str]:
    """Each of ``shas`` that the history holds, to its full name there (asv may record an abbreviated one: it
    counts where exactly one full name starts with it)."""
    out = {}
    for s in shas:
        if s in index:
            out[s] = s
            continue
        i = bisect.bisect_left(names, s)
        if i < len(names) and names[i].startswith(s) and not (i + 1 < len(names) and names[i + 1].startswith(s)):
            out[s] = names[i]
    return out


def permutation(shas: Sequence[str], order: CommitOrder) -> list[int] | None:
    """The indexes of ``shas`` (one series' commits, by date) in ``order``; None where they are in it already."""
    keys = [order.sort_key(s) for s in shas]
    if all(a <= b for a, b in zip(keys, keys[1:])):
        return None
    return sorted(range(len(shas)), key=keys.__getitem__)


__all__ = ["BY_DATE", "CommitOrder", "by_date", "from_history", "permutation"]
