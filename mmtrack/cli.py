"""The ``mmtrack`` command line: one small function per verb, glue only."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NoReturn

import click

from . import __distribution__, __version__
from .cli_options import (
    FAIL_ON_CHOICES,
    bench_option,
    config_option,
    env_option,
    fdr_option,
    fail_on_option,
    format_option,
    instrument_option,
    machine_option,
    metric_option,
    no_progress_option,
    quick_option,
    round_alpha_option,
)
from .errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE, UserError
from .tables import unwrapped
from .terminal import SafeConsole, echo

# Piped output gets a wide console so tables are not squeezed to 80 columns, unless COLUMNS says otherwise.
# Every command prints through these two or echo (terminal.py): no string from outside reaches the terminal raw.
console = SafeConsole() if sys.stdout.isatty() or os.environ.get("COLUMNS", "").isdigit() else SafeConsole(width=140)
err_console = SafeConsole(stderr=True, soft_wrap=True)


def db_option(f):  # noqa: ANN001, ANN201 - a click decorator
    """``--db URL``: the store (default $MMTRACK_DB, else .mmtrack/mmtrack.db in the project root).

    The decorated command receives ``db`` already resolved to a URL.
    """

    def resolve(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str:
        from .store.url import is_in_memory, resolve_url  # not store.db: no SQLAlchemy before sampling

        url = resolve_url(value)
        if is_in_memory(url):  # a command's results would be gone when it exits
            raise UserError(f"--db / MMTRACK_DB {url} is an in-memory store: nothing in it outlives this command; "
                            "give a file, e.g. --db .mmtrack/mmtrack.db")
        return url

    return click.option(
        "--db",
        "db",
        metavar="URL",
        callback=resolve,
        expose_value=True,
        help="Store URL or SQLite file (default: $MMTRACK_DB, else .mmtrack/mmtrack.db in the project root).",
    )(f)


ASV_MACHINE_HELP = "asv machine name (default: MMTRACK_MACHINE, else the host name)."
ASV_CONFIG_READ_HELP = "asv config to read the project's title and commit URL from (default: asv.conf.json here)."


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
@quick_option("A short budget: smoke runs, not numbers to trust.")
@click.option("--warm-up", type=float, help="Warm-up seconds per benchmark (default 1).")
@click.option("--duration", type=float, help="Target measured seconds per benchmark (default 5).")
@click.option("--min-samples", type=int, help="Fewest samples per benchmark (default 20).")
@click.option("--max-samples", type=int, help="Most samples per benchmark (default 100).")
@click.option("--order", type=click.Choice(["declared", "random"]), default="declared", show_default=True)
@click.option("--seed", type=int, default=None, help="Seed for --order random.")
@click.option("--cooldown", type=float, default=0.0, help="Seconds to sleep between cases.")
@click.option("--no-pin", is_flag=True, help="Do not pin the measuring thread to one CPU.")
@click.option("--no-save", is_flag=True, help="Do not save this run in the store.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds a case may take before its worker is stopped (default: asv's timeout attribute, "
                   "else 60).")
@click.option("--in-process", is_flag=True,
              help="Run every case in this process instead of a worker per case (debugging, profiling).")
@click.option("--processes", type=click.IntRange(min=1, max=100), default=None,
              help="Worker processes per case, one after the other, each taking a share of its samples "
                   "(default 4, 1 with --quick); the report says when processes differ more than samples "
                   "within one.")
@instrument_option()
@click.option(
    "--compare",
    default="latest",
    show_default=True,
    metavar="none|latest|RUN|COMMIT",
    help="Baseline for the regression analysis: none, the latest compatible run, a run id (N or run:N; a number "
         "of 7 digits or more that git knows as a commit is that commit) or a commit.",
)
@fail_on_option(("regression", "ambiguous", "failed"), "Exit 1 when the end-of-run comparison has a row with this verdict")
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


def exit_without_teardown(code: int) -> NoReturn:
    """Exit at once, skipping the interpreter's teardown, for a command that has nothing left to clean up
    (its store closed, no worker process, no temporary file): finalising SQLAlchemy's and numpy's modules
    takes about 0.2 s, a tenth of `mmtrack update`'s budget for the per-commit step of a CI job."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _error_line(message: str) -> None:
    """``error: MESSAGE`` on stderr, one line (control characters escaped: a message may quote a benchmark name)."""
    from rich.text import Text

    from .textsafe import term

    err_console.print(Text.assemble(("error:", "bold red"), " ", term(message)), highlight=False, soft_wrap=True)


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except UserError as exc:
        _error_line(str(exc))
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(EXIT_INTERRUPTED)
    except click.exceptions.NoArgsIsHelpError as exc:  # a bare group (`mmtrack`, `mmtrack db`): its help, as git does
        click.echo(exc.ctx.get_help())
        sys.exit(EXIT_OK)
    except click.UsageError as exc:  # click's usage lines, as one line of ours
        where = exc.ctx.command_path if exc.ctx is not None else "mmtrack"
        _error_line(f"{exc.format_message().rstrip('.')}; see {where} --help")
        sys.exit(EXIT_USAGE)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except OSError as exc:  # the last resort for what the commands' own checks could not foresee (a full disk, /proc)
        _error_line(os_error_line(exc))
        sys.exit(EXIT_USAGE)
    sys.exit(EXIT_OK)


