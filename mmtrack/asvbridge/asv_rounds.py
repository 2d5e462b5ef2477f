"""asv's own runner driven from this process, for the many short runs of an A/B job.

``asv run`` per round of a side costs a Python start, asv's import, git calls and a discovery
subprocess importing the suite before the first benchmark, and then a fresh interpreter per
benchmark importing the suite again. An A/B job runs the same suite in the same two environments
a dozen times, so here the suite is discovered once per environment (:func:`discover`) and each
round calls asv's :func:`asv.runner.run_benchmarks` directly (:func:`run_round`), with asv's fork
server: the suite is imported once per round and each benchmark runs in a fork of it. Everything
that times a benchmark (asv_runner, its attributes, ``-a`` overrides, timeouts, setup_cache) is
asv's, and the round's result is asv's result file, read by :func:`.asvrun.collect` as before.

Each round still starts its own fork server in its own environment variables (the hash seed and
environment size that :func:`mmtrack.ab.round_environ.randomised_layout` draws per round). What a round's start
costs besides is cut: asv's probe of the interpreter's version runs once per interpreter (:func:`_environment`),
and a round with no memory benchmark starts its server through :data:`WITHOUT_MEM`.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import io
import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from ..errors import UserError
from .asvrun import Prepared

#: What a round may carry over from the user's asv arguments; any other asv option runs ``asv run`` itself.
HONOURED = {"attribute", "launch_method", "show_stderr", "quick", "bench"}
#: asv's default is a fresh interpreter per benchmark; a round's fork server imports the suite once.
LAUNCH_METHOD = "forkserver"
#: asv's benchmark script without asv_runner's memory benchmark type, whose pympler imports numpy in every round's
#: server (a round with no ``mem_`` benchmark has no use for it).
WITHOUT_MEM = Path(__file__).with_name("round_server.py")
ROUND_PARENT = "MMTRACK_ROUND_PARENT"  # round_server.PARENT
WITH_MEM = "MMTRACK_ROUND_WITH_MEM"  # round_server.WITH_MEM (that script imports nothing of mmtrack's, nor we it)


@dataclass(frozen=True, slots=True)
class RoundArgs:
    """The asv options of the rounds, as ``asv run`` parses them."""

    attribute: dict[str, Any]
    launch_method: str | None
    show_stderr: bool
    quick: bool
    bench: tuple[str, ...]


def round_args(asv_args: Sequence[str]) -> RoundArgs | None:
    """``asv_args`` as ``asv run`` reads them; None when they hold an option a round here does not honour
    (or one asv refuses), so that ``asv run`` itself runs them and says what it makes of them."""
    from asv.commands.run import Run

    parser = argparse.ArgumentParser(add_help=False)
    Run.setup_arguments(parser.add_subparsers())
    try:
        with contextlib.redirect_stderr(io.StringIO()):  # argparse's usage text: asv run prints its own
            given = vars(parser.parse_args(["run", *asv_args]))
            default = vars(parser.parse_args(["run"]))
    except SystemExit:
        return None
    if any(given[k] != default[k] for k in given if k not in HONOURED):
        return None
    return RoundArgs(dict(given["attribute"] or {}), given["launch_method"], bool(given["show_stderr"]),
                     bool(given["quick"]), tuple(given["bench"] or ()))


@functools.cache
def _existing_environment() -> type:
    from asv.environment import ExistingEnvironment

    class RoundEnvironment(ExistingEnvironment):
        """asv's environment of an existing interpreter, whose processes get exactly ``environ``: what they would
        inherit from an ``asv run`` started with it (asv passes its own variables on unchanged)."""

        def __init__(self, conf: Any, python: str, environ: Mapping[str, str]) -> None:
            super().__init__(conf, python, {}, {})
            self.environ = dict(environ)
            self.without_mem = False  # benchmark processes start through WITHOUT_MEM
            self.servers: list[Any] = []  # the fork servers started (asv's Popen), for :func:`_servers_ended`
            self.server_tmp: str | None = None  # the servers' TMPDIR, removed with them (:func:`_servers_ended`)

        def run(self, args: Any, **kwargs: Any) -> Any:
            from asv.runner import BENCHMARK_RUN_SCRIPT

            kwargs["env"] = dict(self.environ)
            if args[:1] == [BENCHMARK_RUN_SCRIPT] and args[1:2] in (["run_server"], ["run"], ["discover"]):
                kwargs["env"][ROUND_PARENT] = str(os.getpid())
                # through our script: it dies with mmtrack, and a discovery ends once its list is written
                if not self.without_mem or args[1] == "discover":
                    kwargs["env"][WITH_MEM] = "1"
                args = [str(WITHOUT_MEM), *args]
            if args[2:3] == ["run_server"] and self.server_tmp:
                kwargs["env"]["TMPDIR"] = self.server_tmp
            started = super().run(args, **kwargs)
            if kwargs.get("return_popen"):
                self.servers.append(started)
            return started

    return RoundEnvironment


_MADE: dict[tuple, Any] = {}  # (interpreter, the settings asv's environment reads) -> it (:func:`_environment`)


def _environment(conf: Any, python: str, environ: Mapping[str, str], without_mem: bool = False) -> Any:
    """asv's environment of ``python`` with ``environ`` for one round or discovery: made once per interpreter and suite
    settings, since asv starts the interpreter to read its version each time it makes one."""
    # Keyed by what asv's Environment copies from the configuration too: another suite's settings are another one.
    key = (python, conf.env_dir, conf.repo_subdir, conf.install_timeout, conf.default_benchmark_timeout, conf.project)
    env = _MADE.get(key)
    if env is None:
        env = _MADE[key] = _existing_environment()(conf, python, environ)
    env.environ, env.without_mem = dict(environ), without_mem
    return env


#: A discovery that writes nothing for this long is ended (asv's own no-output timeout), with one line.
DISCOVER_TIMEOUT_S = 300


@contextlib.contextmanager
def _interrupts() -> Iterator[None]:
    """Ctrl-C inside asv's runner as Ctrl-C: asv turns it into its ``UserError("Interrupted.")`` once its server is
    closed, which would end the command in a traceback instead of mmtrack's one line and exit 130."""
    from asv import util

    try:
        yield
    except util.UserError as exc:
        if str(exc).strip() == "Interrupted.":
            raise KeyboardInterrupt from None
        raise


