"""One spelling per option across verbs; the old spellings still work for one release and say so in one line."""

from __future__ import annotations

import click
import pytest
from conftest import run_cli

from mmtrack.analysis.gate import ACCEPTS, WORDS
from mmtrack.cli import cli


def commands(group: click.Group = cli, prefix: str = "") -> dict[str, click.Command]:
    out = {}
    for name, command in group.commands.items():
        out[prefix + name] = command
        if isinstance(command, click.Group):
            out.update(commands(command, f"{prefix}{name} "))
    return out


def visible_options(command: click.Command) -> list[click.Option]:
    return [p for p in command.params if isinstance(p, click.Option) and not p.hidden]


def test_each_flag_means_one_option_in_every_verb():
    """A flag (-b, --config, --machine, ...) names the same destination and takes the same kind of value everywhere."""
    meaning: dict[str, tuple[str, str]] = {}
    clashes = []
    for verb, command in commands().items():
        for option in visible_options(command):
            for flag in option.opts + option.secondary_opts:
                # bisect's --metric names the one metric that moved, compare's may name several: one concept.
                kind = ((option.name or "").removesuffix("s"), type(option.type).__name__)
                if meaning.setdefault(flag, kind) != kind:
                    clashes.append(f"{verb} {flag}: {kind} elsewhere {meaning[flag]}")
    assert not clashes, clashes


def test_the_old_spellings_are_hidden_and_the_new_ones_shown():
    shown = {flag for command in commands().values() for o in visible_options(command) for flag in o.opts}
    assert {"-b", "--bench", "--config", "--machine", "--format", "--fail-on"} <= shown
    assert not shown & {"--benchmark", "--asv-config", "-k", "--filter"}


def test_fail_on_offers_each_verb_the_words_its_gate_accepts():
    """``--help`` lists the words the verb's gate (analysis/gate.py) accepts, no others, and each one parses."""
    sets = {verb: tuple(o.type.choices) for verb, command in commands().items() for o in visible_options(command)
            if o.name == "fail_on"}
    assert sets == ACCEPTS
    for verb, words in sets.items():
        option = next(o for o in visible_options(commands()[verb]) if o.name == "fail_on")
        ctx = click.Context(commands()[verb], info_name=verb)
        assert [option.type.convert(w, option, ctx) for w in words] == list(words)
        help_text = commands()[verb].get_help(ctx)
        assert f"[{'|'.join(words)}]" in help_text
        assert {w for w in WORDS if f"{w}:" in help_text} == set(words), verb


