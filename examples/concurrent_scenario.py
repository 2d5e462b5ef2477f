"""concurrent_scenario: 3 optimistic readers against 1 writer on a lock-protected value.

``@mmtrack.bench_concurrent`` declares ``prepare(self, num_threads)``: it builds the shared
context once per sample. Each ``ConcurrentWorker`` role runs its function on ``threads`` threads;
all threads are released together and loop until ``control.should_stop()`` (50 ms samples).
The report shows each role's throughput and latency first, then the workers combined.

The readers are optimistic (a seqlock): read the version, the value, the version again, and
retry when a write happened in between. The writer takes the lock and bumps the version around
its write, so a reader never needs the lock.
"""

import threading

import mmtrack
from mmtrack import ConcurrentWorker, ConcurrentWorkerResult


class VersionedValue:
    def __init__(self):
        self.lock = threading.Lock()
        self.version = 0  # odd while a write is in progress
        self.value = 0


def optimistic_reader(ctx, control):
    operations = 0
    while not control.should_stop():
        before = ctx.version
        value = ctx.value
        if before % 2 == 0 and ctx.version == before:  # a consistent read
            operations += 1
        del value
    return ConcurrentWorkerResult(operations)


def exclusive_writer(ctx, control):
    operations = 0
    while not control.should_stop():
        with ctx.lock:
            ctx.version += 1
            ctx.value += control.thread_index() + 1
            ctx.version += 1
        operations += 1
    return ConcurrentWorkerResult(operations)


WORKERS = [
    ConcurrentWorker("optimistic_reader", 3, optimistic_reader),
    ConcurrentWorker("exclusive_writer", 1, exclusive_writer),
]


class Contention:
    @mmtrack.bench_concurrent(workers=WORKERS, sample_duration=0.05)
    def track_readers_vs_writer(self, num_threads):
        return VersionedValue()