def os_error_line(exc: OSError) -> str:
    """One line for an operating-system error: what failed, on which path, what to check."""
    from .errors import os_reason

    return f"{os_reason(exc)}; check that path, its permissions and the free space on its disk"


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
@click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")
def import_asv(results_dir: Path, db: str, no_progress: bool) -> None:
    """Import an asv results folder (benchmarks.json, <machine>/*.json) into the store."""
    from . import cli_results
    from .cli_progress import progress_bar
    from .commands.import_asv import check_results_dir, run_import

    check_results_dir(results_dir)  # before the bar: a wrong folder is one line, nothing drawn
    with progress_bar(None if no_progress else err_console, "importing", detail=True) as tick:
        result = run_import(db, results_dir, progress=tick)
    cli_results.imported(result, console, err_console)
    sys.exit(result.exit_code)


# -- mmtrack run: one commit under the real asv, into the store ---------------------------------------


@cli.command()
@quick_option("asv --quick: a short engine budget; smoke runs, not numbers to trust.")
@bench_option("Run only benchmarks matching REGEX (asv -b).")
@db_option
@machine_option(ASV_MACHINE_HELP)
@config_option()
@click.option("--commit", default="HEAD", show_default=True, help="The commit to record; must be checked out.")
@click.option("--confirm", is_flag=True, help="Re-measure suspected regressions A/B against the previous commit.")
@click.option("--confirm-ambiguous", is_flag=True,
              help="With --confirm, also re-measure the rows history could not decide (ambiguous).")
@click.option("--confirm-budget", type=float, metavar="SECONDS", help="Time bound of the --confirm rounds.")
@click.option("--confirm-max", type=int, metavar="N",
              help="At most N benchmarks re-measured by --confirm: suspected before ambiguous, regressions before "
                   "improvements, larger moves first.")
@click.option("--confirm-rounds", type=int, metavar="N",
              help="Interleaved A/B rounds per side for --confirm (default 4; undecided benchmarks: up to twice as many).")
@round_alpha_option("Significance the --confirm rounds must reach to confirm a regression (default 0.01).")
@fail_on_option(FAIL_ON_CHOICES, "Exit 1 when the comparison with the previous commit has a row with this verdict")
@instrument_option()
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
    sys.exit(result.exit_code)


# -- analysis -----------------------------------------------------------------------------------------


@cli.command()
@click.argument("a")
@click.argument("b")
@db_option
@machine_option("Machine of both sides (needed when a commit ran on several).")
@env_option("Environment of both sides (needed when a commit ran in several).")
@metric_option()
@format_option("table", "markdown", "json")
@fail_on_option(FAIL_ON_CHOICES, "Exit 1 when a row has this verdict")
@click.option("--threshold", type=float, help="Minimum effect, relative (default 0.1; counters 0.01).")
@click.option("--threshold-for", "threshold_for", multiple=True, metavar="PATTERN=VALUE",
              help="Minimum effect for benchmarks or metrics matching a glob; repeatable.")
@click.option("--history", type=int, default=100, show_default=True,  # analysis.compare.HISTORY_WINDOW
              help="Commits of A's series that judge a change against its own noise (0: off; with fewer than 60, "
                   "a change must stand further out to be suspected).")
@click.option("--alpha", type=float, metavar="P",
              help="Significance the two commits' samples must reach (default 0.002, asv's; 0.01 with history, "
                   "where the series' noise model must agree too).")
@click.option("--only-changed", is_flag=True, help="Table: leave out unchanged rows.")
@click.option("--sort", type=click.Choice(["verdict", "ratio", "name"]), default="verdict", show_default=True,
              help="Row order: what needs attention first, the worst ratio first, or by name.")
