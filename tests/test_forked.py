"""map_split: half of a map in a forked child, the same results in the same order as a plain map."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from mmtrack import forked
from mmtrack.analysis.detect import DetectPolicy, find_steps

pytestmark = pytest.mark.skipif(not forked.can_fork(), reason="needs Linux with 2 CPUs or more (fork)")


def _series(seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    x = 1.0 + 0.02 * rng.standard_normal(120)
    x[70:] *= 1.3  # a step: every series has a change point to find
    return list(x)


def test_split_map_equals_the_plain_map_and_reports_progress() -> None:
    items = [_series(s) for s in range(40)]
    parent = os.getpid()
    seen: list[tuple[int, int]] = []
    got = forked.map_split(lambda v: (find_steps(v, DetectPolicy()), os.getpid() != parent), items, min_items=10,
                           progress=lambda done, total: seen.append((done, total)))
    assert [steps for steps, _ in got] == [find_steps(v, DetectPolicy()) for v in items]
    assert [in_child for _, in_child in got] == [False] * 20 + [True] * 20  # the second half ran in the child
    assert all(s for s, _ in got) and seen[-1] == (40, 40) and seen == sorted(seen)


def test_below_min_items_everything_runs_here() -> None:
    parent = os.getpid()
    assert forked.map_split(lambda x: (x * 2, os.getpid()), [1, 2, 3], min_items=4) == [(2, parent), (4, parent), (6, parent)]


def test_a_child_that_fails_leaves_its_half_to_the_parent() -> None:
    parent = os.getpid()

    def only_here(x: int) -> int:
        if os.getpid() != parent:
            raise RuntimeError("the child breaks")
        return x + 1

    assert forked.map_split(only_here, list(range(30)), min_items=2) == list(range(1, 31))


def test_a_child_killed_mid_way_leaves_its_half_to_the_parent() -> None:
    parent = os.getpid()

    def killed_in_child(x: int) -> int:
        if os.getpid() != parent:
            os.kill(os.getpid(), 9)
        return -x

    assert forked.map_split(killed_in_child, list(range(10)), min_items=2) == [-x for x in range(10)]


def test_child_start_runs_in_the_child_only() -> None:
    parent = os.getpid()
    started: list[int] = []
    got = forked.map_split(lambda x: (x, os.getpid() != parent, len(started)), list(range(6)), min_items=2,
                           child_start=lambda: started.append(os.getpid()))
    assert got == [(0, False, 0), (1, False, 0), (2, False, 0), (3, True, 1), (4, True, 1), (5, True, 1)]
    assert started == []  # the parent never ran it


def test_an_error_here_ends_the_child_at_once(tmp_path) -> None:
    parent = os.getpid()
    marker = tmp_path / "child-finished"

    def slow_in_child(x: int) -> int:
        if os.getpid() != parent:
            time.sleep(60)  # would outlive the test unless the parent ends it
            marker.write_text("done")
            return x
        raise KeyboardInterrupt  # Ctrl-C while the parent computes its half

    t = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        forked.map_split(slow_in_child, [1, 2], min_items=2)
    assert time.monotonic() - t < 30 and not marker.exists()  # not waited for: killed (and reaped)
