"""Which machine class each asv machine folder of an import joins (see ``asvbridge.machine_class``).

A class is a ``machine`` row: every series, verb and page speaks of it; the host that ran a run is ``run.host``.
The plan is made once per import, before anything is written, from the store's classes and the folders' hardware:

- a folder imported before stays in its class;
- a folder a rule names joins the rule's class;
- else it joins the class of the same hardware, unless it holds 8 results files or more and most of them are files
  (commit and environment) the class holds already: then it is a second machine beside it (identical VMs measuring
  the same commits, or one box measuring two build modes), not a successor runner;
- else it founds a class named after itself. A class named after its founder is renamed to its hardware's slug
  once a second host joins it, so a single-host history keeps its machine name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from sqlalchemy import select, update

from ..asvbridge.machine_class import ClassRule, Hardware, hardware_of, rule_for
from . import schema as m
from .db import Store


@dataclass(slots=True)
class FolderFacts:
    """What the import knows of one machine folder before it writes."""

    host: str  # asv's machine name (machine.json's, else the first results file's params.machine, else the folder)
    info: dict[str, Any]  # machine.json, else the hardware keys of the first results file's params
    stems: set[str]  # its results files, named without a re-run's "@version" suffix


@dataclass(slots=True)
class _Class:
    name: str
    hardware: Hardware | None
    info: dict[str, Any]
    hosts: set[str] = field(default_factory=set)
    stems: set[str] = field(default_factory=set)
    ruled: bool = False
    stored: bool = False


@dataclass(slots=True)
class ClassPlan:
    by_folder: dict[str, str]  # machine folder -> class name
    info: dict[str, dict[str, Any]]  # class name -> the machine info to store
    renames: dict[str, str]  # stored class name -> its new name


def stem(file_name: str) -> str:
    """``abc-py3.8@12ef.json`` -> ``abc-py3.8``: one results file and its re-runs share a stem."""
    base = file_name[:-5] if file_name.endswith(".json") else file_name
    return base.split("@", 1)[0]


def _stored(store: Store) -> tuple[dict[str, str], dict[str, _Class]]:
    """The folder -> class name of every imported asv file, and the stored classes."""
    run, machine = m.Run.__table__, m.Machine.__table__
    classes: dict[str, _Class] = {}
    folders: dict[str, str] = {}
    with store.read() as conn:
        for row in conn.execute(select(machine.c.name, machine.c.info)):
            info = dict(row.info or {})
            classes[row.name] = _Class(row.name, hardware_of(info), info, stored=True,
                                       ruled=bool(info.get("class_rule")))
        rows = conn.execute(select(run.c.source, machine.c.name, run.c.host)
                            .join(machine, machine.c.id == run.c.machine_id).where(run.c.source.like("asv:%")))
        for source, name, host in rows:
            folder, _, file_name = source[4:].rpartition("/")
            folders[folder] = name
            cls = classes[name]
            cls.hosts.add(host)
            cls.stems.add(stem(file_name))
    for cls in classes.values():
        if not cls.stems:  # machines of engine runs only (bench --save, MMTRACK_MACHINE): named by the user, kept
            cls.hardware = None
    return folders, classes


def plan_classes(store: Store, folders: Sequence[str], facts_of: Callable[[str], FolderFacts],
                 rules: Sequence[ClassRule]) -> ClassPlan:
    """The class of each of ``folders``; ``facts_of`` is asked only about folders new to the store."""
    by_folder, classes = _stored(store)
    for folder in sorted(set(folders)):
        if folder in by_folder:
            continue
        facts = facts_of(folder)
        cls = _choose(facts, classes, rules)
        by_folder[folder] = cls.name
        cls.hosts.add(facts.host)
        cls.stems |= facts.stems
    renames = _renames(classes)
    for cls in classes.values():
        if cls.name in renames:
            cls.info = {**cls.info, "machine_class": renames[cls.name]}
    info = {renames.get(c.name, c.name): c.info for c in classes.values()}
    return ClassPlan({f: renames.get(n, n) for f, n in by_folder.items()}, info, renames)


def _choose(facts: FolderFacts, classes: dict[str, _Class], rules: Sequence[ClassRule]) -> _Class:
    rule = rule_for(facts.host, rules)
    if rule is not None:
        cls = classes.get(rule.name)
        if cls is None:
            cls = classes[rule.name] = _Class(rule.name, hardware_of(facts.info), {**facts.info}, ruled=True)
        cls.info.setdefault("class_rule", rule.pattern)
        return cls
    hardware = hardware_of(facts.info)
    if hardware is not None:
        for cls in sorted(classes.values(), key=lambda c: c.name):
            if cls.ruled or cls.hardware != hardware:
                continue
            if not _twin(facts, cls):
                return cls
    name = facts.host
    while name in classes:  # a host that shares the name of a class it may not join
        name += "+"
    cls = classes[name] = _Class(name, hardware, dict(facts.info))
    return cls


TWIN_FILES = 8  # fewer results files: a host that could not make a series alone, never a machine beside the class


def _twin(facts: FolderFacts, cls: _Class) -> bool:
    """Whether the folder is a second machine of the class's hardware (it measured most of the class's files: the
    same commits in the same environments), not a successor runner. A CI runner that re-ran a few commits is a
    successor: its results are re-runs of those commits."""
    return len(facts.stems) >= TWIN_FILES and 2 * len(facts.stems & cls.stems) >= len(facts.stems)


def _renames(classes: dict[str, _Class]) -> dict[str, str]:
    """Classes still named after their founding host once they hold several: renamed to their hardware's slug."""
    taken = set(classes)
    renames = {}
    for cls in sorted(classes.values(), key=lambda c: c.name):
        if cls.ruled or cls.hardware is None or len(cls.hosts) < 2 or cls.name not in cls.hosts:
            continue
        new = base = cls.hardware.slug
        k = 2
        while new in taken:
            new, k = f"{base}-{k}", k + 1
        taken.add(new)
        renames[cls.name] = new
    return renames


def apply_renames(store: Store, renames: Mapping[str, str]) -> None:
    """Rename stored classes, and the verdicts stored under their old names, in one transaction."""
    if not renames:
        return
    tables = [(m.Machine.__table__, "name"), (m.ChangePointRow.__table__, "machine"),
              (m.RunVerdict.__table__, "machine"), (m.ABVerdict.__table__, "machine")]
    with store.write() as conn:
        for old, new in renames.items():
            for table, column in tables:
                conn.execute(update(table).where(table.c[column] == old).values({column: new}))
    store.__dict__.pop("_dim_cache", None)  # ids stay, but the cache is keyed by name
