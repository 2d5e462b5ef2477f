"""Write the option rows of docs/reference from the option declarations (mmtrack/cli_options.py).

Each command's section of its reference page gets one row per option its ``--help`` shows, in ``--help``'s order,
rendered by :func:`mmtrack.cli_options.reference_row`; the prose around the table is left alone.
tests/test_docs.py checks that the pages hold exactly these rows.

Usage: ``PYTHONPATH=$PWD python3 -m scripts.reference_rows [--check]``; with ``--check``, exit 1 if a page differs.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import click

from mmtrack.cli import cli
from mmtrack.cli_options import reference_row

REFERENCE = Path(__file__).resolve().parent.parent / "docs" / "reference"


def commands(group: click.Group = cli, prefix: str = "mmtrack") -> list[tuple[str, click.Command]]:
    found = []
    for name, command in sorted(group.commands.items()):
        if command.hidden:
            continue
        found.append((f"{prefix} {name}", command))
        if isinstance(command, click.Group):
            found += commands(command, f"{prefix} {name}")
    return found


def rows(command: click.Command) -> list[str]:
    return [reference_row(p) for p in command.params
            if isinstance(p, click.Option) and not p.hidden and p.name != "help"]


def rewritten(text: str, full_name: str, command: click.Command) -> str:
    """``text`` (a reference page) with the option rows under ``full_name``'s heading replaced."""
    heading = re.search(rf"^#+ `{re.escape(full_name)}`\s*$", text, re.MULTILINE)
    if heading is None:
        return text
    following = re.search(r"^#+ `mmtrack ", text[heading.end():], re.MULTILINE)
    end = heading.end() + following.start() if following else len(text)
    section = text[heading.end():end]
    lines = section.split("\n")
    header = next((i for i, line in enumerate(lines) if line.strip() == "| option | meaning |"), None)
    if header is None:
        return text
    first = header + 2  # after the |---|---| line
    last = first
    while last < len(lines) and lines[last].startswith("| `-"):
        last += 1
    lines[first:last] = rows(command)
    return text[:heading.end()] + "\n".join(lines) + text[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    differ = []
    for full_name, command in commands():
        page = REFERENCE / f"{full_name.split()[1]}.md"
        if not page.exists():
            continue
        text = page.read_text(encoding="utf-8")
        new = rewritten(text, full_name, command)
        if new != text:
            differ.append(page.name)
            if not args.check:
                page.write_text(new, encoding="utf-8")
    print(("differ: " if args.check else "rewritten: ") + (", ".join(sorted(set(differ))) or "none"))
    return 1 if args.check and differ else 0


if __name__ == "__main__":
    sys.exit(main())
