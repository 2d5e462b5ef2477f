"""Contention, measured per role: what concurrent benchmarks are for.

Run with ``python3 -m mmtrack bench benchmarks -b bench_concurrent``.

Three readers take a ``threading.Lock`` to read a value; one writer takes the same lock to bump it.
Each 50 ms sample starts with the writer holding the lock for ``hold`` seconds (sleeping, so the GIL
is free and only the lock stops the readers); then everyone competes. The longer the writer holds
the lock, the less each reader gets done: compare the readers' ``throughput`` (role total) and
``throughput_per_thread`` across the ``hold`` cases of one run. Wall clock only, so the figures do
not carry the perf backend's cost.
"""

import threading
import time

import mmtrack
from mmtrack import ConcurrentWorker


class Shared:
    def __init__(self, hold):
        self.lock = threading.Lock()
        self.hold = hold
        self.value = 0
        if hold:
            self.lock.acquire()  # on the writer's behalf: a Lock may be released by another thread


def reader(ctx, control):
    ops = 0
    lock = ctx.lock
    while not control.should_stop():
        with lock:
            ops += ctx.value >= 0
    return ops


def writer(ctx, control):
    if ctx.hold:
        time.sleep(ctx.hold)
        ctx.lock.release()
    ops = 1
    while not control.should_stop():
        with ctx.lock:
            ctx.value += 1
        ops += 1
    return ops


class LockContention:
    params = [0.0, 0.005, 0.025]
    param_names = ["hold"]

    def setup(self, hold):
        self.hold = hold

    @mmtrack.bench_concurrent(workers=[ConcurrentWorker("reader", 3, reader), ConcurrentWorker("writer", 1, writer)],
                              backend=mmtrack.WallClockBackend)
    def track_readers_vs_holding_writer(self, num_threads):
        return Shared(self.hold)
