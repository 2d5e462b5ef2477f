"""The ``mmtrack`` command line: one small function per verb, glue only."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from . import __distribution__, __version__
from . import cli_options as o
from .cli_errors import error_line, exit_without_teardown, os_error_line
from .cli_options import (
    ASV_CONFIG_READ_HELP,
    ASV_MACHINE_HELP,
    bench_option,
    fail_on_option,
    format_option,
    min_effect_option,
)
from .errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UserError
from .tables import unwrapped
from .terminal import SafeConsole, echo

# Piped output gets a wide console so tables are not squeezed to 80 columns, unless COLUMNS says otherwise.
# Every command prints through these two or echo (terminal.py): no string from outside reaches the terminal raw.
console = SafeConsole() if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else SafeConsole(width=140)
err_console = SafeConsole(stderr=True, soft_wrap=True)



db_option = o.DB()  # --db URL: the decorated command receives ``db`` already resolved to a URL


def _emit(out) -> None:  # noqa: ANN001 - a rendered text (markdown, JSON) or a rich renderable (table)
    if isinstance(out, str):
        echo(out)
    else:
        console.print(out)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    version=__version__,
    message=f"%(prog)s %(version)s (distribution {__distribution__}, imports as mmtrack from {Path(__file__).parent})",
)
def cli() -> None:
    """Per-commit performance tracking, compatible with asv."""


@cli.command()
@click.argument("path", type=click.Path(path_type=Path), default=Path("benchmarks"))
@bench_option("Run only benchmarks whose name matches this regex.", old=[("-k", "--filter")])
@o.QUICK("A short budget: smoke runs, not numbers to trust.")
@o.WARM_UP()
@o.DURATION()
@o.MIN_SAMPLES()
@o.MAX_SAMPLES()
@o.ORDER()
@o.SEED()
@o.COOLDOWN()
@o.NO_PIN()
@o.NO_SAVE("Do not save this run in the store.")
@o.TIMEOUT()
@o.IN_PROCESS()
@o.PROCESSES()
@o.INSTRUMENT()
@o.COMPARE_WITH()
@fail_on_option("bench", "Exit 1 when the end-of-run comparison has a row with this verdict")
@db_option
def bench(path, bench, quick, warm_up, duration, min_samples, max_samples, order, seed, cooldown, no_pin,
          no_save, timeout, in_process, processes, instrument, compare, fail_on, db) -> None:
    """Run the engine benchmarks under PATH on the working tree, print the report, save the
    run and compare it with the latest compatible one.

    Set MMTRACK_OUTPUT=path.json to also write a versioned JSON report.
    """
    if in_process and processes not in (None, 1):
        raise UserError(f"--processes {processes} needs worker processes; drop --in-process")
    if in_process and instrument == "callgrind":
        raise UserError("--instrument callgrind runs its cases in a worker under Valgrind; drop --in-process")
    if not in_process and instrument == "wall":
        from .asvbridge.worker import start_fork_server

        start_fork_server(path)  # it imports the engine while this process imports the rest and discovers
    from . import cli_events
    from .cli_progress import CaseBar
    from .commands.bench import BenchRequest, run_bench

    request = BenchRequest(
        path=path,
        pattern=bench,
        quick=quick,
        overrides={
            "warm_up": warm_up,
            "duration": duration,
            "min_samples": min_samples,
            "max_samples": max_samples,
            "pin_cpu": False if no_pin else None,
        },
        order=order,
        seed=seed,
        cooldown=cooldown,
        save=not no_save,
        compare=compare,
        db=db,
        output=Path(os.environ["MMTRACK_OUTPUT"]) if os.environ.get("MMTRACK_OUTPUT") else None,
        timeout=timeout,
        in_process=in_process,
        fail_on=tuple(fail_on),
        processes=processes,
        instrument=instrument,
    )
    result = run_bench(request, report=cli_events.bench_events(console), progress=CaseBar(console))
    sys.exit(result.exit_code)


def main() -> None:
    from .errors import EXIT_TERMINATED, Terminated, raise_on_sigterm

    raise_on_sigterm()
    try:
        cli.main(standalone_mode=False)
    except Terminated:
        err_console.print("terminated (SIGTERM); what finished before it is kept")
        sys.exit(EXIT_TERMINATED)
    except UserError as exc:
        error_line(str(exc))
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(EXIT_INTERRUPTED)
    except click.exceptions.NoArgsIsHelpError as exc:  # a bare group (`mmtrack`, `mmtrack db`): its help, as git does
        click.echo(exc.ctx.get_help())
        sys.exit(EXIT_OK)
    except click.UsageError as exc:  # click's usage lines, as one line of ours
        where = exc.ctx.command_path if exc.ctx is not None else "mmtrack"
        message = " ".join(exc.format_message().split())  # click lays a choice list out over lines: one line here
        error_line(f"{message.rstrip('.')}; see {where} --help")
        sys.exit(EXIT_USAGE)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except OSError as exc:  # the last resort for what the commands' own checks could not foresee (a full disk, /proc)
        error_line(os_error_line(exc))
        sys.exit(EXIT_USAGE)
    except Exception as exc:  # a store fault (damaged file, full disk, lost server) is one line; anything else a bug
        from .store.db import store_fault_line

        line = store_fault_line(exc)
        if line is None:
            raise
        error_line(line)
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_OK)


# -- the history store ------------------------------------------------------------------------------


@cli.group()
def db() -> None:
    """The history store's schema (Alembic revisions)."""


