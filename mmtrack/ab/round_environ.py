"""The environment of one round of one A/B side: the run's variables less the working tree's paths, with a fresh
hash seed and environment size per round (:func:`mmtrack.ab.interleave.run_once`)."""

from __future__ import annotations

from pathlib import Path

from ..asvbridge import asvrun


def side_environ(prepared: asvrun.Prepared, repo: Path) -> dict[str, str]:
    """The run's variables, less ASV_PYTHONPATH entries inside the repository: asv puts them
    before site-packages, where the working tree's package would shadow the commit's build."""
    import os

    env = prepared.environ()
    root = repo.resolve()
    keep = [p for p in env.get("ASV_PYTHONPATH", "").split(os.pathsep)
            if p and not (Path(p).resolve() == root or root in Path(p).resolve().parents)]
    if keep:
        env["ASV_PYTHONPATH"] = os.pathsep.join(keep)
    else:
        env.pop("ASV_PYTHONPATH", None)
    return env


#: The most bytes :func:`randomised_layout` pads the environment with: a page, past any alignment of the stack.
LAYOUT_PAD = 4096


def randomised_layout(env: dict[str, str]) -> dict[str, str]:
    """``env`` with a fresh hash seed and environment size for one round of one side.

    The environment's size moves the stack's start and the hash seed the layout of every dict and set,
    and either can move a timing by several percent (Mytkowicz et al., "Producing wrong data without doing
    anything obviously wrong!", 2009). Drawn anew for every round, they fall on both sides alike rather
    than on one build: their effect becomes round-to-round scatter that the round test sees.
    """
    import secrets

    return {**env, "PYTHONHASHSEED": str(1 + secrets.randbelow(2**32 - 1)),
            "MMTRACK_LAYOUT_PAD": "x" * secrets.randbelow(LAYOUT_PAD + 1)}
