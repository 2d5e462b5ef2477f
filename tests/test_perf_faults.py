"""Faults: perf_event_paranoid too high, a seccomp denial, exhausted file descriptors.

Each must give a timing-only run with one message saying why and how to fix it,
never a crash or a traceback. File-descriptor exhaustion is real (a subprocess
under a low RLIMIT_NOFILE); a refusal by the kernel's policy cannot be caused
from an unprivileged test, so its errno is injected at the syscall wrapper and
everything above it (fallbacks, message, runner, report, CLI) runs for real.
"""

from __future__ import annotations

import errno
import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mmtrack.measure import backend as backend_mod
from mmtrack.measure import perf, perf_explain
from mmtrack.measure.backend import WallClockBackend
from mmtrack.measure.default_backend import default_backend
from mmtrack.measure.perf import LinuxPerfBackend
from mmtrack.measure.perf_explain import explain, has_cpu_pmu
from mmtrack.measure.runner import BenchSpec, RunOptions, run_benchmark

ROOT = Path(__file__).resolve().parents[1]
FAST = RunOptions(warm_up=0.01, duration=0.05, min_samples=5, max_samples=5, target_chunk=0.002)

pytestmark = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="Linux only")


@pytest.fixture(autouse=True)
def fresh_announcements(monkeypatch):
    monkeypatch.setattr(backend_mod, "_announced", set())


@pytest.fixture
def messages(caplog):
    caplog.set_level(logging.WARNING, logger="mmtrack.measure")
    return lambda: [r.getMessage() for r in caplog.records]


def refuse_with(code: int, only_with_kernel: bool = False):
    real = perf._real_perf_event_open

    def opener(attr, pid, cpu, group_fd, flags):
        if not only_with_kernel or not attr.flags & perf.ATTR_EXCLUDE_KERNEL:
            raise OSError(code, os.strerror(code))
        return real(attr, pid, cpu, group_fd, flags)

    return opener


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "160"}


@pytest.mark.parametrize("code", [errno.EACCES, errno.EPERM])
def test_paranoid_refusal_gives_timing_only_with_the_paranoid_value_and_the_fix(monkeypatch, messages, code):
    monkeypatch.setattr(perf, "perf_event_open", refuse_with(code))
    monkeypatch.setattr(perf_explain, "seccomp_filtered", lambda: False)
    monkeypatch.setattr(perf_explain, "in_container", lambda: False)
    monkeypatch.setattr(perf_explain, "paranoid_level", lambda path=None: 3)
    b = default_backend()
    assert isinstance(b, WallClockBackend)
    stats = run_benchmark(BenchSpec("t", lambda ctx, n, i: None, chunk_size=1), FAST)
    assert stats.measurement_label == "timing + thread CPU time" and stats.samples == 5
    assert [c.name for c in stats.counters] == ["task-clock"]  # CPU time per op without perf (contention)
    (line,) = messages()  # one message, although the backend was asked for twice
    assert "thread CPU time" in line and "kernel.perf_event_paranoid=3" in line
    assert "sysctl -w kernel.perf_event_paranoid=2" in line and "CAP_PERFMON" in line


def test_denial_under_a_permissive_paranoid_points_at_a_security_module(monkeypatch, messages):
    monkeypatch.setattr(perf, "perf_event_open", refuse_with(errno.EACCES))
    monkeypatch.setattr(perf_explain, "seccomp_filtered", lambda: False)
    monkeypatch.setattr(perf_explain, "paranoid_level", lambda path=None: 1)
    assert isinstance(default_backend(), WallClockBackend)
    (line,) = messages()
    assert "kernel.perf_event_paranoid=1" in line and "SELinux" in line and "sysctl" not in line


def test_seccomp_denial_names_the_container_fix(monkeypatch, messages):
    monkeypatch.setattr(perf, "perf_event_open", refuse_with(errno.EPERM))
    monkeypatch.setattr(perf_explain, "seccomp_filtered", lambda: True)
    assert isinstance(default_backend(), WallClockBackend)
    (line,) = messages()
    assert "seccomp" in line and "--cap-add PERFMON" in line and "perf_event_paranoid=" in line


def test_enosys_sandbox_says_perf_events_are_missing(monkeypatch, messages):
    monkeypatch.setattr(perf, "perf_event_open", refuse_with(errno.ENOSYS))
    assert isinstance(default_backend(), WallClockBackend)
    (line,) = messages()
    assert "ENOSYS" in line and "CONFIG_PERF_EVENTS" in line


def test_kernel_counting_refused_falls_back_to_user_space_only(monkeypatch, messages):
    """paranoid=2 for an unprivileged user: kernel counting refused, user space allowed."""
    monkeypatch.setattr(perf, "perf_event_open", refuse_with(errno.EACCES, only_with_kernel=True))
    b = default_backend()
    try:
        assert isinstance(b, LinuxPerfBackend) and b.report.user_only
        assert "context-switches" not in b.report.opened and "task-clock" in b.report.opened
        assert b.describe().endswith("user space only")
        assert any("counting user space only" in m for m in messages())
    finally:
        b.close()


