"""The worker that runs under ``valgrind --tool=callgrind``: many cases, one Valgrind start-up.

Started by :mod:`.callgrind_pool` as ``valgrind ... python -m mmtrack.asvbridge.callgrind_worker``. It reads
pickled :class:`CallgrindJob` records from stdin and writes ``("ready",)`` once, then ``("loaded",)`` for a
job that only imports its suite and one ``("outcome", Outcome, profile path)`` per other job to what was stdout; the benchmark's own prints go to stderr.
Each case is sampled by :class:`~mmtrack.measure.callgrind.CallgrindRunner`.
"""

from __future__ import annotations

import os
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ..measure import callgrind
from .session import Outcome, Status, SuiteSession
from .worker import CaseJob, _find_case


@dataclass(frozen=True, slots=True)
class CallgrindJob:
    case: CaseJob
    profiles: Path  # valgrind's --callgrind-out-file, without its ".%p"
    as_asv: bool = False  # import the suite as asv does (a built commit's package, not the checkout's)
    load_only: bool = False  # import the case's suite and answer ("loaded",): done before instrumentation is on


def _send(channel: BinaryIO, message: tuple) -> None:
    pickle.dump(message, channel, protocol=pickle.HIGHEST_PROTOCOL)
    channel.flush()


def _run(session: SuiteSession, job: CallgrindJob) -> tuple[Outcome, str | None]:
    callgrind.profiles_at(job.profiles)
    try:
        case = _find_case(job.case, job.as_asv)
    except Exception as exc:  # noqa: BLE001  (one case's import failure fails that case)
        message = f"could not load the benchmark in its worker: {type(exc).__name__}: {exc}"
        return Outcome(job.case.benchmark, {}, Status.FAILED, message=message), None
    session.options = job.case.options
    outcome = session.run_case(case)
    profile = callgrind.last_profile()  # the parent keeps it or not: no per-commit path reaches this process
    return outcome, str(profile) if outcome.status is Status.OK and profile is not None else None


def _load(job: CallgrindJob) -> None:
    """Import the case's suite and package at Valgrind's plain pace; a failure is said by the case's own job."""
    try:
        _find_case(job.case, job.as_asv)
    except Exception:  # noqa: BLE001  (the real job imports again and reports why)
        pass


def main() -> None:
    channel = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # the benchmark's prints must not mix with the pickles
    jobs = sys.stdin.buffer
    session = SuiteSession(callgrind.default_options(), runner=callgrind.CallgrindRunner)
    _send(channel, ("ready",))
    while True:
        try:
            job = pickle.load(jobs)
        except EOFError:
            return
        if job.load_only:
            _load(job)
            _send(channel, ("loaded",))
            continue
        outcome, profile = _run(session, job)
        _send(channel, ("outcome", outcome, profile))


if __name__ == "__main__":
    main()
