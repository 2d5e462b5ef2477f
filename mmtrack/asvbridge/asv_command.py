"""``asv`` itself, its benchmark processes started through :mod:`.round_server`, so that each ``time_`` benchmark
records its samples' CPU time beside asv's wall clock (:data:`.round_server.CPU_TIMES`).

Run as a script (``python asv_command.py run ...``) in place of ``python -m asv``: it imports nothing of mmtrack's,
and everything else is asv's own command line. Discovery runs as asv runs it. asv's memory benchmark type is kept
where a benchmark may be of it (:func:`needs_memory_type`); any other benchmark's process starts without it, as an
A/B round's does (:data:`.round_server.WITH_MEM`): that type imports pympler, and pympler numpy, about 0.1 s of CPU
in each of asv's benchmark processes.
"""

import os
import sys

WITH_MEM = "MMTRACK_ROUND_WITH_MEM"  # round_server.WITH_MEM (this script imports nothing of mmtrack's)


def needs_memory_type(benchmark_id):
    """Whether the benchmark asv names ``benchmark_id`` (``module.Class.name``, a parameter index after ``-``) may be
    of asv's memory type: asv_runner picks the type by the name's last part (``^(Mem[A-Z_].+)|(mem_.+)$``, and a
    plugin's own prefixes), so any last part that holds "mem" keeps it."""
    return "mem" in benchmark_id.rsplit(".", 1)[-1].lower()


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]  # this folder's modules must not shadow what asv imports
    from asv.environment import ExistingEnvironment
    from asv.runner import BENCHMARK_RUN_SCRIPT

    server = os.path.join(here, "round_server.py")
    os.environ[WITH_MEM] = "1"  # asv run keeps every benchmark type, unless the process runs one benchmark (below)
    asv_environment_run = ExistingEnvironment.run

    def run(self, args, **kwargs):
        if args[:1] == [BENCHMARK_RUN_SCRIPT] and args[1:2] in (["run_server"], ["run"]):
            args = [server, *args]
            if args[2] == "run" and len(args) > 4 and not needs_memory_type(args[4]) and "env" in kwargs:
                kwargs["env"] = {k: v for k, v in kwargs["env"].items() if k != WITH_MEM}
        return asv_environment_run(self, args, **kwargs)

    ExistingEnvironment.run = run
    from asv.main import main as asv_main

    sys.argv[0] = "asv"
    asv_main()


if __name__ == "__main__":
    main()
