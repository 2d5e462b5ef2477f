"""A concurrent benchmark's page in real headless Chromium: the roles' charts grouped under one heading each."""

from __future__ import annotations

import dataclasses


from mmtrack.measure.metrics import Direction
from mmtrack.publish import SiteConfig, bench_id, build_site
from benchmarks.synthetic_history import synthetic_model
from mmtrack.results import Measurement, MetricKey, SeriesKey, SeriesPoint
from test_publish_browser import browser, open_page, page, pytestmark, wait_charts  # noqa: F401  (fixtures)

BENCH = "concurrent.Scenario.track_readers_vs_writer"
METRICS = [
    (MetricKey("timing", "time_per_op", "s"), Direction.LOWER),
    (MetricKey("role:reader", "throughput", "ops/s"), Direction.HIGHER),
    (MetricKey("role:reader", "read_misses", "read_misses/op"), Direction.LOWER),
    (MetricKey("role:writer", "throughput", "ops/s"), Direction.HIGHER),
    (MetricKey("scenario", "queue_depth", "items"), Direction.LOWER),
]


def test_roles_are_grouped_on_the_benchmark_page(page, tmp_path) -> None:  # noqa: F811
    model = synthetic_model(1, 20, 1, seed=3, config=SiteConfig(title="roles"))
    series = dict(model.series)
    for metric, direction in METRICS:
        key = SeriesKey("ci-linux-x86", "env", BENCH, "{}", metric)
        series[key] = [SeriesPoint(c, i, Measurement(BENCH, {}, metric, direction, median=1.0 + i, q1=0.9 + i,
                                                     q3=1.1 + i, version="v1"))
                       for i, c in enumerate(model.commits)]
    model = dataclasses.replace(model, series=series)
    out = tmp_path / "site"
    build_site(model, out)
    open_page(page, out, f"b/{bench_id(BENCH)}.html")
    charts = wait_charts(page, len(METRICS))
    assert all(c["points"] == 20 for c in charts)
    # Headings and charts in page order: each role's charts follow its heading, the timing comes first.
    order = page.evaluate("""() => Array.from(document.querySelectorAll('#charts > *')).map(e =>
        e.tagName === 'H3' ? 'h3:' + e.textContent : 'chart:' + e.querySelector('.gtitle').textContent)""")
    headings = [o for o in order if o.startswith("h3:")]
    assert headings == ["h3:role reader", "h3:role writer", "h3:scenario"]
    assert order[0].startswith("chart:timing")
    reader = order.index("h3:role reader")
    assert order[reader + 1].startswith("chart:role:reader") and order[reader + 2].startswith("chart:role:reader")
    assert order[order.index("h3:role writer") + 1].startswith("chart:role:writer")
    page.screenshot(path=str(tmp_path / "roles.png"), full_page=True)
    assert page.problems == []
