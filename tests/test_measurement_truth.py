"""Issue 21: nothing of mmtrack runs while a sample is timed, and the report says what it measured."""

from __future__ import annotations

import io
import textwrap
import threading
from pathlib import Path

from rich.console import Console

from mmtrack.commands.bench import BenchRequest, execute
from mmtrack.asvbridge.session import Status

THREADS_SUITE = """
    import threading
    import mmtrack

    SEEN = []

    class Threads:
        @mmtrack.bench()
        def track_threads_seen(self, ctx, chunk_size, chunk_num):
            SEEN.append(threading.active_count())
            sum(range(2000))

        @mmtrack.bench(chunk_size=1)
        def track_starts_a_thread(self, ctx, chunk_size, chunk_num):
            release = threading.Event()
            t = threading.Thread(target=release.wait)
            t.start()
            SEEN.append(-threading.active_count())
            release.set()
            t.join()
"""


def test_a_benchmark_sees_one_thread_while_timed_even_with_the_progress_bar(tmp_path: Path):
    root = tmp_path / "benchmarks"
    root.mkdir()
    (root / "bench_threads.py").write_text(textwrap.dedent(THREADS_SUITE))
    # A terminal console: the progress bar is live, as in an interactive `mmtrack bench`.
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    request = BenchRequest(path=root, quick=True, save=False, compare="none")
    before = threading.active_count()
    run = execute(request, console)
    assert [o.status for o in run.outcomes] == [Status.OK, Status.OK]
    module = next(m for name, m in __import__("sys").modules.items() if name.endswith("bench_threads"))
    plain = [n for n in module.SEEN if n > 0]
    started = [-n for n in module.SEEN if n < 0]
    assert before == 1
    assert plain and set(plain) == {1}, f"threads seen inside timed calls: {sorted(set(plain))}"
    assert set(started) == {2}  # a benchmark's own thread is counted: the probe is real
    assert console.file.getvalue()  # the bar did draw, between samples