def compare(a, b, db, machine, env, metrics, fmt, fail_on, threshold, threshold_for, history, alpha, only_changed,
            sort) -> None:
    """Compare every metric of A (before) and B (after): commits (sha, branch, tag) or run ids (run:ID)."""
    from . import cli_results
    from .commands.compare import CompareRequest, parse_threshold_for, run_compare

    request = CompareRequest(a=a, b=b, db=db, machine=machine, env=env, metrics=tuple(metrics), fmt=fmt,
                             fail_on=tuple(fail_on), threshold=threshold, thresholds=parse_threshold_for(threshold_for),
                             history=history, alpha=alpha, only_changed=only_changed)
    outcome = run_compare(request)
    out = cli_results.compared(outcome, fmt, only_changed, sort)
    _emit(out)
    sys.exit(outcome.exit_code)


@cli.command()
@db_option
@machine_option("Only series of this machine.")
@env_option("Only series of this environment.")
@bench_option("Only benchmarks whose name matches this regex.", old=[("--benchmark",)])
@metric_option()
@click.option("--method", type=click.Choice(["rankseg", "edivisive", "pelt"]), default="rankseg", show_default=True)
@click.option("--min-effect", type=float, help="Smallest relative step reported (default 0.02).")
@click.option("--alpha", type=float, help="Significance of each change point (default 0.0001).")
@click.option("--dry-run", is_flag=True, help="Report only; do not store the change points.")
@click.option("--all", "show_all", is_flag=True, help="Also list improvements, neutral changes and moves under 5%.")
@click.option("--repo", type=click.Path(file_okay=False), metavar="PATH",
              help="A git checkout whose history orders the commits (default: the current directory's repository, "
                   "where it is one; commits it lacks, or all without one, by their recorded dates).")
@format_option("table", "json")
@fail_on_option(("regression",), "Exit 1 when a regression persists to the latest commit")
@fdr_option()
@no_progress_option()
def detect(db, machine, env, bench, metrics, method, min_effect, alpha, dry_run, show_all, repo, fmt, fail_on,
           fdr, no_progress) -> None:
    """Find change points in every series of the store and store them for the pages."""
    from . import cli_results
    from .cli_progress import progress_bar
    from .commands.detect import DetectRequest, check_output_options, run_detect

    check_output_options(show_all, fmt)
    request = DetectRequest(db=db, machine=machine, env=env, benchmark=bench, metrics=tuple(metrics),
                            method=method, min_effect=min_effect, alpha=alpha, store_results=not dry_run,
                            fail_on=tuple(fail_on), repo=repo, repo_at_hand=repo is None, fdr=fdr)
    with progress_bar(None if no_progress else err_console, "detecting") as tick:
        outcome = run_detect(request, progress=tick)
    if fmt == "json":
        echo(cli_results.detect_json(outcome))
    else:
        console.print(cli_results.detect_table(outcome, show_all=show_all))
    sys.exit(outcome.exit_code)


@cli.command("list")
@click.argument("what", type=click.Choice(["runs", "commits", "machines", "benchmarks"]))
@db_option
@machine_option("Only this machine.")
@env_option("Only this environment.")
@bench_option("Only benchmarks whose name matches this regex (list benchmarks only).", old=[("--benchmark",)])
@click.option("--limit", type=int, help="Only the first N rows (runs and commits: the latest N).")
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
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, help="Folder for the site.")
@db_option
@click.option("--title", help="Site title (default: asv.conf.json's project, else 'mmtrack').")
@click.option("--commit-url", help="URL prefix a commit sha is appended to (default: asv's show_commit_url).")
@config_option(ASV_CONFIG_READ_HELP)
@bench_option("Publish only benchmarks whose name matches this regex.", old=[("--benchmark",)])
@machine_option("Publish only this machine.")
@no_progress_option()
def publish(out, db, title, commit_url, config, bench, machine, no_progress) -> None:
    """Write static regression pages (Plotly, offline, incremental) for the store into DIR."""
    from . import cli_results
    from .cli_progress import progress_bar
    from .commands.publish import PublishRequest, run_publish

    request = PublishRequest(out=out, db=db, title=title, commit_url=commit_url, asv_config=config,
                             benchmark=bench, machine=machine)
    with progress_bar(None if no_progress else err_console, "reading series") as tick:
        result = run_publish(request, progress=tick)
    cli_results.published(result, console)
    sys.exit(result.exit_code)


