"""Deterministic CPU measurement under Valgrind's callgrind: instructions and simulated cache misses per op.

The worker process runs under ``valgrind --tool=callgrind`` with :func:`valgrind_args`.
:class:`CallgrindBackend` brackets each sample with callgrind's client requests (:mod:`.valgrind_request`):
``CALLGRIND_ZERO_STATS`` before, ``CALLGRIND_DUMP_STATS_AT(label)`` after, the label naming this process's
nonce and the sample's number. It reads the profile's ``summary:`` line only when the profile's trigger is that
label, so a dump the benchmark caused never passes for a sample: interpreter start-up, imports, setup and this
module's own code fall outside the bracket. No compiler, no extension module.

:class:`CallgrindRunner` samples a case deterministically: a chunk size chosen from an instruction
count (never from a clock), one warm-up chunk, then the chunk of ``n`` and of ``2n`` ops. The
difference of the two is ``n`` ops of steady-state work: the markers' own instructions and the
first-touch misses of each chunk cancel. The choice and its figures: docs/design/callgrind.md.
"""

from __future__ import annotations

import gc
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import conditions, valgrind_request
from .backend import MeasurementBackend, MeasurementDomain, Results
from .metrics import Direction, MetricValue, aggregate_metrics
from .runner import BenchmarkDefinitionError, MeasurementRejected, Runner, RunOptions

#: The process model a callgrind run records (measure/conditions.py): never compared with wall-clock runs.
PROCESS_MODEL = conditions.UNDER_CALLGRIND
SECTION = "callgrind"
#: The Debian package that brings valgrind, callgrind_annotate and callgrind.h.
PACKAGE = "valgrind"
HASH_SEED = "0"  # PYTHONHASHSEED of the worker: str and bytes hashes, and so set and dict order, fixed
# The counting method's version, kept in each case's conditions: counts of two versions are never read as a code
# change. Raise it when the worker's work around the regions changes (it moves the heap, and with it the counts
# once): docs/design/callgrind.md, Cost. Version 1 is every run stored before versions were (conditions.py).
# Method 3: client requests instead of the getppid/getpgrp markers (the ctypes call moves the heap).
METHOD = "callgrind 3"
# A chunk is sized so that it runs at least this many instructions: 4 M (method 1) cost a quarter more CPU time
# and read the same counts twice alike; the A/A tolerance is calibrated at this size (docs/design/callgrind.md).
TARGET_INSTRUCTIONS = 1_000_000
# ... and of several ops: with one or two, a heap that starts elsewhere (the first run in a fresh checkout) moved a
# count of 1.5 M instructions per op beyond the tolerance, where four ops held it (docs/design/callgrind.md).
MIN_OPS, MIN_OPS_UNTIL = 4, 4_000_000
MAX_CHUNK = 1 << 20
EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")


@dataclass(frozen=True, slots=True)
class Cache:
    size: int  # bytes
    ways: int
    line: int  # bytes

    @property
    def option(self) -> str:
        return f"{self.size},{self.ways},{self.line}"

    def describe(self) -> str:
        return f"{self.size // 1024} KiB {self.ways}-way {self.line} B lines"


@dataclass(frozen=True, slots=True)
class CacheGeometry:
    """The simulated caches: fixed, so that a count never depends on the host's CPU."""

    i1: Cache = Cache(32 * 1024, 8, 64)
    d1: Cache = Cache(32 * 1024, 8, 64)
    ll: Cache = Cache(8 * 1024 * 1024, 16, 64)

    def options(self) -> list[str]:
        return [f"--I1={self.i1.option}", f"--D1={self.d1.option}", f"--LL={self.ll.option}"]

    def describe(self) -> str:
        return f"I1 {self.i1.describe()}, D1 {self.d1.describe()}, LL {self.ll.describe()}"


GEOMETRY = CacheGeometry()


def valgrind_args(out_file: Path, geometry: CacheGeometry = GEOMETRY, instrument_at_start: bool = True) -> list[str]:
    """Valgrind's command line before the Python command; profiles go to ``out_file.<pid>.<n>``.

    ``instrument_at_start=False``: the interpreter starts and imports at Valgrind's plain pace (about 8 times
    faster than with callgrind's cache simulation) until :func:`start_instrumentation` switches callgrind on."""
    return [
        "valgrind", "--tool=callgrind", "--cache-sim=yes", *geometry.options(),
        *([] if instrument_at_start else ["--instr-atstart=no"]),
        f"--callgrind-out-file={out_file}.%p", f"--vgdb-prefix={vgdb_prefix(out_file)}", "--quiet",
        f"--log-file={valgrind_log(out_file)}",
    ]


