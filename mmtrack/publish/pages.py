"""The site's pages in one place: the page template, the summary pages (``PAGES``: each one's name, link,
title and the step that fills its body) and the benchmark page."""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Callable

from .alerts_page import alert_queue_body
from .drift_page import drift_section
from .model import SiteModel
from .writer import SiteWriter

_BENCH_BODY = """<h1 class="bench-name">{name}</h1>
<section class="controls" id="selectors"></section>
<p class="hint" id="status">Loading…</p>
<section id="charts"></section>
<section id="commit-detail" class="detail" hidden></section>
<section id="profiles-section" hidden><h2>Callgrind profiles</h2>
<p class="hint">Kept by <code>--instrument callgrind</code>, in Valgrind's format: read them with callgrind_annotate
or KCachegrind.</p><ul id="profiles"></ul></section>
<section id="changes-section"><h2>Change points</h2><table class="grid" id="changes"></table></section>"""

_INDEX_BODY = """<h1>Benchmarks</h1>
<p class="summary" id="summary"></p>
<section class="controls">
<label>Search <input type="search" id="search" placeholder="benchmark name"></label>
<label>Machine <select id="machine"><option value="">all</option></select></label>
<label>Metric <select id="metric"><option value="">all</option></select></label>
<label>Sort <select id="sort"><option value="name">by name</option><option value="recent">latest change first</option>
<option value="size">largest change first</option></select></label>
<label><input type="checkbox" id="only-changes"> with changes only</label>
</section>
<table class="grid" id="benchmarks"></table>"""

_REGRESSIONS_BODY = """<h1>Regressions</h1>
<section class="controls">
<label>Search <input type="search" id="search" placeholder="benchmark name"></label>
<label>Show <select id="kind"><option value="regression">regressions</option>
<option value="improvement">improvements</option>
<option value="event">environment events (the run moved, not the code)</option>
<option value="">all changes</option></select></label>
<label>Machine <select id="machine"><option value="">all</option></select></label>
<label><input type="checkbox" id="persisting"> persisting only</label>
</section>
<p class="summary" id="summary"></p>
<table class="grid" id="regressions"></table>"""

_COMPARE_BODY = """<h1>Compare two commits</h1>
<section class="controls">
<label>Base <select id="commit-a"></select></label>
<label>Head <select id="commit-b"></select></label>
<label>Search <input type="search" id="search" placeholder="benchmark name"></label>
</section>
<p class="summary" id="summary"></p>
<table class="grid" id="compare"></table>"""




@dataclass(frozen=True, slots=True)
class SummaryPage:
    """One page of the site's header: ``<name>.html``, its link text, the words before the site's title in
    its title ("" for the index), and the step that fills its body from the model."""

    name: str
    nav: str
    heading: str
    body: Callable[[SiteModel], str]


#: The summary pages, in the order of the header's links.
PAGES = (
    SummaryPage("index", "Benchmarks", "", lambda model: _INDEX_BODY),
    SummaryPage("regressions", "Regressions", "Regressions",
                lambda model: _REGRESSIONS_BODY + drift_section(model.drift)),
    SummaryPage("alerts", "Alerts", "Alerts",
                lambda model: alert_queue_body(model.alerts, model.config.safe_commit_url)),
    SummaryPage("compare", "Compare commits", "Compare commits", lambda model: _COMPARE_BODY),
)

_PAGE = ("""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="stylesheet" href="{root}assets/site.css">
{head}<script src="{root}assets/site.js"></script>
<script src="{root}data/site.js"></script>
</head>
<body data-page="{page}" data-root="{root}"{attrs}>
<header class="top"><a class="brand" href="{root}index.html">{site}</a>
<nav>""" + "".join(f'<a href="{{root}}{p.name}.html">{p.nav}</a>' for p in PAGES) + """</nav></header>
<main>
{body}
</main>
<footer>Published by mmtrack. Works offline.</footer>
</body>
</html>
""")


def _page(page: str, title: str, site: str, body: str, *, root: str = "", head: str = "", attrs: str = "") -> str:
    return _PAGE.format(
        title=html.escape(title),
        site=html.escape(site),
        root=root,
        head=head,
        page=page,
        attrs=attrs,
        body=body,
    )



def write_pages(writer: SiteWriter, model: SiteModel) -> None:
    """Every summary page of ``PAGES``, filled from ``model``."""
    title = model.config.title
    for p in PAGES:
        page_title = f"{p.heading} · {title}" if p.heading else title
        writer.put(f"{p.name}.html", _page(p.name, page_title, title, p.body(model)))


def _bench_page(bench: str, bid: str, model: SiteModel) -> str:
    title = model.config.title
    return _page(
        "benchmark",
        f"{bench} · {title}",
        title,
        _BENCH_BODY.format(name=html.escape(bench)),
        root="../",
        head='<script src="../assets/plotly.min.js"></script>\n',
        attrs=f' data-bench="{bid}"',
    )


