"""Drift since a baseline (``--baseline REF``) for ``detect``, ``update`` and ``publish``: the commit a ref names,
and every selected series' drift since it (:mod:`mmtrack.analysis.drift`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from .alerts import dismissed_series
from .detect import DetectPolicy
from .drift import DriftReport, series_drift, with_dismissed
from ..errors import EXIT_USAGE, UserError, is_relative_effect
from ..vcs import is_repository, project_root, resolve_rev

HEX = frozenset("0123456789abcdef")


def check_drift_gate(fail_on: Sequence[str], baseline: str | None) -> None:
    """``--fail-on drift`` without ``--baseline``: one line, exit 2, before any work."""
    if "drift" in fail_on and not baseline:
        raise UserError("--fail-on drift needs a baseline: add --baseline REF (a release tag, a branch or a commit)",
                        EXIT_USAGE)


def resolve_baseline(store: Any, ref: str, repo: Path | None) -> str:
    """The full sha of the stored commit ``ref`` names: through git where a repository is at hand (tags, branches,
    prefixes), else a sha prefix of a stored commit, else the newest stored commit on the branch ``ref``."""
    from ..store import reads as q

    if not ref.strip() or ref.startswith("-"):  # git would read "-..." as one of its options
        raise UserError(f"--baseline {ref!r}: not a ref; give a tag, a branch or a commit sha", EXIT_USAGE)
    if repo is None and is_repository(Path.cwd()):
        repo = project_root()
    sha = resolve_rev(repo, ref) if repo is not None else None
    if sha is None and ref and set(ref.lower()) <= HEX:
        try:
            return q.resolve_commit(store, ref).sha
        except UserError as exc:
            raise UserError(f"--baseline {ref}: {exc}", EXIT_USAGE) from None
    if sha is None:
        sha = _branch_tip(store, ref)
    if sha is None:
        where = f"in git ({repo}) or " if repo is not None else ""
        raise UserError(f"--baseline {ref}: no commit {where}in the store is named so; give a tag, a branch or a "
                        "commit sha the store holds (--repo PATH resolves tags through git)", EXIT_USAGE)
    try:
        return q.resolve_commit(store, sha).sha
    except UserError:
        raise UserError(f"--baseline {ref} names commit {sha[:12]}, which the store holds no run of; give a "
                        "measured commit", EXIT_USAGE) from None


def drift_policy(min_effect: float | None) -> DetectPolicy:
    """The detector's policy whose ``min_effect`` is the drift's threshold (``--min-effect``; default detect's)."""
    if min_effect is None:
        return DetectPolicy()
    if not is_relative_effect(min_effect):
        raise UserError(f"--min-effect {min_effect:g} is out of range; give a relative change such as 0.05 (5%), "
                        "from 0 up to 10", EXIT_USAGE)
    return DetectPolicy(min_effect=min_effect)


def _branch_tip(store: Any, name: str) -> str | None:
    """The newest stored commit whose recorded branches hold ``name`` (asv records the branch each result was on)."""
    from ..store import reads as q

    on = [c for c in q.commits(store) if name in c.branches]
    return on[-1].sha if on else None


def drift_report(ref: str, sha: str, columns: Sequence[Any], policy: DetectPolicy, alerts: Sequence[Any] = ()
                 ) -> DriftReport:
    """Each series' drift since ``sha`` (``columns``: their usable columns in commit order), ``policy.min_effect``
    the threshold; a series with a change point since it in an alert marked invalid or won't fix is flagged
    dismissed. One line, exit 2, when no series measured the baseline."""
    drifts = [series_drift(c.key, c.shas, c.values, c.versions, c.direction, sha, policy.min_effect, policy)
              for c in columns]
    if drifts and all(d.note == "baseline not measured in this series" for d in drifts):
        raise UserError(f"--baseline {ref} ({sha[:12]}) is measured in none of the {len(drifts)} series selected; "
                        "give a commit they were measured at", EXIT_USAGE)
    after = {c.key: c.shas[c.shas.index(sha) + 1:] for c in columns if sha in c.shas}
    return DriftReport(ref, sha, policy.min_effect, tuple(with_dismissed(drifts, after, dismissed_series(alerts))))
