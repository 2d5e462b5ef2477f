"""Running the engine benchmarks of a suite in-process, with asv's class semantics.

For each class: ``setup_cache`` once (its value goes first to setup/teardown, as
in asv), then for each parameter combination a fresh instance, ``setup(*params)``,
the engine run, ``teardown(*params)``. ``NotImplementedError`` from setup skips
the combination, as asv does. Any other exception fails that combination only.
"""

from __future__ import annotations

import enum
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..measure.benchmark_stats import BenchmarkStats
from ..measure.metrics import InvalidMetricError
from ..measure.runner import BenchmarkDefinitionError, MeasurementRejected, Runner, RunOptions
from ..textsafe import bounded
from .discover import EngineBenchmark


class Status(str, enum.Enum):
    OK = "ok"
    FAILED = "failed"
    SKIPPED = "skipped"


@dataclass(slots=True)
class Outcome:
    name: str
    params: dict[str, str]
    status: Status
    stats: BenchmarkStats | None = None
    message: str = ""

    def __post_init__(self) -> None:
        # A benchmark's exception text is the benchmark's to choose: 18 MB of it would be printed and stored.
        self.message = bounded(self.message)

    @property
    def full_name(self) -> str:
        return f"{self.name}({', '.join(self.params.values())})" if self.params else self.name


@dataclass(frozen=True, slots=True)
class Case:
    """One benchmark at one parameter combination."""

    benchmark: EngineBenchmark
    params: tuple[Any, ...]
    param_names: tuple[str, ...]

    @property
    def param_labels(self) -> dict[str, str]:
        return {n: self.benchmark.label(p) for n, p in zip(self.param_names, self.params)}


def expand(benchmarks: Sequence[EngineBenchmark]) -> list[Case]:
    cases = []
    for b in benchmarks:
        names, combos = b.param_grid()
        cases.extend(Case(b, combo, tuple(names)) for combo in combos)
    return cases


def order_cases(cases: list[Case], order: str = "declared", seed: int | None = None) -> list[Case]:
    """``declared`` keeps discovery order; ``random`` shuffles deterministically by seed."""
    if order == "declared":
        return list(cases)
    if order == "random":
        shuffled = list(cases)
        random.Random(seed).shuffle(shuffled)
        return shuffled
    raise ValueError(f"unknown order {order!r}; use 'declared' or 'random'")


Progress = Callable[[Case, str, int, int], None]


def _exit_message(exc: SystemExit) -> str:
    return f"the benchmark called sys.exit({exc.code!r}); a benchmark must return, not exit"


class SuiteSession:
    """Runs cases; caches setup_cache per class for the session, as asv does per run."""

    def __init__(self, options: RunOptions, *, progress: Progress | None = None, cooldown: float = 0.0,
                 runner: type[Runner] = Runner):
        self.options = options
        self.runner = runner  # how a case is sampled: the engine's Runner, or an instrument's (CallgrindRunner)
        self.progress = progress
        self.cooldown = cooldown
        self._cache: dict[type, tuple[bool, Any]] = {}

    def _setup_cache(self, owner: type) -> tuple[bool, Any]:
        if owner not in self._cache:
            fn = getattr(owner, "setup_cache", None)
            self._cache[owner] = (True, fn(owner())) if fn is not None else (False, None)
        return self._cache[owner]

    def setup_cache(self, owner: type) -> Any:
        """The value of ``owner.setup_cache`` for this session (run on first use)."""
        return self._setup_cache(owner)[1]

    def use_cache(self, owner: type, value: Any) -> None:
        """Take ``owner``'s setup_cache value from elsewhere (a worker that ran it)."""
        self._cache[owner] = (True, value)

    def run_case(self, case: Case) -> Outcome:
        b = case.benchmark
        labels = case.param_labels
        owner = b.owner
        instance = owner() if owner is not None else None
        try:
            has_cache, cache = self._setup_cache(owner) if owner is not None else (False, None)
            lead = (cache,) if has_cache else ()
            setup = getattr(instance, "setup", None) if instance is not None else None
            if setup is not None:
                setup(*lead, *case.params)
        except NotImplementedError as exc:
            return Outcome(b.name, labels, Status.SKIPPED, message=str(exc) or "setup raised NotImplementedError")
        except SystemExit as exc:  # in-process (--in-process) too, an exit fails the case, not the run
            return Outcome(b.name, labels, Status.FAILED, message=f"setup failed: {_exit_message(exc)}")
        except Exception as exc:  # noqa: BLE001
            return Outcome(b.name, labels, Status.FAILED, message=f"setup failed: {type(exc).__name__}: {exc}")
        try:
            spec = b.declaration.spec(instance, case.params, b.name, list(case.param_names))
            report = (lambda phase, done, total: self.progress(case, phase, done, total)) if self.progress else None
            stats = self.runner(spec, self.options, progress=report).run()
            return Outcome(b.name, labels, Status.OK, stats=stats)
        except (BenchmarkDefinitionError, InvalidMetricError, MeasurementRejected) as exc:
            return Outcome(b.name, labels, Status.FAILED, message=str(exc))
        except SystemExit as exc:
            return Outcome(b.name, labels, Status.FAILED, message=_exit_message(exc))
        except Exception as exc:  # noqa: BLE001  (a failing bench must not end the run)
            return Outcome(b.name, labels, Status.FAILED, message=f"{type(exc).__name__}: {exc}")
        finally:
            teardown = getattr(instance, "teardown", None) if instance is not None else None
            if teardown is not None:
                try:
                    teardown(*lead, *case.params)
                except (Exception, SystemExit):  # noqa: BLE001  (asv ignores teardown errors too)
                    pass

    def run(self, cases: Sequence[Case], on_done: Callable[[Outcome], None] | None = None) -> list[Outcome]:
        outcomes = []
        for i, case in enumerate(cases):
            if i and self.cooldown > 0:
                time.sleep(self.cooldown)
            outcomes.append(self.run_case(case))
            if on_done is not None:
                on_done(outcomes[-1])
        return outcomes
