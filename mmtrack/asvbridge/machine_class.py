"""Machine classes: the hardware an asv "machine" ran on, so that ephemeral host names fold into one machine.

asv names a machine after its host. GitHub-hosted runners and containers get a new host name per run, so one
runner image becomes hundreds of "machines" of one commit each. A class is what the hardware and OS say, read from
``machine.json`` or the results' ``params`` (the same keys): CPU model, cores, architecture, OS and kernel flavour
(``Linux 6.5.0-1025-azure`` -> ``linux-azure``), RAM rounded to a power of two GiB. The host stays a run attribute.

Users name, merge and split classes with rules ``CLASS=GLOB`` (``--machine-class``, or ``machine_classes`` in
asv.conf.json): hosts whose name matches ``GLOB`` form the class ``CLASS``, whatever their hardware.
"""

from __future__ import annotations

import fnmatch
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..errors import EXIT_USAGE, UserError


@dataclass(frozen=True, slots=True)
class Hardware:
    """What makes two hosts one machine class."""

    cpu: str
    cores: str
    arch: str
    os: str  # family and kernel flavour, no version
    ram_gib: int | None  # a power of two, or None when unknown

    @property
    def slug(self) -> str:
        """A short class name: ``linux-azure-x86_64-amd-epyc-7763-4cpu-16gib``."""
        parts = [self.os, self.arch, _cpu_words(self.cpu), f"{self.cores}cpu" if self.cores else "",
                 f"{self.ram_gib}gib" if self.ram_gib else ""]
        return "-".join(p for p in parts if p) or "unknown"

    def describe(self) -> str:
        ram = f", {self.ram_gib} GiB" if self.ram_gib else ""
        cores = f", {self.cores} CPUs" if self.cores else ""
        return f"{self.cpu or 'unknown CPU'}{cores}, {self.arch or '?'}, {self.os or '?'}{ram}"


HARDWARE_KEYS = ("arch", "cpu", "num_cpu", "os", "ram")


def hardware_of(info: Mapping[str, Any]) -> Hardware | None:
    """The class signature of a host's ``machine.json`` (or a results file's params), or None when it names no CPU
    (such hosts are never folded automatically)."""
    cpu = " ".join(str(info.get("cpu") or "").split())
    if not cpu or cpu.lower() in ("unknown", "none"):
        return None
    return Hardware(cpu=cpu, cores=str(info.get("num_cpu") or "").strip(), arch=str(info.get("arch") or "").strip(),
                    os=os_family(str(info.get("os") or "")), ram_gib=ram_band(info.get("ram")))


def os_family(text: str) -> str:
    """``Linux 6.5.0-1025-azure`` -> ``linux-azure``; ``Darwin 19.6.0`` -> ``darwin``; ``ubuntu-20.04`` -> ``ubuntu``:
    the system and the kernel's flavour, never its version (runner images update the kernel every few weeks)."""
    words = text.strip().lower().split()
    if not words:
        return ""
    system = re.split(r"[-_ ]?\d", words[0], maxsplit=1)[0] or words[0]
    flavour = ""
    if len(words) > 1:
        tail = words[-1].rsplit("-", 1)
        if len(tail) == 2 and tail[1].isalpha():
            flavour = tail[1]
        elif ".el" in words[-1]:  # 3.10.0-693.21.1.el7.x86_64: the distribution release
            flavour = "el" + words[-1].split(".el", 1)[1].split(".", 1)[0].split("_", 1)[0]
    return "-".join(p for p in (system, flavour) if p)


_UNITS = {"": 1024, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3,
          "gib": 1024**3, "t": 1024**4, "tb": 1024**4}


def ram_band(value: Any) -> int | None:
    """RAM as asv records it (kB as a number, or "64GB") rounded to a power of two GiB: 7.0 and 7.1 GiB are
    one band (8), and so are the few hundred kB a runner's kernel keeps back."""
    found = re.fullmatch(r"\s*([\d.]+)\s*([a-zA-Z]*)\s*", str(value or ""))
    if not found:
        return None
    try:
        amount = float(found.group(1)) * _UNITS.get(found.group(2).lower(), 0)
    except ValueError:
        return None
    if amount <= 0:
        return None
    if not found.group(2) and amount >= 1024 * 10**10:  # a plain number too large for kB: bytes (as macOS reports)
        amount /= 1024
    return 2 ** max(0, round(math.log2(amount / 1024**3)))


_NOISE = re.compile(r"\((r|tm)\)|\bcpu\b|\bprocessor\b|@.*$|\b\d+-core\b", re.I)


def _cpu_words(cpu: str) -> str:
    words = re.sub(r"[^a-z0-9]+", "-", _NOISE.sub(" ", cpu).lower()).strip("-")
    return words[:60]


@dataclass(frozen=True, slots=True)
class ClassRule:
    """``CLASS=GLOB``: the hosts whose name matches GLOB (fnmatch, case-sensitive) form the class CLASS."""

    name: str
    pattern: str

    def matches(self, host: str) -> bool:
        return fnmatch.fnmatchcase(host, self.pattern)


def parse_rule(text: str, where: str = "--machine-class") -> ClassRule:
    name, sep, pattern = text.partition("=")
    if not sep or not name.strip() or not pattern.strip():
        raise UserError(f"{where} {text!r}: expected CLASS=HOST-GLOB, e.g. --machine-class 'gha-ubuntu=fv-az*'",
                        EXIT_USAGE)
    return ClassRule(name.strip(), pattern.strip())


def rules_from_config(config: Mapping[str, Any], where: str) -> list[ClassRule]:
    """``"machine_classes": {"CLASS": "GLOB" or ["GLOB", ...]}`` of an asv.conf.json (asv ignores keys it lacks)."""
    raw = config.get("machine_classes")
    if raw is None:
        return []
    if not isinstance(raw, dict):
        raise UserError(f"{where}: 'machine_classes' must map a class name to host globs", EXIT_USAGE)
    rules = []
    for name, patterns in raw.items():
        for pattern in [patterns] if isinstance(patterns, str) else patterns if isinstance(patterns, list) else [None]:
            if not isinstance(pattern, str) or not pattern:
                raise UserError(f"{where}: machine_classes[{name!r}] must be a host glob or a list of them",
                                EXIT_USAGE)
            rules.append(ClassRule(str(name), pattern))
    return rules


def rule_for(host: str, rules: Iterable[ClassRule]) -> ClassRule | None:
    """The first rule that matches ``host`` (the command line's come before the config's)."""
    return next((r for r in rules if r.matches(host)), None)