@db.command("upgrade")
@db_option
def db_upgrade(db: str) -> None:
    """Create the store or upgrade it to the newest schema."""
    from .commands.db import db_upgrade as run

    r = run(db)
    if r.before == r.current:
        console.print(f"{r.url}: already at revision {r.current} (head)", highlight=False, soft_wrap=unwrapped(console))
    else:
        console.print(f"{r.url}: upgraded {r.before or '<empty>'} -> {r.current} (head)", highlight=False,
                      soft_wrap=unwrapped(console))


@db.command("current")
@db_option
def db_current(db: str) -> None:
    """Print the store's schema revision."""
    from .commands.db import db_current as run

    r = run(db)
    state = "head" if r.up_to_date else f"behind head {r.head}; run `mmtrack db upgrade`"
    # A missing file is said so: "<empty>" read as a store there, and a mistyped --db then got upgraded into one.
    line = (f"{r.url}: no store there (check --db / MMTRACK_DB; `mmtrack db upgrade` creates one at {r.head})"
            if not r.exists else f"{r.url}: revision {r.current or '<empty>'} ({state})")
    console.print(line, highlight=False, soft_wrap=unwrapped(console))


@cli.command("import-asv")
@click.argument("results_dir", type=click.Path(path_type=Path, file_okay=False))
@db_option
@o.NO_PROGRESS()
@o.MACHINE_CLASS()
def import_asv(results_dir: Path, db: str, no_progress: bool, machine_classes: tuple[str, ...]) -> None:
    """Import an asv results folder (benchmarks.json, <machine>/*.json) into the store.

    Hosts with the same hardware and OS form one machine class (the machine every other verb names); the
    host of each run is kept beside it."""
    from . import cli_results
    from .asvbridge.results_folder import check_results_folder
    from .cli_progress import progress_bar
    from .commands.import_asv import run_import

    check_results_folder(results_dir)  # before the bar: a wrong folder is one line, nothing drawn
    with progress_bar(None if no_progress else err_console, "importing", detail=True) as tick:
        result = run_import(db, results_dir, progress=tick, machine_classes=machine_classes)
    cli_results.imported(result, console, err_console)
    sys.exit(result.exit_code)


# -- mmtrack run: one commit under the real asv, into the store ---------------------------------------


@cli.command()
@o.QUICK("asv --quick: a short engine budget; smoke runs, not numbers to trust.")
@bench_option("Run only benchmarks matching REGEX (asv -b).")
@db_option
@o.MACHINE(ASV_MACHINE_HELP)
@o.CONFIG()
@o.COMMIT()
@o.CONFIRM()
@o.CONFIRM_AMBIGUOUS()
@o.CONFIRM_BUDGET()
@o.CONFIRM_MAX()
@o.CONFIRM_ROUNDS()
@o.ROUND_ALPHA("Significance the --confirm rounds must reach to confirm a regression (default {alpha}).",
               extra={"alpha": 0.01})
