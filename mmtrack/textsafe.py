"""Untrusted text (benchmark names, params, messages) made safe for one output format.

Benchmark names come from the code under test, so in CI they are attacker-controlled.
One helper per format, used by every renderer:

- :func:`term` for terminals: C0/C1 control characters (ESC, CSI, OSC, newlines ...), DEL and
  the Unicode bidi/line-separator controls are shown escaped (``\\x1b``), never emitted.
- :func:`md_code` for a name in markdown: a code span that cannot leave its table cell.
- :func:`md_text` for prose in markdown: HTML and markdown syntax shown literally.
- JSON needs nothing: ``json.dumps`` escapes what it must.
"""

from __future__ import annotations

import re

# C0 controls, DEL, C1 controls; bidi embeddings/overrides/isolates; line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_control(match: re.Match[str]) -> str:
    ch = match.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def term(text: object) -> str:
    """``text`` with every control character shown as an escape (``ESC[2K`` → ``\\x1b[2K``)."""
    return _CONTROL.sub(_escape_control, str(text))


_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def visible(text: str) -> str:
    """A whole rendered output (a table, a report, markdown, JSON) with every control character but the
    newline shown as ``\\uXXXX``: the last guard at the edge (terminal.py) for what a renderer missed. The
    escape is JSON's own, so a JSON document stays valid."""
    return _CONTROL_BUT_NEWLINE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def md_code(text: object) -> str:
    """``text`` as a markdown code span that stays inside a table cell.

    Inside a code span HTML (``<!--``) and markdown are literal; controls are escaped so a newline
    cannot end the row, ``|`` is escaped for GFM tables, and the fence is longer than any run of
    backticks in the text.
    """
    s = term(text).replace("|", "\\|")
    if not s:
        return ""
    longest = max((len(run) for run in re.findall("`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ")) else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def markup(text: object) -> str:
    """``text`` for a rich markup string: controls escaped (:func:`term`) and ``[`` not read as a tag."""
    from rich.markup import escape

    return escape(term(text))


MESSAGE_LIMIT = 1024  # characters of a message kept; a benchmark's exception text can be megabytes


_CUT_NOTE = re.compile(r"\.\.\. \[[\d,]+ more characters\]\Z")


def bounded(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut (``... [18,000,000 more characters]``).
    A text cut already is kept as it is: the count stays that of the original."""
    if len(text) <= limit or (len(text) <= limit + 40 and _CUT_NOTE.search(text)):
        return text
    return f"{text[:limit]}... [{len(text) - limit:,} more characters]"


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]#+~|])")


def md_text(text: object) -> str:
    """``text`` as literal markdown prose: controls escaped, ``< > &`` as entities, syntax backslashed."""
    s = term(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", s)


__all__ = ["term", "markup", "md_code", "md_text", "bounded", "visible"]
