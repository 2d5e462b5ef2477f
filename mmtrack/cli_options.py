"""Options shared by several verbs, each defined once with one spelling (as asv's ``commands/common_args.py``).

A spelling a verb used before gets a hidden alias for one release: it still works, and says in one line on
stderr which spelling to use instead.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Sequence

import click

from .errors import EXIT_USAGE, UserError, user_regex

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]

#: What ``--fail-on`` can name, the same words in every verb that gates.
FAIL_ON_CHOICES = ("regression", "suspected", "ambiguous", "failed")
FAIL_ON_MEANING = {
    "regression": "a confirmed regression or a newly failing benchmark",
    "suspected": "also a regression the history only suspects so far",
    "ambiguous": "a row the evidence could not decide",
    "failed": "a benchmark that failed",
}


def _deprecation_note(old: str, new: str) -> None:
    click.echo(f"mmtrack: {old} is deprecated and will be removed in the next release; use {new}", err=True)


def with_aliases(main: Decorator, name: str, new: str, aliases: Sequence[tuple[str, ...]],
                 value_type: Any = None) -> Decorator:
    """``main`` plus a hidden option per old spelling, whose value is handed to ``name`` with a one-line note."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        alias_names = [f"_alias_{name}_{i}" for i in range(len(aliases))]

        @functools.wraps(f)
        def merged(*args: Any, **kwargs: Any) -> Any:
            for alias, flags in zip(alias_names, aliases):
                value = kwargs.pop(alias, None)
                if value in (None, (), False):
                    continue
                if kwargs.get(name) not in (None, (), False):
                    raise UserError(f"{flags[-1]} and {new} name the same option; give {new} once", EXIT_USAGE)
                _deprecation_note(flags[-1], new)
                kwargs[name] = value
            return f(*args, **kwargs)

        decorated = merged
        for alias, flags in zip(alias_names, aliases):
            decorated = click.option(*flags, alias, hidden=True, type=value_type)(decorated)
        return main(decorated)

    return decorate


def _regex(option: str) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    def check(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        if value:
            user_regex(value, option)  # refused now: asv would refuse it only after building environments
        return value

    return check


def bench_option(help: str, *, required: bool = False, old: Sequence[tuple[str, ...]] = ()) -> Decorator:
    """``-b/--bench REGEX``: which benchmarks (asv's ``-b``); ``old`` lists a verb's former spellings."""
    main = click.option("-b", "--bench", "bench", metavar="REGEX", required=required, callback=_regex("-b"),
                        help=help)
    return with_aliases(main, "bench", "-b/--bench", old) if old else main


def config_option(help: str = "asv config file (default: asv.conf.json in the current folder).") -> Decorator:
    """``--config PATH``: the asv config; ``--asv-config`` was publish's and update's spelling."""
    path = click.Path(path_type=Path)
    main = click.option("--config", "config", type=path, help=help)
    return with_aliases(main, "config", "--config", [("--asv-config",)], value_type=path)


def machine_option(help: str) -> Decorator:
    return click.option("--machine", help=help)


def env_option(help: str) -> Decorator:
    return click.option("--env", help=help)


def format_option(*choices: str) -> Decorator:
    """``--format``: the renderings a verb has, table first and the default."""
    return click.option("--format", "fmt", type=click.Choice(list(choices)), default=choices[0], show_default=True)


def fail_on_option(applies: Sequence[str], help: str) -> Decorator:
    """``--fail-on VERDICT`` with one choice set in every verb; a verdict the verb cannot produce is refused at once."""

    def check(ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
        for verdict in value:
            if verdict not in applies:
                raise UserError(f"--fail-on {verdict}: {ctx.command_path} gives no {verdict!r} verdict; use "
                                f"{' or '.join(applies)}", EXIT_USAGE)
        return value

    meanings = "; ".join(f"{v}: {FAIL_ON_MEANING[v]}" for v in applies)
    return click.option("--fail-on", "fail_on", multiple=True, type=click.Choice(FAIL_ON_CHOICES), callback=check,
                        help=f"{help} ({meanings}). Repeatable.")


def quick_option(help: str = "asv --quick: a short budget; smoke runs, not numbers to trust.") -> Decorator:
    return click.option("--quick", is_flag=True, help=help)


def no_progress_option() -> Decorator:
    return click.option("--no-progress", is_flag=True, help="Do not show the progress bar.")


def metric_option() -> Decorator:
    return click.option("--metric", "metrics", multiple=True,
                        help="Only these metrics (name, section/name or glob); repeatable.")


def round_alpha_option(help: str) -> Decorator:
    return click.option("--round-alpha", type=float, metavar="P", help=help)


def instrument_option() -> Decorator:
    return click.option(
        "--instrument", type=click.Choice(["wall", "callgrind"]), default="wall", show_default=True,
        help="wall: time each case; callgrind: count its instructions and simulated cache misses under Valgrind, "
             "the same on any machine (docs/reference/instruments.md).")


def fdr_option() -> Decorator:
    """``--fdr Q``: the suite's false-alarm budget, Benjamini-Hochberg's level per commit (0: off)."""
    from_cli = lambda _ctx, _param, value: None if value == 0 else value  # noqa: E731 - 0 turns the budget off
    return click.option("--fdr", type=float, metavar="Q", default=0.001, show_default=True, callback=from_cli,
                        help="False-alarm budget of the whole suite: Benjamini-Hochberg's level over the change "
                             "points of each commit (docs/design/alerts.md); 0 turns it off.")