@fail_on_option("run", "Exit 1 when the comparison with the previous commit has a row with this verdict")
@o.INSTRUMENT()
@click.argument("asv_args", nargs=-1, type=click.UNPROCESSED)
def run(quick, bench, db, machine, config, commit, confirm, confirm_ambiguous, confirm_budget, confirm_max,
        confirm_rounds, round_alpha, fail_on, instrument, asv_args) -> None:
    """Run this commit's asv benchmarks with samples and put them in the store.

    Arguments after `--` go to `asv run` unchanged (e.g. `-- -e -a repeat=20`).
    """
    from . import cli_events, cli_results
    from .commands.run import RunRequest, run_command

    request = RunRequest(
        project=Path.cwd(),
        config=config,
        quick=quick,
        bench=bench,
        db=db,
        machine=machine,
        commit=commit,
        asv_args=tuple(asv_args),
        confirm=confirm,
        confirm_ambiguous=confirm_ambiguous,
        confirm_budget=confirm_budget,
        confirm_max=confirm_max,
        confirm_rounds=confirm_rounds,
        round_alpha=round_alpha,
        fail_on=tuple(fail_on),
        instrument=instrument,
    )
    result = run_command(request, report=cli_events.run_events(console))
    cli_results.run_gate(result, console)
    if confirm or instrument != "wall":  # A/B rounds, Valgrind's workers: left to the interpreter's teardown, as before
        sys.exit(result.exit_code)
    exit_without_teardown(result.exit_code)  # the store closed, asv's folder removed: 0.1-0.2 s of finalising


# -- analysis -----------------------------------------------------------------------------------------


@cli.command()
@click.argument("a")
@click.argument("b")
@db_option
@o.MACHINE("Machine of both sides (needed when a commit ran on several).")
@o.ENV("Environment of both sides (needed when a commit ran in several).")
@o.METRIC()
@format_option("table", "markdown", "json")
@fail_on_option("compare", "Exit 1 when a row has this verdict")
@min_effect_option("Minimum effect, relative (default {effect}; counters {counters}).", 0.1, 0.01, ("--threshold",))
@o.THRESHOLD_FOR()
@o.HISTORY()
@o.ALPHA("Significance the two commits' samples must reach (default {asv}, asv's; {history} with history, "
         "where the series' noise model must agree too).", extra={"asv": 0.002, "history": 0.01})
@o.ONLY_CHANGED()
@o.SORT()
def compare(a, b, db, machine, env, metrics, fmt, fail_on, min_effect, threshold_for, history, alpha, only_changed,
            sort) -> None:
    """Compare every metric of A (before) and B (after): commits (sha, branch, tag) or run ids (run:ID)."""
    from . import cli_results
    from .commands.compare import CompareRequest, parse_threshold_for, run_compare

    request = CompareRequest(a=a, b=b, db=db, machine=machine, env=env, metrics=tuple(metrics), fmt=fmt,
                             fail_on=tuple(fail_on), threshold=min_effect,
                             thresholds=parse_threshold_for(threshold_for),
                             history=history, alpha=alpha, only_changed=only_changed)
    outcome = run_compare(request)
    out = cli_results.compared(outcome, fmt, only_changed, sort)
    _emit(out)
    sys.exit(outcome.exit_code)


@cli.command()
@db_option
@o.MACHINE("Only series of this machine.")
@o.ENV("Only series of this environment.")
@bench_option("Only benchmarks whose name matches this regex.", old=[("--benchmark",)])
@o.METRIC()
@o.METHOD()
@min_effect_option("Smallest relative step reported, and the drift's threshold with --baseline (default {effect}).",
                   0.02, 0.02)