def test_detect_accepts_fail_on_suspected_as_its_help_and_reference_say(tmp_path):
    assert run_cli("db", "upgrade", "--db", str(tmp_path / "s.db"), cwd=tmp_path).returncode == 0
    proc = run_cli("detect", "--fail-on", "suspected", "--db", str(tmp_path / "s.db"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("args, old, new, reached", [
    (["list", "benchmarks", "--benchmark", "x"], "--benchmark", "-b/--bench", "no store at"),
    (["detect", "--dry-run", "--benchmark", "x"], "--benchmark", "-b/--bench", "no store at"),
    (["publish", "-o", "site", "--asv-config", "missing.json"], "--asv-config", "--config", "missing.json: no such"),
])
def test_an_old_spelling_still_works_with_a_one_line_note(tmp_path, args, old, new, reached):
    proc = run_cli(*args, "--db", str(tmp_path / "none.db"), cwd=tmp_path)
    notes = [line for line in proc.stderr.splitlines() if "deprecated" in line]
    assert notes == [f"mmtrack: {old} is deprecated and will be removed in the next release; use {new}"]
    # The value reached the command, which then stops at what this folder lacks (a store, the named config).
    assert proc.returncode == 2 and reached in proc.stderr


def test_a_verdict_a_verb_cannot_give_is_refused_before_any_work(tmp_path):
    proc = run_cli("detect", "--fail-on", "failed", "--db", str(tmp_path / "none.db"), cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --fail-on failed: python -m mmtrack detect gives no 'failed' verdict; use regression or suspected or drift"]


def test_the_old_and_new_spelling_together_are_refused(tmp_path):
    proc = run_cli("list", "benchmarks", "-b", "x", "--benchmark", "y", "--db", str(tmp_path / "none.db"), cwd=tmp_path)
    assert proc.returncode == 2 and "name the same option; give -b/--bench once" in proc.stderr


def test_every_option_is_declared_once_in_cli_options():
    """No verb spells an option itself: ``click.option`` appears only where a declaration becomes a decorator, and a
    flag declared a second time is refused."""
    import ast
    from pathlib import Path

    from mmtrack import cli_options

    package = Path(cli_options.__file__).parent
    calls = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "option"
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "click"):
                calls.append(f"{path.relative_to(package)}:{node.lineno}")
    assert len(calls) == 2 and all(c.startswith("cli_options.py:") for c in calls), calls  # Option() and aliases
    declared = {}
    for option in cli_options.DECLARED.values():
        declared.setdefault(id(option), option)
    every_flag = [f for o in declared.values() for f in (*o.flags, *(g for old in o.old for g in old))]
    assert len(every_flag) == len(set(every_flag))
    with pytest.raises(AssertionError, match="--db declared twice"):
        cli_options.declare("--db", dest="db_again")
    shown = {flag for command in commands().values() for p in command.params if isinstance(p, click.Option)
             for flag in p.opts if flag not in ("-h", "--help", "--version") and not flag.startswith("--_")}
    assert shown <= set(cli_options.DECLARED), sorted(shown - set(cli_options.DECLARED))


def test_every_choice_help_offers_is_accepted():
    for verb, command in commands().items():
        ctx = click.Context(command, info_name=verb)
        for option in visible_options(command):
            if isinstance(option.type, click.Choice):
                assert [option.type.convert(c, option, ctx) for c in option.type.choices] == list(option.type.choices)


def test_the_defaults_help_names_are_the_ones_the_verbs_use():
    from mmtrack.ab.rule import AB_THRESHOLD, ROUND_ALPHA
    from mmtrack.analysis.compare import HISTORY_WINDOW
    from mmtrack.analysis.detect import DetectPolicy
    from mmtrack.analysis.policy import ComparePolicy
    from mmtrack.commands.continuous import DEFAULT_ROUNDS
    from mmtrack.commands.run import CONFIRM_ROUNDS
    from mmtrack.measure.runner import RunOptions

    def option(verb: str, name: str) -> click.Option:
        return next(p for p in commands()[verb].params if p.name == name)

    def says(verb: str, name: str) -> str:
        return " ".join((option(verb, name).help or "").split())

    assert f"default {ComparePolicy().threshold:g}; counters {ComparePolicy().counter_threshold:g}" in says(
        "compare", "min_effect")
    assert f"default {DetectPolicy().min_effect:g})" in says("detect", "min_effect")
    assert f"default {DetectPolicy().alpha:g})" in says("detect", "alpha")
    assert f"default {AB_THRESHOLD:g}," in says("continuous", "min_effect")
    for verb in ("continuous", "bisect", "run"):
        assert f"default {ROUND_ALPHA:g}" in says(verb, "round_alpha")
    assert option("compare", "history").default == HISTORY_WINDOW
    assert option("continuous", "rounds").default == DEFAULT_ROUNDS
    assert f"default {CONFIRM_ROUNDS};" in says("run", "confirm_rounds")
    engine = RunOptions()
    for name in ("warm_up", "duration", "min_samples", "max_samples"):
        assert f"(default {getattr(engine, name):g})" in says("bench", name), name


@pytest.mark.parametrize("args, old, new", [
    (["compare", "a", "b", "--threshold", "0.2"], "--threshold", "--min-effect"),
    (["continuous", "main", "--factor", "1.1"], "--factor", "--min-effect (a relative effect: --factor 1.05 is "
                                                          "--min-effect 0.05)"),
])
def test_the_old_spellings_of_the_minimum_effect_still_work(tmp_path, args, old, new):
    proc = run_cli(*args, "--db", str(tmp_path / "none.db"), cwd=tmp_path)
    notes = [line for line in proc.stderr.splitlines() if "deprecated" in line]
    assert notes == [f"mmtrack: {old} is deprecated and will be removed in the next release; use {new}"]
    assert proc.returncode == 2  # then stopped by what this folder lacks: a store, a project


def test_continuous_min_effect_is_the_threshold_its_factor_was():
    from mmtrack.ab.rule import AB_THRESHOLD
    from mmtrack.commands.continuous import policy_for
    from mmtrack.errors import UserError

    assert policy_for(None).threshold == AB_THRESHOLD  # neither given: the default, unchanged
    assert policy_for(None, None, 0.1).threshold == 0.1
    assert policy_for(1.1).threshold == pytest.approx(0.1)  # the old spelling, as before
    for bad in (0.0, -0.1, float("nan")):
        with pytest.raises(UserError, match="--min-effect"):
            policy_for(None, None, bad)
