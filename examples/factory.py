"""factory: a fresh context for every sample.

Sorting in place mutates its input, so each sample needs new data. ``context=``
is called with the chunk size before every sample (outside the timed window) and
its value arrives as ``ctx``; ``factory=`` is the same with no argument.
"""

import random

import mmtrack


def shuffled_lists(chunk_size):
    rng = random.Random(chunk_size)
    return [rng.sample(range(256), 256) for _ in range(chunk_size)]


class Factory:
    @mmtrack.bench(context=shuffled_lists, throughput=mmtrack.Throughput.per_operation(256, "items"))
    def track_sort_fresh_lists(self, ctx, chunk_size, chunk_num):
        for items in ctx:
            items.sort()

    @mmtrack.bench(factory=dict, chunk_size=2_000_000)
    def track_fill_fresh_dict(self, ctx, chunk_size, chunk_num):
        for i in range(chunk_size):
            ctx[i] = i