@o.ALPHA("Significance of each change point (default {detect}).", extra={"detect": 0.0001})
@o.DRY_RUN()
@o.SHOW_ALL()
@o.REPO()
@o.BASELINE()
@format_option("table", "json")
@fail_on_option("detect", "Exit 1 when a regression persists to the latest commit")
@o.FDR()
@o.NO_PROGRESS()
def detect(db, machine, env, bench, metrics, method, min_effect, alpha, dry_run, show_all, repo, baseline, fmt,
           fail_on, fdr, no_progress) -> None:
    """Find change points in every series of the store and store them for the pages."""
    from . import cli_results
    from .cli_progress import progress_bar
    from .commands.detect import DetectRequest, check_output_options, run_detect

    check_output_options(show_all, fmt)
    request = DetectRequest(db=db, machine=machine, env=env, benchmark=bench, metrics=tuple(metrics),
                            method=method, min_effect=min_effect, alpha=alpha, store_results=not dry_run,
                            fail_on=tuple(fail_on), repo=repo, repo_at_hand=repo is None, fdr=fdr, baseline=baseline)
    with progress_bar(None if no_progress else err_console, "detecting") as tick:
        outcome = run_detect(request, progress=tick)
    if fmt == "json":
        echo(cli_results.detect_json(outcome))
    else:
        console.print(cli_results.detect_table(outcome, show_all=show_all))
        if outcome.drift is not None:
            console.print(cli_results.drift_table(outcome.drift, show_all=show_all))
    sys.exit(outcome.exit_code)


@cli.command("list")
@click.argument("what", type=click.Choice(["runs", "commits", "machines", "benchmarks"]))
@db_option
@o.MACHINE("Only this machine.")
@o.ENV("Only this environment.")
@bench_option("Only benchmarks whose name matches this regex (list benchmarks only).", old=[("--benchmark",)])
@o.LIMIT()
@format_option("table", "json")
def list_(what, db, machine, env, bench, limit, fmt) -> None:
    """List what the store holds: runs (with ids), commits, machines (with environments) or benchmarks."""
    from . import cli_results
    from .commands.list import ListRequest, collect

    records = collect(ListRequest(what=what, db=db, machine=machine, env=env, benchmark=bench, limit=limit))
    if fmt == "json":
        echo(cli_results.list_json(records))
    else:
        console.print(cli_results.list_table(what, records))


@cli.command()
@o.OUTPUT()
@db_option
@o.TITLE()
@o.COMMIT_URL()
@o.CONFIG(ASV_CONFIG_READ_HELP)
@bench_option("Publish only benchmarks whose name matches this regex.", old=[("--benchmark",)])
@o.MACHINE("Publish only this machine.")
@o.BASELINE("A release tag, branch or commit: the regressions page shows each series' drift since it, beyond "
            "--min-effect and significant.")
@min_effect_option("The drift's threshold, relative (default {effect}).", 0.02, 0.02)
@o.NO_PROGRESS()
def publish(out, db, title, commit_url, config, bench, machine, baseline, min_effect, no_progress) -> None:
    """Write static regression pages (Plotly, offline, incremental) for the store into DIR."""
    from . import cli_results
    from .cli_progress import progress_bar
    from .commands.publish import PublishRequest, run_publish

    request = PublishRequest(out=out, db=db, title=title, commit_url=commit_url, asv_config=config,
                             benchmark=bench, machine=machine, baseline=baseline, min_effect=min_effect)
    with progress_bar(None if no_progress else err_console, "reading series") as tick:
        result = run_publish(request, progress=tick)
    cli_results.published(result, console)
    sys.exit(result.exit_code)


@cli.command()
@click.argument("results_dir", type=click.Path(path_type=Path))
@o.OUTPUT()
@db_option
@o.TITLE()
@o.COMMIT_URL()
@o.CONFIG(ASV_CONFIG_READ_HELP)
@o.NO_DETECT()
@o.BASELINE("A release tag, branch or commit: each touched series' drift since it, beyond --min-effect and "
            "significant; the regressions page shows every series'.")