def valgrind_log(out_file: Path) -> Path:
    """Where Valgrind writes its own messages (its cache warnings among them), apart from the program's stderr."""
    return Path(f"{out_file}.valgrind.log")


def vgdb_prefix(out_file: Path) -> str:
    """Where Valgrind puts the FIFOs vgdb talks through: beside the profiles, not in /tmp, where a killed
    worker would leave them behind."""
    return f"{out_file}.vgdb"


def start_instrumentation(pid: int, out_file: Path, timeout: float = 60.0) -> str | None:
    """Switch callgrind's instrumentation on in a process started with ``instrument_at_start=False``, through
    ``vgdb`` (Valgrind's own monitor client, what ``callgrind_control -i on`` runs): None, or why it could not."""
    exe = shutil.which("vgdb")
    if exe is None:
        return "vgdb is not on PATH"
    try:
        command = [exe, f"--pid={pid}", f"--vgdb-prefix={vgdb_prefix(out_file)}", "instrumentation", "on"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"vgdb failed: {exc}"
    said = (done.stderr or done.stdout).strip().splitlines()[-1:] or [""]
    return None if done.returncode == 0 else f"vgdb exited with status {done.returncode}: {said[0][-200:]}"


def valgrind_version() -> str | None:
    """``valgrind-3.19.0``, or None when valgrind is not on PATH."""
    exe = shutil.which("valgrind")
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30, check=False)
        return done.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


# -- reading a profile ----------------------------------------------------------------------------
HEADER_KEYS = ("desc", "events", "summary")  # callgrind writes them in the header, before any cost line
TRIGGER = "Trigger:"  # desc: Trigger: Client Request: <label>  (or: Program termination, ...)


def read_header(path: Path) -> tuple[str, dict[str, int]]:
    """What made callgrind write this profile (its ``desc: Trigger:`` line) and its event totals (its
    ``summary:`` line, what callgrind_annotate totals)."""
    found: dict[str, list[str]] = {}
    trigger = ""
    # Line by line up to the summary: the worker reads three profiles per case, simulated like the ops it counts.
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key == "desc" and value.strip().startswith(TRIGGER):
                trigger = value.strip()[len(TRIGGER):].strip()
            elif key in HEADER_KEYS:
                found[key] = value.split()
                if key == "summary":
                    break
    if "events" not in found or "summary" not in found:
        raise ValueError(f"{path}: not a callgrind profile (no events:/summary: header)")
    values = [int(v) for v in found["summary"]]
    # Trailing zero events are left out of the line.
    return trigger, {e: values[i] if i < len(values) else 0 for i, e in enumerate(found["events"])}


def read_summary(path: Path) -> dict[str, int]:
    """The event totals of one callgrind profile."""
    return read_header(path)[1]


@dataclass(frozen=True, slots=True)
class Counts:
    """Event counts of one region, or per op; the cost model lives here."""

    ir: float
    dr: float
    dw: float
    i1_misses: float
    d1_misses: float  # reads and writes
    lli_misses: float
    lld_misses: float

    @classmethod
    def of(cls, events: dict[str, int]) -> Counts:
        e = {k: events.get(k, 0) for k in EVENTS}
        return cls(e["Ir"], e["Dr"], e["Dw"], e["I1mr"], e["D1mr"] + e["D1mw"], e["ILmr"], e["DLmr"] + e["DLmw"])

    def minus(self, other: Counts) -> Counts:
        return Counts(*(a - b for a, b in zip(_fields(self), _fields(other))))

    def per(self, ops: int) -> Counts:
        return Counts(*(a / ops for a in _fields(self)))

    @property
    def est_cycles(self) -> float:
        """iai-callgrind's and pythonspeed's model: an L1 hit costs 1 cycle, an LL hit 5, a RAM access 35."""
        ram = self.lli_misses + self.lld_misses
        ll_hits = self.i1_misses + self.d1_misses - ram
        l1_hits = self.ir + self.dr + self.dw - ll_hits - ram
        return l1_hits + 5 * ll_hits + 35 * ram

    def metrics(self) -> list[MetricValue]:
        lower = Direction.LOWER
        return [
            MetricValue("instructions", self.ir, "instr/op", SECTION, direction=lower),
            MetricValue("est_cycles", self.est_cycles, "cycles/op", SECTION, "estimated cycles", direction=lower),
            MetricValue("l1i_misses", max(self.i1_misses, 0.0), "misses/op", SECTION, "L1 instruction misses",
                        direction=lower),
            MetricValue("l1d_misses", max(self.d1_misses, 0.0), "misses/op", SECTION, "L1 data misses",
                        direction=lower),
            MetricValue("lli_misses", max(self.lli_misses, 0.0), "misses/op", SECTION, "LL instruction misses",
                        direction=lower),
            MetricValue("lld_misses", max(self.lld_misses, 0.0), "misses/op", SECTION, "LL data misses",
                        direction=lower),
        ]


