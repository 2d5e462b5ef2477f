"""Every option of every verb, each declared once (as alembic's and asv's shared option decorators).

A declaration (:class:`Option`) holds the flags, the destination, the type, the default and the help; a verb applies
it as a decorator, giving its own help or default where the verb's meaning differs (``--machine`` filters in
``compare`` and names the machine in ``run``). Help texts read their defaults and choices from the declaration
(``{default}``, ``{choices}``); the reference rows in docs/reference are rendered from the same declarations
(:func:`reference_row`, checked by tests/test_docs.py). A spelling a verb used before is a hidden alias for one
release: it still works, and says in one line on stderr which spelling to use instead.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import click

from .errors import EXIT_USAGE, UserError, user_regex

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


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


@dataclass(frozen=True)
class Option:
    """One option: its flags and destination, declared once; a verb may give its own help, default or choices."""

    flags: tuple[str, ...]
    dest: str
    help: str = ""
    type: Any = None
    default: Any = None
    show_default: bool = False
    is_flag: bool = False
    multiple: bool = False
    metavar: str | None = None
    required: bool = False
    hidden: bool = False
    callback: Callable[..., Any] | None = None
    old: tuple[tuple[str, ...], ...] = ()  # former spellings: hidden aliases for one release
    extra: dict[str, Any] = field(default_factory=dict)  # values help texts name: {default}, {counters}, ...

    @property
    def spelling(self) -> str:
        return "/".join(self.flags)

    def text(self) -> str:
        choices = getattr(self.type, "choices", None)
        return self.help.format(default=self.default, choices="|".join(choices or ()), **self.extra)

    def __call__(self, help: str | None = None, **changes: Any) -> Decorator:
        """The click decorator for one verb; ``help`` and ``changes`` (default, choices, ...) are that verb's."""
        o = dataclasses.replace(self, **({"help": help} if help is not None else {}), **changes)
        given = {"help": o.text() or None, "type": o.type, "default": o.default, "metavar": o.metavar,
                 "show_default": o.show_default, "is_flag": o.is_flag, "multiple": o.multiple,
                 "required": o.required, "hidden": o.hidden, "callback": o.callback}
        # only what the declaration sets: click's own defaults stand for the rest (a flag not given is False)
        main = click.option(*o.flags, o.dest, **{k: v for k, v in given.items() if v is not None and v is not False})
        return with_aliases(main, o.dest, o.spelling, o.old, o.type) if o.old else main


#: Every declared option by flag: a flag declared twice is refused at import (tests/test_cli_options.py).
DECLARED: dict[str, Option] = {}


def declare(*flags: str, dest: str, **kw: Any) -> Option:
    option = Option(flags, dest, **kw)
    for flag in (*flags, *(f for old in option.old for f in old)):
        if flag in DECLARED:
            raise AssertionError(f"option {flag} declared twice: {DECLARED[flag].spelling} and {option.spelling}")
        DECLARED[flag] = option
    return option


