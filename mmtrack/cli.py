"""The ``mmtrack`` command line: one small function per verb, glue only."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from rich.console import Console

from .errors import EXIT_OK, EXIT_USAGE, UserError

# Piped output gets a wide console so tables are not squeezed to 80 columns.
console = Console() if sys.stdout.isatty() else Console(width=140)
err_console = Console(stderr=True, soft_wrap=True)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="mmtrack")
def cli() -> None:
    """Per-commit performance tracking, compatible with asv."""


@cli.command()
@click.argument("path", type=click.Path(path_type=Path), default=Path("benchmarks"))
@click.option("-k", "--filter", "pattern", help="Run only benchmarks whose name matches this regex.")
@click.option("--quick", is_flag=True, help="A short budget: smoke runs, not numbers to trust.")
@click.option("--warm-up", type=float, help="Warm-up seconds per benchmark (default 1).")
@click.option("--duration", type=float, help="Target measured seconds per benchmark (default 5).")
@click.option("--min-samples", type=int, help="Fewest samples per benchmark (default 20).")
@click.option("--max-samples", type=int, help="Most samples per benchmark (default 100).")
@click.option("--order", type=click.Choice(["declared", "random"]), default="declared", show_default=True)
@click.option("--seed", type=int, default=None, help="Seed for --order random.")
@click.option("--cooldown", type=float, default=0.0, help="Seconds to sleep between cases.")
def bench(path, pattern, quick, warm_up, duration, min_samples, max_samples, order, seed, cooldown) -> None:
    """Run the engine benchmarks under PATH on the working tree and print the report."""
    from .commands.bench import BenchRequest, run_bench

    request = BenchRequest(
        path=path,
        pattern=pattern,
        quick=quick,
        overrides={
            "warm_up": warm_up,
            "duration": duration,
            "min_samples": min_samples,
            "max_samples": max_samples,
        },
        order=order,
        seed=seed,
        cooldown=cooldown,
    )
    sys.exit(run_bench(request, console=console))


def main() -> None:
    try:
        cli.main(standalone_mode=False)
    except UserError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    sys.exit(EXIT_OK)


@cli.command()
@click.option("-o", "--output", "out", type=click.Path(path_type=Path), required=True, help="Folder for the site.")
@click.option("--db", "db", default=None, help="Store URL (default $MMTRACK_DB, else the project's SQLite file).")
@click.option("--title", help="Site title (default: asv.conf.json's project, else 'mmtrack').")
@click.option("--commit-url", help="URL prefix a commit sha is appended to (default: asv's show_commit_url).")
@click.option("--asv-config", type=click.Path(path_type=Path), help="asv.conf.json to read (default ./asv.conf.json).")
@click.option("-b", "--benchmark", help="Publish only benchmarks whose name matches this regex.")
@click.option("--machine", help="Publish only this machine.")
def publish(out, db, title, commit_url, asv_config, benchmark, machine) -> None:
    """Write static regression pages (Plotly, offline, incremental) for the store into DIR."""
    from .commands.publish import PublishRequest, run_publish

    request = PublishRequest(out=out, db=db, title=title, commit_url=commit_url, asv_config=asv_config,
                             benchmark=benchmark, machine=machine)
    sys.exit(run_publish(request, console=console))