@contextlib.contextmanager
def _temporary_folders_of_asv() -> Iterator[None]:
    """asv's runner makes its fork server's socket folder and its cwd folders with ``mkdtemp`` and removes them only
    on the paths it expects: an interrupt while the server starts left them behind, one per round. The folders this
    process makes during the round are noted and removed whatever ends it (made where they were: a socket's path must
    stay short)."""
    import shutil

    made: list[str] = []
    mkdtemp = tempfile.mkdtemp

    def noting(*args: Any, **kwargs: Any) -> Any:
        path = mkdtemp(*args, **kwargs)
        made.append(path)
        return path

    tempfile.mkdtemp = noting  # type: ignore[assignment]
    try:
        yield
    finally:
        tempfile.mkdtemp = mkdtemp  # type: ignore[assignment]
        for path in made:
            shutil.rmtree(path, ignore_errors=True)


#: How long an ended fork server may take to be reaped: SIGKILL of its group is immediate, bar a stopped machine.
SERVER_REAP_TIMEOUT_S = 10


@contextlib.contextmanager
def _servers_ended(env: Any) -> Iterator[None]:
    """Every fork server ``env`` starts in the block is ended when the block ends, however it ends.

    asv hands its server to its runner only once the server's socket is there: Ctrl-C or SIGTERM while the server
    starts (seconds on a loaded machine) left it running with no one to close it, and asv's thread reading its output
    (not a daemon) kept this process waiting at exit for a server that waits for this process: a hang and a leftover
    server. A server asv closed is reaped already and left alone.

    The servers' temporary files (asv's server captures each benchmark's output in one) go to a folder of the round,
    removed here: asv gives a server 0.1 s between Ctrl-C and SIGKILL, too short on a loaded machine to remove its own."""
    import shutil
    import signal

    env.servers = []
    env.server_tmp = tempfile.mkdtemp(prefix="mmtrack-round-")
    try:
        yield
    finally:
        for server in env.servers:
            if server.poll() is None:  # not reaped: its pid is still its process group's (asv's setpgid)
                with contextlib.suppress(OSError):
                    os.killpg(server.pid, signal.SIGKILL)  # the server and the benchmark it forked
                with contextlib.suppress(Exception):
                    server.wait(timeout=SERVER_REAP_TIMEOUT_S)  # its end closes the pipe: asv's reader ends
        shutil.rmtree(env.server_tmp, ignore_errors=True)
        env.servers, env.server_tmp = [], None


@contextlib.contextmanager
def _asv_quiet() -> Iterator[None]:
    """asv logs to the root logger; its lines are not this command's output (failures reach the results)."""
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        yield
    finally:
        logging.disable(before)