def test_explain_covers_every_errno_with_a_fix():
    for code, words in [
        (errno.EACCES, "CAP_PERFMON"),
        (errno.EMFILE, "ulimit -n"),
        (errno.ENFILE, "ulimit -n"),
        (errno.ENOENT, "bare metal"),
        (errno.ENOSYS, "CONFIG_PERF_EVENTS"),
    ]:
        assert words in explain(code, paranoid=2, container=False, seccomp=False)
    assert "perf_event_open failed (EIO" in explain(errno.EIO, paranoid=2, container=False, seccomp=False)


@pytest.mark.parametrize("preloaded", [True, False], ids=["syscall-EMFILE", "import-EMFILE"])
def test_exhausted_file_descriptors_give_timing_only_with_a_message(preloaded):
    """EMFILE at perf_event_open (the perf module already loaded, as after a first
    benchmark) and EMFILE while loading the perf module itself."""
    preload = "import mmtrack.measure.perf" if preloaded else ""
    script = textwrap.dedent(
        f"""
        import errno, os, resource
        {preload}
        from mmtrack.measure.backend import WallClockBackend
        from mmtrack.measure.default_backend import default_backend
        from mmtrack.measure.runner import BenchSpec, RunOptions, run_benchmark
        from mmtrack.measure.report import render_stats
        from rich.console import Console
        console = Console(width=160)
        opts = RunOptions(warm_up=0.01, duration=0.05, min_samples=5, max_samples=5, target_chunk=0.002)
        spec = BenchSpec("fd_starved", lambda ctx, n, i: None, chunk_size=1)
        # A first benchmark loads what numpy and rich load lazily, as in a real session.
        warm = BenchSpec("warm", lambda ctx, n, i: None, chunk_size=1, backend=WallClockBackend)
        console.print(render_stats(run_benchmark(warm, opts)))
        count = len(os.listdir("/proc/self/fd"))
        resource.setrlimit(resource.RLIMIT_NOFILE, (count + 4, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        hoard = []
        try:
            while True:
                hoard.append(os.open("/dev/null", os.O_RDONLY))
        except OSError as exc:
            assert exc.errno == errno.EMFILE
        backend = default_backend()
        print("backend:", type(backend).__name__)
        stats = run_benchmark(spec, opts)
        console.print(render_stats(stats))
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env(), timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "backend: ThreadCpuBackend" in proc.stdout
    assert "timing + thread CPU time" in proc.stdout and "fd_starved" in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.startswith("mmtrack:")]
    assert len(lines) == 1 and "EMFILE" in lines[0] and "ulimit -n" in lines[0]
    assert "thread CPU time" in lines[0]


def test_cli_with_perf_refused_prints_timing_and_one_line_no_traceback():
    script = textwrap.dedent(
        """
        import errno, sys
        from mmtrack.measure import perf, perf_explain
        def refuse(*args):
            raise OSError(errno.EACCES, "Permission denied")
        perf.perf_event_open = refuse
        perf_explain.seccomp_filtered = lambda: False
        perf_explain.in_container = lambda: False
        # --in-process: the refusal patched above lives in this process, not in fresh workers
        sys.argv = ["mmtrack", "bench", "examples", "-b", "basic|factory", "--quick", "--no-save", "--compare", "none",
                    "--in-process"]
        from mmtrack.cli import main
        main()
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env(), cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout.count("timing + thread CPU time") >= 2 and "page-faults/op" not in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.startswith("mmtrack:")]
    assert len(lines) == 1 and "perf_event_paranoid=" in lines[0]  # once per process, not per benchmark


def test_cli_on_this_machine_shows_software_counters_and_the_hardware_line():
    """The issue's acceptance: ``mmtrack bench examples -k basic``."""
    proc = subprocess.run(
        [sys.executable, "-m", "mmtrack", "bench", "examples", "-b", "basic", "--quick", "--no-save", "--compare", "none"],
        capture_output=True, text=True, env=env(), cwd=ROOT, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert "host PMU (perf event group): coverage=" in proc.stdout
    assert "task-clock/op" in proc.stdout and "page-faults/op" in proc.stdout
    if not has_cpu_pmu():
        assert "timing + perf software counters" in proc.stdout
        assert "hardware counters unavailable" in proc.stderr


@pytest.mark.parametrize("grouping", [True, False])
def test_a_failure_after_opening_closes_every_descriptor(monkeypatch, messages, grouping):
    """PERF_EVENT_IOC_ID refused (a kernel before 3.12 answers ENOTTY) once fds are open."""
    def no_ids(fd):
        raise OSError(errno.ENOTTY, os.strerror(errno.ENOTTY))

    monkeypatch.setattr(perf, "_event_id", no_ids)
    before = len(os.listdir("/proc/self/fd"))
    with pytest.raises(perf.PerfUnavailable):
        LinuxPerfBackend(grouping=grouping)
    assert len(os.listdir("/proc/self/fd")) == before
    assert isinstance(default_backend(), WallClockBackend)
    (line,) = messages()
    assert "thread CPU time" in line and "ENOTTY" in line
