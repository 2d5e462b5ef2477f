"""``asv`` itself, its benchmark processes started through :mod:`.round_server`, so that each ``time_`` benchmark
records its samples' CPU time beside asv's wall clock (:data:`.round_server.CPU_TIMES`).

Run as a script (``python asv_command.py run ...``) in place of ``python -m asv``: it imports nothing of mmtrack's,
and everything else is asv's own command line. Discovery runs as asv runs it; asv's memory benchmark type is kept.
"""

import os
import sys


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]  # this folder's modules must not shadow what asv imports
    from asv.environment import ExistingEnvironment
    from asv.runner import BENCHMARK_RUN_SCRIPT

    server = os.path.join(here, "round_server.py")
    os.environ["MMTRACK_ROUND_WITH_MEM"] = "1"  # round_server.WITH_MEM: asv run keeps every benchmark type
    asv_environment_run = ExistingEnvironment.run

    def run(self, args, **kwargs):
        if args[:1] == [BENCHMARK_RUN_SCRIPT] and args[1:2] in (["run_server"], ["run"]):
            args = [server, *args]
        return asv_environment_run(self, args, **kwargs)

    ExistingEnvironment.run = run
    from asv.main import main as asv_main

    sys.argv[0] = "asv"
    asv_main()


if __name__ == "__main__":
    main()