def discover(prepared: Prepared, python: str, environ: Mapping[str, str], keep: Path | None = None
             ) -> list[dict[str, Any]]:
    """The suite's benchmarks as asv's discovery finds them in ``python``'s environment (asv's own script).

    ``keep``: a folder (the commit's cached build) where the discovery is kept per suite content, interpreter and asv
    version, so that a later run of the same build and the same suite files reads it instead of importing the suite."""
    from asv.config import Config

    conf = Config.load(str(prepared.derived_config))
    suite = Path(conf.benchmark_dir).resolve()
    kept = keep / f"suite-{_suite_key(suite, python)}.json" if keep is not None else None
    if kept is not None and kept.is_file():
        with contextlib.suppress(OSError, ValueError):
            found = json.loads(kept.read_text())
            if isinstance(found, list):
                return found
    found = _discover(conf, python, environ, str(suite))
    if kept is not None:
        with contextlib.suppress(OSError):
            tmp = kept.with_suffix(".tmp")
            tmp.write_text(json.dumps(found))
            tmp.replace(kept)  # atomic: a killed run leaves no half-written list
    return found


def _suite_key(suite: Path, python: str) -> str:
    """What a discovery depends on: every file of the suite (path and bytes), the interpreter and asv's version."""
    import hashlib

    import asv

    digest = hashlib.sha256(f"{python}\0{suite}\0{asv.__version__}".encode())
    for path in sorted(p for p in suite.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        digest.update(f"\0{path.relative_to(suite)}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _discover(conf: Any, python: str, environ: Mapping[str, str], suite: str) -> list[dict[str, Any]]:
    from asv import util
    from asv.runner import BENCHMARK_RUN_SCRIPT

    env = _environment(conf, python, environ)
    with tempfile.TemporaryDirectory(prefix="mmtrack-discover-") as tmp:
        out = Path(tmp) / "benchmarks.json"
        try:
            with _asv_quiet(), _interrupts():
                env.run([BENCHMARK_RUN_SCRIPT, "discover", suite, str(out)], cwd=tmp, dots=False,
                        timeout=DISCOVER_TIMEOUT_S)
            found = json.loads(out.read_text())
        except (util.ProcessError, OSError, ValueError) as exc:
            lines = [ln for ln in str(getattr(exc, "stdout", "") or exc).strip().splitlines() if ln.strip()]
            raise UserError(f"asv's discovery of {suite} failed in {python}: "
                            f"{' | '.join(lines[-3:]) or type(exc).__name__}") from None
    if not isinstance(found, list):
        raise UserError(f"asv's discovery of {suite} in {python} wrote no benchmark list")
    return found


def run_round(prepared: Prepared, suite: Sequence[dict[str, Any]], python: str, environ: Mapping[str, str],
              bench: Sequence[str], args: RoundArgs) -> Path | None:
    """One round of ``suite``'s benchmarks selected by ``bench`` (asv's -b, any of them), run by asv's runner in
    ``python``'s environment with ``environ``; the asv result file it wrote, None when nothing was selected."""
    from asv.benchmarks import Benchmarks
    from asv.config import Config
    from asv.machine import Machine
    from asv.results import Results, get_filename
    from asv.runner import run_benchmarks

    conf = Config.load(str(prepared.derived_config))
    benchmarks = Benchmarks(conf, [dict(b) for b in suite], regex=[*bench, *args.bench])
    if not benchmarks:
        return None
    benchmarks.save()  # collect reads each benchmark's unit and parameter names from it
    env = _environment(conf, python, environ, without_mem=not any(b.get("type") == "memory"
                                                                  for b in benchmarks.values()))
    machine = Machine.load(machine_name=prepared.machine)
    machine.save(conf.results_dir)
    date = prepared.commit.date
    results = Results({**machine.__dict__, "python": env.python}, {}, prepared.commit.sha,
                      int(date.timestamp() * 1000) if date else None, env.python, env.name, env.env_vars)
    with _asv_quiet(), _interrupts(), _temporary_folders_of_asv(), _servers_ended(env):
        run_benchmarks(benchmarks, env, results=results, show_stderr=args.show_stderr, quick=args.quick,
                       extra_params=args.attribute, record_samples=True,
                       launch_method=args.launch_method or conf.launch_method or LAUNCH_METHOD)
    results.save(conf.results_dir)
    return Path(conf.results_dir) / get_filename(machine.machine, prepared.commit.sha, env.name)