def _fields(c: Counts) -> tuple[float, ...]:
    return (c.ir, c.dr, c.dw, c.i1_misses, c.d1_misses, c.lli_misses, c.lld_misses)


@dataclass(slots=True)
class _Profiles:
    """Valgrind numbers the profiles of a process from 1: the count is per process, not per backend."""

    base: str = ""  # the --callgrind-out-file valgrind was given, without its ".%p"
    written: int = 0
    nonce: str = ""  # this process's, in every label it dumps with: no other dump carries it

    def path(self, number: int) -> Path:
        return Path(f"{self.base}.{os.getpid()}.{number}")

    def next(self) -> Path:
        self.written += 1
        return self.path(self.written)

    def label(self, number: int) -> str:
        if not self.nonce:
            self.nonce = secrets.token_hex(8)
        return f"mmtrack {self.nonce} sample {number}"

    def catch_up(self) -> None:
        """Count the profiles someone else made this process dump (a benchmark issuing its own client
        requests), so that the next sample reads its own."""
        while self.path(self.written + 1).exists():
            self.written += 1


_profiles = _Profiles()


def last_profile() -> Path | None:
    """The newest profile this process wrote (the measured 2n chunk's, after a case), or None."""
    return Path(f"{_profiles.base}.{os.getpid()}.{_profiles.written}") if _profiles.written else None


def default_options() -> RunOptions:
    """The engine's options for a callgrind worker: no pinning (one simulated CPU), budgets unused."""
    return RunOptions(pin_cpu=False, process_model=PROCESS_MODEL)


def profiles_at(base: Path | str) -> None:
    """Tell this process where valgrind writes its profiles (the worker learns it from its job, not from its
    environment or argv: their length moves the stack, and with it the simulated cache sets)."""
    _profiles.base = str(base)


# -- the backend ----------------------------------------------------------------------------------
class NotUnderCallgrind(RuntimeError):
    """The markers wrote no profile: this process does not run under valgrind --tool=callgrind."""


@dataclass(slots=True)
class Region:
    ops: int
    counts: Counts
    profile: Path


class CallgrindBackend(MeasurementBackend):
    """Brackets each sample with callgrind's zero and dump markers and reads the region's profile.

    A sample's duration stays the host time (under Valgrind, tens of times the native time): the
    counts are the measurement, kept per region in :attr:`regions` for :class:`CallgrindRunner`.
    """

    def __init__(self) -> None:
        self.regions: list[Region] = []
        self._bracket = valgrind_request.Bracket.labelled("")
        valgrind_request.request(valgrind_request.RUNNING_ON_VALGRIND)  # the page and the function made before any region

    def begin(self) -> None:
        _profiles.catch_up()
        # Made before the counters are zeroed: no allocation of the bracket's is part of the region.
        self._bracket = valgrind_request.Bracket.labelled(_profiles.label(_profiles.written + 1))
        self._bracket.zero_stats()

    def end(self) -> None:
        self._bracket.dump_stats_at()  # callgrind writes the region's profile here

    def collect(self, host_elapsed, ops, chunk_index, results: Results, metrics) -> None:
        profile = _profiles.next()
        if not _profiles.base or not profile.exists():
            raise NotUnderCallgrind(
                "no callgrind profile was written for the sample: run the worker under valgrind --tool=callgrind "
                "(mmtrack bench --instrument callgrind)")
        trigger, events = read_header(profile)
        if trigger != f"Client Request: {self._bracket.label.value.decode()}":
            _profiles.catch_up()
            raise MeasurementRejected(
                f"callgrind wrote a profile inside the sample that mmtrack did not ask for ({trigger[:80]!r}): the "
                "benchmark issues Valgrind client requests itself; its counts are not kept")
        self.regions.append(Region(ops, Counts.of(events), profile))
        results.duration = host_elapsed
        results.iterations = ops
        results.chunks_executed = 1

    @property
    def measurement_label(self) -> str:
        return "callgrind (instructions, simulated caches)"

    @property
    def emits_cpu_diagnostics(self) -> bool:
        return False

    def describe(self, domain: MeasurementDomain | None = None) -> str | None:
        return f"simulated caches: {GEOMETRY.describe()}; PYTHONHASHSEED={os.environ.get('PYTHONHASHSEED', 'random')}"