def _regex(option: str) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    def check(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        if value:
            user_regex(value, option)  # refused now: asv would refuse it only after building environments
        return value

    return check


def _store_url(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str:
    """``--db``'s value resolved to a URL (default $MMTRACK_DB, else .mmtrack/mmtrack.db in the project root)."""
    from .store.url import is_in_memory, resolve_url  # not store.db: no SQLAlchemy before sampling

    url = resolve_url(value)
    if is_in_memory(url):  # a command's results would be gone when it exits
        raise UserError(f"--db / MMTRACK_DB {url} is an in-memory store: nothing in it outlives this command; "
                        "give a file, e.g. --db .mmtrack/mmtrack.db")
    return url


class _FailOnWords(click.Choice):
    """The words one verb's gate accepts; a word of another verb's gate is refused in the gate's own line."""

    def __init__(self, verb: str) -> None:
        from .analysis.gate import accepted

        super().__init__(accepted(verb))
        self.verb = verb

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        from .analysis.gate import MEANING, checked

        if value in MEANING:
            return checked(self.verb, (value,), ctx.command_path if ctx else None)[0]
        return super().convert(value, param, ctx)


PATH = click.Path(path_type=Path)

# -- shared by several verbs ---------------------------------------------------------------------------------------
DB = declare("--db", dest="db", metavar="URL", callback=_store_url,
             help="Store URL or SQLite file (default: $MMTRACK_DB, else .mmtrack/mmtrack.db in the project root).")
#: Former spellings: bench's ``-k/--filter``; detect's, list's and publish's ``--benchmark`` (each verb names its own).
BENCH = declare("-b", "--bench", dest="bench", metavar="REGEX", callback=_regex("-b"),
                old=(("-k", "--filter"), ("--benchmark",)))
CONFIG = declare("--config", dest="config", type=PATH, old=(("--asv-config",),),
                 help="asv config file (default: asv.conf.json in the current folder).")
MACHINE = declare("--machine", dest="machine")
ASV_MACHINE_HELP = "asv machine name (default: MMTRACK_MACHINE, else the host name)."
ASV_CONFIG_READ_HELP = "asv config to read the project's title and commit URL from (default: asv.conf.json here)."
ENV = declare("--env", dest="env")
FORMAT = declare("--format", dest="fmt", type=click.Choice(["table"]), default="table", show_default=True)
FAIL_ON = declare("--fail-on", dest="fail_on", multiple=True)
QUICK = declare("--quick", dest="quick", is_flag=True)
NO_PROGRESS = declare("--no-progress", dest="no_progress", is_flag=True, help="Do not show the progress bar.")
MACHINE_CLASS = declare("--machine-class", dest="machine_classes", multiple=True, metavar="CLASS=HOST-GLOB",
                        help="Hosts whose asv machine name matches HOST-GLOB form the machine class CLASS (name, merge "
                             "or split classes); repeatable, first match wins, before asv.conf.json's machine_classes.")
FDR = declare("--fdr", dest="fdr", type=float, metavar="Q", default=0.001, show_default=True,
              callback=lambda _ctx, _param, value: None if value == 0 else value,  # 0 turns the budget off
              help="False-alarm budget of the whole suite: Benjamini-Hochberg's level over the change points of each "
                   "commit (docs/design/alerts.md); 0 turns it off.")
STATE = declare("--state", dest="state", metavar="STATE", help="Only alerts in this state (untriaged, acknowledged, invalid, wontfix, "
                                              "fixed, backed-out).")
NOTE = declare("-m", "--note", dest="note", default="", help="Why (a bug link, a commit, a word).")
BY = declare("--by", dest="who", metavar="NAME", help="Who triages (default: $USER, else git's user.name).")
NO_SAVE = declare("--no-save", dest="no_save", is_flag=True)
METRIC = declare("--metric", dest="metrics", multiple=True,
                 help="Only these metrics (name, section/name or glob); repeatable.")
ROUND_ALPHA = declare("--round-alpha", dest="round_alpha", type=float, metavar="P")
ROUNDS = declare("--rounds", dest="rounds", type=int, show_default=True)
ALPHA = declare("--alpha", dest="alpha", type=float, metavar="P")
#: One spelling of the smallest relative change reported; ``--threshold`` was compare's (continuous's --factor: FACTOR).
MIN_EFFECT = declare("--min-effect", dest="min_effect", type=float, metavar="FLOAT", old=(("--threshold",),))
INSTRUMENT = declare(
    "--instrument", dest="instrument", type=click.Choice(["wall", "callgrind"]), default="wall", show_default=True,
    help="wall: time each case; callgrind: count its instructions and simulated cache misses under Valgrind, "
         "the same on any machine (docs/reference/instruments.md).")
OUTPUT = declare("-o", "--output", dest="out", type=PATH, required=True, help="Folder for the site.")
TITLE = declare("--title", dest="title", help="Site title (default: asv.conf.json's project, else 'mmtrack').")
COMMIT_URL = declare("--commit-url", dest="commit_url",
                     help="URL prefix a commit sha is appended to (default: asv's show_commit_url).")

# -- one verb's own ------------------------------------------------------------------------------------------------
WARM_UP = declare("--warm-up", dest="warm_up", type=float, extra={"engine": 1},
                  help="Warm-up seconds per benchmark (default {engine}).")
DURATION = declare("--duration", dest="duration", type=float, extra={"engine": 5},
                   help="Target measured seconds per benchmark (default {engine}).")
MIN_SAMPLES = declare("--min-samples", dest="min_samples", type=int, extra={"engine": 20},
                      help="Fewest samples per benchmark (default {engine}).")
MAX_SAMPLES = declare("--max-samples", dest="max_samples", type=int, extra={"engine": 100},
                      help="Most samples per benchmark (default {engine}).")
ORDER = declare("--order", dest="order", type=click.Choice(["declared", "random"]), default="declared",
                show_default=True)
SEED = declare("--seed", dest="seed", type=int, help="Seed for --order random.")
COOLDOWN = declare("--cooldown", dest="cooldown", type=float, default=0.0, help="Seconds to sleep between cases.")
NO_PIN = declare("--no-pin", dest="no_pin", is_flag=True, help="Do not pin the measuring thread to one CPU.")
TIMEOUT = declare("--timeout", dest="timeout", type=click.FloatRange(min=0, min_open=True), extra={"fallback": 60},
                  help="Seconds a case may take before its worker is stopped (default: asv's timeout attribute, "
                       "else {fallback}).")
IN_PROCESS = declare("--in-process", dest="in_process", is_flag=True,
                     help="Run every case in this process instead of a worker per case (debugging, profiling).")
PROCESSES = declare("--processes", dest="processes", type=click.IntRange(min=1, max=100), extra={"engine": 4},
                    help="Worker processes per case, one after the other, each taking a share of its samples "
                         "(default {engine}, 1 with --quick); the report says when processes differ more than "
                         "samples within one.")
COMPARE_WITH = declare(
    "--compare", dest="compare", default="latest", show_default=True, metavar="none|latest|RUN|COMMIT",
    help="Baseline for the regression analysis: none, the latest compatible run, a run id (N or run:N; a number "
         "of 7 digits or more that git knows as a commit is that commit) or a commit.")
COMMIT = declare("--commit", dest="commit", default="HEAD", show_default=True,
                 help="The commit to record; must be checked out.")
CONFIRM = declare("--confirm", dest="confirm", is_flag=True,
                  help="Re-measure suspected regressions A/B against the previous commit.")
CONFIRM_AMBIGUOUS = declare("--confirm-ambiguous", dest="confirm_ambiguous", is_flag=True,
                            help="With --confirm, also re-measure the rows history could not decide (ambiguous).")
CONFIRM_BUDGET = declare("--confirm-budget", dest="confirm_budget", type=float, metavar="SECONDS",
                         help="Time bound of the --confirm rounds.")
CONFIRM_MAX = declare("--confirm-max", dest="confirm_max", type=int, metavar="N",
                      help="At most N benchmarks re-measured by --confirm: suspected before ambiguous, regressions "
                           "before improvements, larger moves first.")
CONFIRM_ROUNDS = declare("--confirm-rounds", dest="confirm_rounds", type=int, metavar="N", extra={"rounds": 4},
                         help="Interleaved A/B rounds per side for --confirm (default {rounds}; undecided "
                              "benchmarks: up to twice as many).")
THRESHOLD_FOR = declare("--threshold-for", dest="threshold_for", multiple=True, metavar="PATTERN=VALUE",
                        help="Minimum effect for benchmarks or metrics matching a glob; repeatable.")
HISTORY = declare("--history", dest="history", type=int, default=100, show_default=True, extra={"short": 60},
                  help="Commits of A's series that judge a change against its own noise (0: off; with fewer than "
                       "{short}, a change must stand further out to be suspected).")
ONLY_CHANGED = declare("--only-changed", dest="only_changed", is_flag=True, help="Table: leave out unchanged rows.")
SORT = declare("--sort", dest="sort", type=click.Choice(["verdict", "ratio", "name"]), default="verdict",
               show_default=True, help="Row order: what needs attention first, the worst ratio first, or by name.")
METHOD = declare("--method", dest="method", type=click.Choice(["rankseg", "edivisive", "pelt"]), default="rankseg",
                 show_default=True)
DRY_RUN = declare("--dry-run", dest="dry_run", is_flag=True, help="Report only; do not store the change points.")
SHOW_ALL = declare("--all", dest="show_all", is_flag=True, extra={"small": "5%"},
                   help="Also list improvements, neutral changes and moves under {small}.")
REPO = declare("--repo", dest="repo", type=click.Path(file_okay=False), metavar="PATH",
               help="A git checkout whose history orders the commits (default: the current directory's "
                    "repository, where it is one; commits it lacks, or all without one, by their recorded dates).")
LIMIT = declare("--limit", dest="limit", type=int, help="Only the first N rows (runs and commits: the latest N).")
NO_DETECT = declare("--no-detect", dest="no_detect", is_flag=True, help="Import and republish only.")
MAX_ROUNDS = declare("--max-rounds", dest="max_rounds", type=int, metavar="N",
                     help="Rounds up to which undecided benchmarks alone are re-run (default twice --rounds; "
                          "0: never).")
ALERT = declare("--alert", dest="alert", metavar="ID",
                help="Bisect this alert's commit range (`mmtrack alerts list`; an id or a unique start of it) in "
                     "place of GOOD BAD, on the alert's series that moved most (on this machine's class where it "
                     "has any; -b picks others), and write the culprit on the alert.")
BASELINE = declare("--baseline", dest="baseline", metavar="REF",
                   help="A release tag, branch or commit: each series' drift since it, beyond --min-effect and "
                        "significant (tags through git where a repository is at hand, else a stored commit or branch).")
#: ``continuous``'s former spelling of the minimum effect, as asv's factor (1.05 is --min-effect 0.05).
FACTOR = declare("--factor", dest="factor", type=float, hidden=True)


def bench_option(help: str, *, required: bool = False, old: Sequence[tuple[str, ...]] = ()) -> Decorator:
    """``-b/--bench REGEX``: which benchmarks (asv's ``-b``); ``old`` lists a verb's former spellings."""
    return BENCH(help, required=required, old=tuple(old))


def format_option(*choices: str) -> Decorator:
    """``--format``: the renderings a verb has, table first and the default."""
    return FORMAT(type=click.Choice(list(choices)), default=choices[0])


def fail_on_option(verb: str, help: str) -> Decorator:
    """``--fail-on VERDICT``: the words ``verb``'s gate accepts (analysis/gate.py), each with what it fails on."""
    from .analysis.gate import MEANING, accepted

    meanings = "; ".join(f"{v}: {MEANING[v]}" for v in accepted(verb))
    return FAIL_ON(f"{help} ({meanings}). Repeatable.", type=_FailOnWords(verb))


def min_effect_option(help: str, default: float, counters: float, old: tuple[str, ...] = ()) -> Decorator:
    """``--min-effect``: the smallest relative change a verb reports, one spelling in every verb; ``default`` and
    ``counters`` are the verb's own (its policy's), named in the help; ``old``: the verb's former spelling."""
    return MIN_EFFECT(help, extra={"effect": default, "counters": counters}, old=(old,) if old else ())


def factor_to_min_effect(min_effect: float | None, factor: float | None) -> tuple[float | None, float | None]:
    """``continuous``'s ``--factor`` (hidden, deprecated): kept as given, with its note; both given is refused."""
    if factor is not None:
        if min_effect is not None:
            raise UserError("--factor and --min-effect name the same option; give --min-effect once", EXIT_USAGE)
        _deprecation_note("--factor", "--min-effect (a relative effect: --factor 1.05 is --min-effect 0.05)")
    return min_effect, factor


def reference_row(option: click.Option) -> str:
    """The row docs/reference shows for ``option``: flags and value, then its help, required and default."""
    names = ", ".join(f"`{flag}`" for flag in option.opts)
    if option.is_flag:
        value = ""
    elif isinstance(option.type, click.Choice):
        value = " " + "\\|".join(option.type.choices)
    else:
        value = " " + (option.metavar or option.type.name.upper()).replace("|", "\\|")
    text = option.help or (f"One of {', '.join(f'`{c}`' for c in option.type.choices)}."
                           if isinstance(option.type, click.Choice) else "")
    if option.required:
        text += " Required."
    if option.show_default and option.default is not None and not option.is_flag:
        text += f" Default: `{option.default}`."
    return f"| {names}{value} | {text.strip()} |"