@cli.command()
@click.argument("results_dir", type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, help="Folder for the site.")
@db_option
@click.option("--title", help="Site title (default: asv.conf.json's project, else 'mmtrack').")
@click.option("--commit-url", help="URL prefix a commit sha is appended to (default: asv's show_commit_url).")
@config_option(ASV_CONFIG_READ_HELP)
@click.option("--no-detect", is_flag=True, help="Import and republish only.")
@fail_on_option(("regression",), "Exit 1 when a touched series has a regression that persists to the latest commit")
@fdr_option()
def update(results_dir, out, db, title, commit_url, config, no_detect, fail_on, fdr) -> None:
    """The per-commit CI step: import new asv results, detect on the series they touched, republish DIR."""
    import gc

    gc.disable()  # a one-shot process whose objects form no cycles worth collecting; it exits without teardown
    from . import cli_results
    from .commands.publish import PublishRequest
    from .commands.update import UpdateRequest
    from .commands.update import update as run_update

    request = UpdateRequest(
        results_dir=results_dir,
        publish=PublishRequest(out=out, db=db, title=title, commit_url=commit_url, asv_config=config),
        detect=not no_detect, fail_on=tuple(fail_on), fdr=fdr,
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
@click.option("--state", help="Only alerts in this state (untriaged, acknowledged, invalid, wontfix, fixed, "
                              "backed-out).")
@click.option("--all", "show_all", is_flag=True, help="Also the alerts re-detection no longer finds.")
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
    @click.option("-m", "--note", default="", help="Why (a bug link, a commit, a word).")
    @click.option("--by", "who", help="Who triages (default: $USER, else git's user.name).")
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
@click.option("--rounds", type=int, default=6, show_default=True,
              help="Interleaved rounds per side (A B, B A, ...) for a benchmark not decided either way sooner "
                   "(unchanged from the second round, a change from the third).")
@click.option("--max-rounds", type=int, metavar="N",
              help="Rounds up to which undecided benchmarks alone are re-run (default twice --rounds; 0: never).")
@click.option("--factor", type=float, help="asv's factor: flag changes beyond it (default 1.05, both commits measured here; counters 1.01).")
@round_alpha_option("Significance the rounds must reach to confirm a change (default 0.01; lower: fewer false "
                    "flags on a busy machine, more undecided rows and rounds).")
@fail_on_option(("regression", "ambiguous", "failed"), "Exit 1 when a row has this verdict")
@format_option("table", "markdown", "json")
@quick_option("asv --quick: smoke runs, not numbers to trust.")
@machine_option(ASV_MACHINE_HELP)
@config_option()
@click.option("--no-save", is_flag=True, help="Do not store the two runs.")
@instrument_option()
@db_option
def continuous(base, head, bench, rounds, max_rounds, factor, round_alpha, fail_on, fmt, quick, machine, config,
               no_save, instrument, db) -> None:
    """Build BASE and HEAD, run their benchmarks interleaved on this machine and compare them."""
    from . import cli_results
    from .commands.continuous import ContinuousRequest, run_continuous

    request = ContinuousRequest(base=base, head=head, project=Path.cwd(), config=config, bench=bench,
                                rounds=rounds, max_rounds=max_rounds, factor=factor, round_alpha=round_alpha,
                                fail_on=tuple(fail_on), db=db,
                                machine=machine, quick=quick, save=not no_save, instrument=instrument)
    outcome = run_continuous(request, progress=lambda line: err_console.print(line, highlight=False))
    out = cli_results.continuous_result(outcome, fmt)
    _emit(out)
    if outcome.why and fmt == "table":
        cli_results.explanations(outcome.why, console)
    sys.exit(outcome.exit_code)


@cli.command()
@click.argument("good")
@click.argument("bad")
@bench_option("The benchmark (asv -b regex).", required=True)
@click.option("--metric", default=None, help="The metric that moved (name; default time_per_op, or instructions "
                                             "with --instrument callgrind).")
@click.option("--rounds", type=int, default=4, show_default=True,
              help="Interleaved rounds per step (doubled on noise).")
@round_alpha_option("Significance the rounds must reach to call the culprit's change confirmed (default 0.01).")
@machine_option(ASV_MACHINE_HELP)
@config_option()
@format_option("table", "json")
@click.option("--no-save", is_flag=True, help="Do not store the A/B measurements.")
@db_option
@instrument_option()
def bisect(good, bad, bench, metric, rounds, round_alpha, machine, config, fmt, no_save, db, instrument) -> None:
    """Find the first commit after GOOD where BENCH's metric moved, by A/B measurements (each one stored)."""
    from . import cli_results
    from .commands.bisect import BisectRequest, run_bisect

    request = BisectRequest(good=good, bad=bad, bench=bench, project=Path.cwd(), config=config,
                            rounds=rounds, machine=machine, round_alpha=round_alpha, db=db, save=not no_save,
                            instrument=instrument,
                            metric=metric or ("instructions" if instrument == "callgrind" else "time_per_op"))
    outcome = run_bisect(request, progress=lambda line: err_console.print(line, highlight=False))
    if fmt == "json":
        echo(cli_results.bisect_json(outcome))
    else:
        cli_results.bisected(outcome, console)
