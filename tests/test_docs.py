"""The user docs say what the code does: the reference lists every command and option, every command the
README, the guide and the reference show runs (here, or in the test the page names), with the output shown."""

from __future__ import annotations

import re

import click
import pytest
from doccheck import REPO, USER_DOCS, blocks_run_here, command_blocks, fenced_blocks, is_slow, run_page

from scripts.reference_rows import commands  # every command and subcommand, by its full name

REFERENCE = REPO / "docs" / "reference"
FLAG = re.compile(r"`(--?[\w][\w-]*)")
#: Command blocks the docs show without running them, each for a reason a test cannot meet.
NOT_RUN = {  # docs/guide/postgresql-fleet.md: needs the user's PostgreSQL server (the store's tests use one)
    "pip install 'mmtrack-perf[postgres]'",
    "export MMTRACK_DB='postgresql+psycopg://mmtrack:SECRET@perf-db.internal:5432/mmtrack'",
    "export MMTRACK_MACHINE=ci-linux-x64-1",
    "mmtrack run",
}
#: Reference pages on the Python API for writing benchmarks, beside one page per command.
API_PAGES = {"perf", "cuda", "concurrent", "output", "instruments", "python-api"}
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def shown_flags(command: click.Command) -> set[str]:
    """The flags ``--help`` shows: every spelling of every option it lists."""
    return {flag for p in command.params if isinstance(p, click.Option) and not p.hidden and p.name != "help"
            for flag in [*p.opts, *p.secondary_opts]}


def reference_section(full_name: str) -> str:
    """The part of the command's reference page under its heading, up to the next heading of a command."""
    page = REFERENCE / f"{full_name.split()[1]}.md"
    assert page.exists(), f"{full_name} has no reference page {page.relative_to(REPO)}"
    text = page.read_text(encoding="utf-8")
    heading = re.search(rf"^#+ `{re.escape(full_name)}`\s*$", text, re.MULTILINE)
    assert heading, f"{page.relative_to(REPO)} has no heading `{full_name}`"
    rest = text[heading.end():]
    following = re.search(r"^#+ `mmtrack ", rest, re.MULTILINE)
    return rest[: following.start()] if following else rest


def option_rows(section: str) -> list[str]:
    return [line for line in section.splitlines() if line.startswith("| `-")]


@pytest.mark.parametrize("full_name,command", commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_reference_lists_every_option_help_shows(full_name, command):
    rows = option_rows(reference_section(full_name))
    documented = {flag for row in rows for flag in FLAG.findall(row.split("|")[1])}
    missing = shown_flags(command) - documented
    assert not missing, f"docs/reference: {full_name} lacks a row for {sorted(missing)} (see `{full_name} --help`)"


@pytest.mark.parametrize("full_name,command", commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_reference_lists_no_option_the_command_lacks(full_name, command):
    rows = option_rows(reference_section(full_name))
    documented = {flag for row in rows for flag in FLAG.findall(row.split("|")[1])}
    gone = documented - shown_flags(command)  # removed, or an old spelling kept hidden for a release
    assert not gone, f"docs/reference: {full_name} documents {sorted(gone)}, which `{full_name} --help` does not show"


@pytest.mark.parametrize("full_name,command", commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_reference_shows_the_usage_help_shows(full_name, command):
    usage = " ".join(command.collect_usage_pieces(click.Context(command, info_name=full_name)))
    assert f"{full_name} {usage}" in reference_section(full_name), f"docs/reference: {full_name}'s usage line drifted"


def test_every_reference_page_is_a_command():
    names = {full_name.split()[1] for full_name, _ in commands()}
    pages = {page.stem for page in REFERENCE.glob("*.md")} - {"README", "environment", *API_PAGES}
    assert pages <= names, f"docs/reference pages for no command: {sorted(pages - names)}"


def test_the_reference_index_links_every_command():
    index = (REFERENCE / "README.md").read_text(encoding="utf-8")
    missing = [name for name, _ in commands() if len(name.split()) == 2 and f"({name.split()[1]}.md)" not in index]
    assert not missing, f"docs/reference/README.md does not link {missing}"


def test_every_command_block_runs_somewhere():
    """A command block is run by this test (no marker), by the file its marker names, or is listed in NOT_RUN."""
    for page in USER_DOCS:
        for block in command_blocks(page):
            if block.marker is None or block.marker == "slow":
                continue
            if block.marker.startswith("run by "):
                runner = REPO / block.marker.removeprefix("run by ")
                assert runner.is_file(), f"{block.where}: {runner} does not exist"
                assert page.name in runner.read_text(encoding="utf-8"), f"{block.where}: {runner.name} never reads {page.name}"
            else:
                assert block.marker.startswith("not run: "), f"{block.where}: unknown doccheck marker {block.marker!r}"
                assert {c.line for c in block.commands()} <= NOT_RUN, f"{block.where}: a block not run must be in NOT_RUN"


PAGES_WITH_COMMANDS = [page for page in USER_DOCS if blocks_run_here(page)]


@pytest.mark.parametrize(
    "page",
    [pytest.param(p, marks=[pytest.mark.slow] if is_slow(p) else []) for p in PAGES_WITH_COMMANDS],
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_page_commands_print_what_the_page_shows(page, tmp_path):
    problems = run_page(page, tmp_path / "clone")
    assert not problems, "\n\n".join(problems)


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_python_the_docs_show_compiles(page):
    for block in fenced_blocks(page):
        if block.language == "python":
            compile("\n".join(block.body), block.where, "exec")


def test_readme_is_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the limit is 200 (details go to docs/)"


def test_current_design_pages_can_be_read_in_an_afternoon():
    """docs/design/ holds current decisions; logs go to docs/design/archive/ (issue 56: 25,000 words at most)."""
    words = sum(len(p.read_text(encoding="utf-8").split()) for p in (REPO / "docs" / "design").glob("*.md"))
    assert words <= 25_000, f"docs/design/*.md hold {words} words; move logs and figures to docs/design/archive/"


@pytest.mark.parametrize("page", USER_DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_user_docs_hold_no_dated_log_and_no_path_outside_a_clone(page):
    """Dates may appear only in output this test module checks against a real run (a run's start time)."""
    text = page.read_text(encoding="utf-8")
    assert "../shared" not in text and "/work/" not in text, f"{page.relative_to(REPO)} names a path a clone lacks"
    for block in blocks_run_here(page):
        text = text.replace("\n".join(block.body), "")
    assert not DATE.search(text), f"{page.relative_to(REPO)}: a dated record ({DATE.search(text).group()}) belongs in docs/design/"


@pytest.mark.parametrize("page", [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_reach_a_file(page):
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target):
            continue
        assert (page.parent / target).exists(), f"{page.relative_to(REPO)} links to {target}, which does not exist"


@pytest.mark.parametrize("full_name,command", commands(), ids=lambda v: v if isinstance(v, str) else "")
def test_reference_option_rows_are_rendered_from_the_declarations(full_name, command):
    """Each option row is what mmtrack/cli_options.py declares (flags, value, help, default), in --help's order;
    `python3 -m scripts.reference_rows` rewrites the rows after a change."""
    from scripts.reference_rows import rewritten

    page = REFERENCE / f"{full_name.split()[1]}.md"
    text = page.read_text(encoding="utf-8")
    assert rewritten(text, full_name, command) == text, f"{page.name}: run python3 -m scripts.reference_rows"