# -- deterministic sampling ------------------------------------------------------------------------
REFUSED_DOMAINS = {
    MeasurementDomain.GPU: "instructions do not measure device time",
    MeasurementDomain.IO: "instructions do not measure disk or network time",
}


def chunk_for(instructions_per_op: float, target: int = TARGET_INSTRUCTIONS) -> int:
    """The power of two of ops that runs at least ``target`` instructions, and at least ``MIN_OPS`` ops unless
    ``MIN_OPS_UNTIL`` instructions come first (a small change in the code keeps it)."""
    per_op = max(instructions_per_op, 1.0)
    n = 1
    while n < MAX_CHUNK and (n * per_op < target or (n < MIN_OPS and n * per_op < MIN_OPS_UNTIL)):
        n *= 2
    return n


class CallgrindRunner(Runner):
    """Runs one BenchSpec under :class:`CallgrindBackend`: one warm-up chunk, then the chunks of n and 2n ops."""

    def __init__(self, spec, options=None, **kwargs) -> None:
        refuse(spec)
        spec.backend = CallgrindBackend
        super().__init__(spec, options, **kwargs)

    def run(self):
        backend = self.backend
        assert isinstance(backend, CallgrindBackend)
        was_enabled = gc.isenabled()
        gc.collect()
        gc.disable()  # a collection inside a region would count work the benchmark did not ask for
        try:
            chunk = self.spec.chunk_size or chunk_for(self._probe())
            self._report("warm-up", 0, 1)
            self.spec.fn(self._context(chunk), chunk, 0)
            measured_under = conditions.capture(PROCESS_MODEL, method=METHOD)
            self._report("sample", 0, 2)
            samples = [self._sample(chunk, 0), self._sample(2 * chunk, 1)]
            self._report("sample", 2, 2)
        finally:
            backend.close()
            if was_enabled:
                gc.enable()
        one, two = backend.regions[-2:]
        per_op = two.counts.minus(one.counts).per(two.ops - one.ops)
        if per_op.ir <= 0:
            raise MeasurementRejected(
                f"callgrind counted {per_op.ir:g} instructions per op ({one.ops} ops: {one.counts.ir:g}, "
                f"{two.ops} ops: {two.counts.ir:g}): a count that does not grow with the ops is not kept; "
                "the op must do its work on every call")
        # One sample, the 2n chunk: its host time is Valgrind's pace, not the program's; the counts are the measurement.
        stats = self._stats(chunk, samples[1:], [], [], [backend.describe() or ""])
        stats.metrics = [*stats.metrics, *aggregate_metrics([per_op.metrics()])]
        stats.conditions = measured_under
        stats.calibrated = self.spec.chunk_size is None
        return stats

    def _probe(self) -> float:
        """Instructions of one op, cold: only to size the chunk."""
        self._report("calibrate", 0, 1)
        self._sample(1, 0)
        return self.backend.regions[-1].counts.ir  # type: ignore[attr-defined]


def refuse(spec) -> None:
    """One line why a benchmark cannot be measured in instructions, or nothing."""
    why = REFUSED_DOMAINS.get(spec.domain)
    if why:
        raise BenchmarkDefinitionError(
            f"benchmark {spec.name!r} is a {spec.domain.value.upper()} benchmark: {why}; "
            "measure it with the wall clock (leave out --instrument callgrind)")
    if spec.concurrent is not None:
        raise BenchmarkDefinitionError(
            f"benchmark {spec.name!r} is concurrent: Valgrind runs one thread at a time, so its instruction count "
            "says nothing about contention; measure it with the wall clock")
