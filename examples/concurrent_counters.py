"""concurrent_counters: worker event counters and a scenario metric from the sample lifecycle.

A worker returns ``ConcurrentWorkerResult(operations).with_counter(name, count)``: plain integers
counted in the loop and handed over once. Here a reader counts ``read_misses``, the non-blocking
acquires that failed because the writer held the lock. The report shows each counter under its
role: total, per op and per second.

Shared state is measured by a lifecycle instead: ``after_sample`` runs after every worker joined
and returns scenario metrics (section ``scenario``); those of warm-up samples are discarded. Here
producers and consumers share a queue, and the queue's depth at the end of a sample is reported.
"""

import queue
import threading

import mmtrack
from mmtrack import ConcurrentSamplePhase, ConcurrentWorker, ConcurrentWorkerResult, MetricValue


class Latch:
    def __init__(self):
        self.lock = threading.Lock()
        self.value = 0


def try_reader(ctx, control):
    operations = read_misses = 0
    while not control.should_stop():
        if ctx.lock.acquire(blocking=False):
            ctx.value ^= control.role_thread_index()
            ctx.lock.release()
            operations += 1
        else:
            read_misses += 1
    return ConcurrentWorkerResult(operations).with_counter("read_misses", read_misses)


def writer(ctx, control):
    operations = 0
    while not control.should_stop():
        with ctx.lock:
            ctx.value += 1
        operations += 1
    return ConcurrentWorkerResult(operations)


def producer(ctx, control):
    operations = 0
    while not control.should_stop():
        ctx.put(operations)
        operations += 1
    return ConcurrentWorkerResult(operations)


def consumer(ctx, control):
    operations = empty = 0
    while not control.should_stop():
        try:
            ctx.get_nowait()
            operations += 1
        except queue.Empty:
            empty += 1
    return ConcurrentWorkerResult(operations).with_counter("empty_polls", empty)


class QueueDepth:
    """The sample lifecycle: a fresh queue is made by prepare; its depth is read after the join."""

    def after_sample(self, ctx, info):
        if info.phase is ConcurrentSamplePhase.WARM_UP:
            return []  # discarded anyway: nothing to compute
        return [MetricValue.integer("queue_depth", ctx.qsize(), "items")]


class Counters:
    @mmtrack.bench_concurrent(workers=[ConcurrentWorker("try_reader", 2, try_reader),
                                       ConcurrentWorker("writer", 1, writer)])
    def track_read_misses(self, num_threads):
        return Latch()

    @mmtrack.bench_concurrent(
        workers=[ConcurrentWorker("producer", 1, producer), ConcurrentWorker("consumer", 2, consumer)],
        lifecycle=QueueDepth,
        metadata={"queue": "queue.Queue (unbounded)"},
    )
    def track_queue(self, num_threads):
        return queue.Queue()
