"""One runnable example per micromeasure concept that applies on a CPU.

Each file is an ordinary asv benchmark module: asv runs the ``track_`` methods,
and ``mmtrack bench benchmarks/examples -b NAME`` runs them in-process.
"""