@min_effect_option("Smallest relative step reported, and the drift's threshold (default {effect}).", 0.02, 0.02)
@fail_on_option("update", "Exit 1 when a touched series has a regression that persists to the latest commit")
@o.FDR()
def update(results_dir, out, db, title, commit_url, config, no_detect, baseline, min_effect, fail_on, fdr) -> None:
    """The per-commit CI step: import new asv results, detect on the series they touched, republish DIR."""
    import gc

    gc.disable()  # a one-shot process whose objects form no cycles worth collecting; it exits without teardown
    from . import cli_results
    from .commands.publish import PublishRequest
    from .commands.update import UpdateRequest
    from .commands.update import update as run_update

    request = UpdateRequest(
        results_dir=results_dir,
        publish=PublishRequest(out=out, db=db, title=title, commit_url=commit_url, asv_config=config,
                               baseline=baseline, min_effect=min_effect if baseline else None),
        detect=not no_detect, fail_on=tuple(fail_on), fdr=fdr, baseline=baseline, min_effect=min_effect,
    )
    outcome = run_update(request)
    cli_results.updated(outcome, console, err_console)
    exit_without_teardown(outcome.exit_code)


# -- alerts: the queue a team triages ----------------------------------------------------------------


@cli.group()
def alerts() -> None:
    """The alert queue: change points grouped by cause, each with a triage state (docs/guide/triage.md)."""


@alerts.command("list")
@db_option
@o.STATE()
@o.SHOW_ALL("Also the alerts re-detection no longer finds.")
@format_option("table", "json")
def alerts_list(db, state, show_all, fmt) -> None:
    """The alerts, untriaged first."""
    from . import cli_alerts
    from .commands.alerts import AlertsRequest, list_alerts

    found = list_alerts(AlertsRequest(db=db, state=state, show_all=show_all))
    _emit(cli_alerts.alerts_json(found) if fmt == "json" else cli_alerts.alerts_table(found))


@alerts.command("show")
@click.argument("alert_id")
@db_option
@format_option("table", "json")
def alerts_show(alert_id, db, fmt) -> None:
    """One alert: its commits, its series with their ratios, and every state it was given."""
    from . import cli_alerts
    from .commands.alerts import show_alert

    detail = show_alert(db, alert_id)
    echo(cli_alerts.alert_detail_json(detail) if fmt == "json" else cli_alerts.alert_lines(detail))


def _triage_verb(verb: str, state: str) -> None:
    @alerts.command(verb, help=f"Mark an alert {state}, with a note.")
    @click.argument("alert_id")
    @o.NOTE()
    @o.BY()
    @db_option
    @format_option("table", "json")
    def triage(alert_id, note, who, db, fmt) -> None:
        from . import cli_alerts
        from .commands.alerts import triage_alert

        a = triage_alert(db, alert_id, state, note, who)
        _emit(cli_alerts.one_alert_json(a) if fmt == "json"
              else f"alert {a.id}: {a.state} by {a.triage.who}" + (f" ({a.triage.note})" if a.triage.note else ""))


for _verb, _state in (("ack", "acknowledged"), ("invalid", "invalid"), ("wontfix", "wontfix"), ("fixed", "fixed"),
                      ("backed-out", "backed-out"), ("untriage", "untriaged")):
    _triage_verb(_verb, _state)


# -- same-machine A/B: continuous, bisect ------------------------------------------------------------


@cli.command()
@click.argument("base")
@click.argument("head", default="HEAD")
@bench_option("Run only benchmarks matching REGEX (asv -b).")
@o.ROUNDS("Interleaved rounds per side (A B, B A, ...) for a benchmark not decided either way sooner "
          "(unchanged from the second round, a change from the third).", default=6)
@o.MAX_ROUNDS()
@min_effect_option("Minimum effect, relative: flag changes beyond it (default {effect}, both commits measured here; "
                   "counters {counters}).", 0.05, 0.01)
@o.FACTOR()
@o.ROUND_ALPHA("Significance the rounds must reach to confirm a change (default {alpha}; lower: fewer false "
               "flags on a busy machine, more undecided rows and rounds).", extra={"alpha": 0.01})
