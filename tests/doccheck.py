"""Run the commands the user docs show and check the output they show (tests/test_docs.py drives it).

A page's ``console`` blocks hold ``$ command`` lines, each followed by the output the reader is told to
expect. They run in order, in one scratch folder per page that looks like a clone (its top-level files
and folders are links to this checkout's), with a fresh HOME and ``mmtrack`` meaning this checkout.
Output is matched as doctest matches it: whitespace runs are equal, ``...`` stands for anything (timings,
paths of the scratch folder). A last output line ``(exit N)`` is the exit status the command must give;
without it, the status must be 0.

A command block that this module does not run says so in an HTML comment on the line above its fence:
``<!-- doccheck: run by PATH -->`` (that file runs it and names the page) or
``<!-- doccheck: not run: REASON -->``. A page that holds ``<!-- doccheck: slow -->`` runs with the slow tests.
"""

from __future__ import annotations

import doctest
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The user docs whose commands must run: the README, the guide and the reference.
USER_DOCS = [REPO / "README.md", *sorted((REPO / "docs" / "guide").glob("*.md")),
             *sorted((REPO / "docs" / "reference").glob("*.md"))]
COMMAND_LANGUAGES = {"console", "bash", "sh", "shell"}
MARKER = re.compile(r"<!--\s*doccheck:\s*(.*?)\s*-->")
EXIT_LINE = re.compile(r"^\(exit (\d+)\)$")
MATCHING = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
#: Top-level entries of the checkout a scratch folder does not link: what commands write, and git's own.
NOT_LINKED = {".git", ".mmtrack", ".asv", "site"}


@dataclass
class Command:
    line: str
    expected: list[str] = field(default_factory=list)

    @property
    def expected_exit(self) -> int:
        found = EXIT_LINE.match(self.expected[-1].strip()) if self.expected else None
        return int(found.group(1)) if found else 0

    @property
    def expected_output(self) -> str:
        lines = self.expected[:-1] if self.expected and EXIT_LINE.match(self.expected[-1].strip()) else self.expected
        return "\n".join(lines).strip()


@dataclass
class Block:
    page: Path
    line_no: int  # of the opening fence, 1-based
    language: str
    body: list[str]
    marker: str | None

    @property
    def is_command_block(self) -> bool:
        return self.language in COMMAND_LANGUAGES or any(line.startswith("$ ") for line in self.body)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line_no}"

    def commands(self) -> list[Command]:
        """``$ `` lines with the output under each; a block without prompts is one command per line."""
        if not any(line.startswith("$ ") for line in self.body):
            return [Command(line) for line in self.body if line.strip() and not line.lstrip().startswith("#")]
        commands: list[Command] = []
        for line in self.body:
            if line.startswith("$ "):
                commands.append(Command(line[2:]))
            elif commands:
                commands[-1].expected.append(line)
        return commands


def fenced_blocks(page: Path) -> list[Block]:
    """Every fenced block of a Markdown page, with the doccheck marker just above it, if any."""
    blocks, lines = [], page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(```+)\s*([\w-]*)", lines[i])
        if not fence:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence.group(2)))
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = MARKER.search(above)
        indent = len(fence.group(1))
        body = [line[indent:] for line in lines[i + 1 : end]]
        blocks.append(Block(page, i + 1, fence.group(3).lower(), body, marker.group(1) if marker else None))
        i = end + 1
    return blocks


def command_blocks(page: Path) -> list[Block]:
    return [block for block in fenced_blocks(page) if block.is_command_block]


def is_slow(page: Path) -> bool:
    return any(m.group(1) == "slow" for m in MARKER.finditer(page.read_text(encoding="utf-8")))


def blocks_run_here(page: Path) -> list[Block]:
    return [block for block in command_blocks(page) if block.marker is None]


def scratch_clone(folder: Path) -> Path:
    """A folder that looks like a clone of this checkout: links to its top-level entries."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in REPO.iterdir():
        if entry.name not in NOT_LINKED:
            (folder / entry.name).symlink_to(entry)
    return folder


def user_environment(scratch: Path) -> dict[str, str]:
    """A user's shell: ``mmtrack`` is this checkout, HOME is fresh, no store or machine named beforehand."""
    bin_dir, home = scratch.parent / "bin", scratch.parent / "home"
    bin_dir.mkdir(exist_ok=True)
    home.mkdir(exist_ok=True)
    shim = bin_dir / "mmtrack"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m mmtrack "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MMTRACK_") and k not in {"CI", "COLUMNS"}}
    env.update(HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", COLUMNS="100",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])))
    return env


def mismatch(command: Command, returncode: int, output: str) -> str | None:
    """Why the real result differs from what the page shows, or None."""
    if returncode != command.expected_exit:
        return f"exit {returncode}, the page says {command.expected_exit}\n{output[-3000:]}"
    want = command.expected_output
    if want and not doctest.OutputChecker().check_output(want + "\n", output, MATCHING):
        return f"the page shows:\n{want}\nthe command printed:\n{output[-3000:]}"
    return None


def run_page(page: Path, scratch: Path, timeout: float = 600) -> list[str]:
    """Run every command of the page's unmarked blocks in order; one problem line per mismatch."""
    cwd, problems = scratch_clone(scratch), []
    env = user_environment(cwd)
    for block in blocks_run_here(page):
        for command in block.commands():
            proc = subprocess.run(["bash", "-c", command.line], cwd=cwd, env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True, timeout=timeout, check=False)
            why = mismatch(command, proc.returncode, proc.stdout)
            if why:
                problems.append(f"{block.where}: $ {command.line}: {why}")
    return problems
