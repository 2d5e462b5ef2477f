"""One spelling per option across verbs; the old spellings still work for one release and say so in one line."""

from __future__ import annotations

import click
import pytest
from conftest import run_cli

from mmtrack.cli import cli
from mmtrack.cli_options import FAIL_ON_CHOICES


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


def test_fail_on_has_one_choice_set_in_every_verb():
    sets = {verb: tuple(o.type.choices) for verb, command in commands().items() for o in visible_options(command)
            if o.name == "fail_on"}
    assert set(sets) >= {"bench", "run", "compare", "detect", "update", "continuous"}
    assert set(sets.values()) == {FAIL_ON_CHOICES}


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
        "error: --fail-on failed: python -m mmtrack detect gives no 'failed' verdict; use regression"]


def test_the_old_and_new_spelling_together_are_refused(tmp_path):
    proc = run_cli("list", "benchmarks", "-b", "x", "--benchmark", "y", "--db", str(tmp_path / "none.db"), cwd=tmp_path)
    assert proc.returncode == 2 and "name the same option; give -b/--bench once" in proc.stderr