@fail_on_option("continuous", "Exit 1 when a row has this verdict")
@format_option("table", "markdown", "json")
@o.QUICK("asv --quick: smoke runs, not numbers to trust.")
@o.MACHINE(ASV_MACHINE_HELP)
@o.CONFIG()
@o.NO_SAVE("Do not store the two runs.")
@o.INSTRUMENT()
@db_option
def continuous(base, head, bench, rounds, max_rounds, min_effect, factor, round_alpha, fail_on, fmt, quick, machine,
               config, no_save, instrument, db) -> None:
    """Build BASE and HEAD, run their benchmarks interleaved on this machine and compare them."""
    from . import cli_results
    from .commands.continuous import ContinuousRequest, run_continuous

    min_effect, factor = o.factor_to_min_effect(min_effect, factor)
    request = ContinuousRequest(base=base, head=head, project=Path.cwd(), config=config, bench=bench,
                                rounds=rounds, max_rounds=max_rounds, min_effect=min_effect, factor=factor,
                                round_alpha=round_alpha,
                                fail_on=tuple(fail_on), db=db,
                                machine=machine, quick=quick, save=not no_save, instrument=instrument)
    outcome = run_continuous(request, progress=lambda line: err_console.print(line, highlight=False))
    out = cli_results.continuous_result(outcome, fmt)
    _emit(out)
    if outcome.why and fmt == "table":
        cli_results.explanations(outcome.why, console)
    sys.exit(outcome.exit_code)


@cli.command()
@click.argument("good", required=False)
@click.argument("bad", required=False)
@bench_option("The benchmark (asv -b regex). Required without --alert; with it, picks among the alert's series.")
@o.METRIC("The metric that moved (name; default time_per_op, or instructions with --instrument callgrind; with "
          "--alert, the series' own).", dest="metric", multiple=False)
@o.ROUNDS("Interleaved rounds per step (doubled on noise).", default=4)
@o.ROUND_ALPHA("Significance the rounds must reach to call the culprit's change confirmed (default {alpha}).",
               extra={"alpha": 0.01})
@o.MACHINE(ASV_MACHINE_HELP)
@o.CONFIG()
@format_option("table", "json")
@o.NO_SAVE("Do not store the A/B measurements.")
@db_option
@o.INSTRUMENT()
@o.ALERT()
def bisect(good, bad, bench, metric, rounds, round_alpha, machine, config, fmt, no_save, db, instrument,
           alert) -> None:
    """Find the first commit after GOOD where BENCH's metric moved, by A/B measurements (each one stored)."""
    from . import cli_results
    from .commands.bisect import BisectRequest, run_bisect

    if alert is not None:
        _bisect_alert(alert, (good, bad), bench, metric, rounds, round_alpha, machine, config, fmt, no_save, db,
                      instrument)
        return
    if good is None or bad is None:
        raise UserError("mmtrack bisect needs GOOD and BAD (two commits), or --alert ID", EXIT_USAGE)
    request = BisectRequest(good=good, bad=bad, bench=bench, project=Path.cwd(), config=config,
                            rounds=rounds, machine=machine, round_alpha=round_alpha, db=db, save=not no_save,
                            instrument=instrument,
                            metric=metric or ("instructions" if instrument == "callgrind" else "time_per_op"))
    outcome = run_bisect(request, progress=lambda line: err_console.print(line, highlight=False))
    if fmt == "json":
        echo(cli_results.bisect_json(outcome))
    else:
        cli_results.bisected(outcome, console)


def _bisect_alert(alert, commits, bench, metric, rounds, round_alpha, machine, config, fmt, no_save, db,
                  instrument) -> None:
    """``bisect --alert ID``: the alert gives GOOD, BAD and the series; the culprit is written on it."""
    from . import cli_alerts
    from .commands.bisect_alert import AlertBisectRequest, bisect_alert

    if any(c is not None for c in commits):
        raise UserError("mmtrack bisect --alert takes no GOOD BAD: the alert's range gives them", EXIT_USAGE)
    request = AlertBisectRequest(alert=alert, db=db, bench=bench, metric=metric, project=Path.cwd(), config=config,
                                 rounds=rounds, machine=machine, round_alpha=round_alpha, save=not no_save,
                                 instrument=instrument)
    found = bisect_alert(request, progress=lambda line: err_console.print(line, highlight=False))
    if fmt == "json":
        echo(cli_alerts.alert_bisect_json(found))
    else:
        cli_alerts.alert_bisected(found, console)
    sys.exit(found.exit_code)
