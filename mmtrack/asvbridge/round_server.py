"""asv's benchmark script (the path in ``sys.argv[1]``) started without asv_runner's memory benchmark type.

That type's module imports pympler, and pympler imports numpy: a cost in every round's fork server
(docs/design/ab-rounds-in-process.md). A round with no ``mem_`` benchmark has no use for it, so
:mod:`.asv_rounds` starts such a round's server by this script: asv_runner reads pympler as not installed
while it collects its benchmark types (its own "not requested" path), and the suite may import pympler or
numpy as usual afterwards. Run as a script in the benchmarked environment; it imports nothing of mmtrack's.
"""

import os
import runpy
import sys


def main() -> None:
    script = sys.argv[1]
    sys.modules["pympler"] = None  # type: ignore[assignment]  # "import pympler" raises ImportError
    try:
        import asv_runner.benchmarks  # noqa: F401  (collects its types once, without the memory one)
    finally:
        del sys.modules["pympler"]
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as when asv starts its script itself
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
