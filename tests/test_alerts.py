"""Alerts (issue 59): change points grouped by cause, ids that survive re-detection, triage states that stick."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from conftest import cli_env, run_cli
from test_store_support import store_url  # noqa: F401

from benchmarks.synthetic_history import synthetic_model, write_asv_results
from mmtrack.analysis.alerts import Alert, Triage, alert_id, dismissed_series, group, queue_order, reconcile
from mmtrack.measure.metrics import Direction
from mmtrack.publish import SiteConfig
from mmtrack.results import ChangePoint, MetricKey, SeriesKey

SHAS = [f"{i:02d}" + "a" * 38 for i in range(20)]
POSITION = {s: i for i, s in enumerate(SHAS)}


def key(bench: str, machine: str = "m1", metric: str = "time_per_op") -> SeriesKey:
    return SeriesKey(machine, "py3.12", bench, "", MetricKey("timing", metric, "s"))


def cp(bench: str, before: int, after: int, ratio: float = 1.2, machine: str = "m1", **extra: object) -> ChangePoint:
    return ChangePoint(key(bench, machine), Direction.LOWER, "regression" if ratio > 1 else "improvement",
                       SHAS[before], SHAS[after], 1.0, ratio, ratio, p_value=1e-6, extra=extra)


# --------------------------------------------------------------------------- grouping


def test_overlapping_ranges_across_benchmarks_and_machines_form_one_alert_with_their_intersection():
    alerts = group([cp("a", 4, 5), cp("b", 3, 6, machine="m2"), cp("c", 4, 7, ratio=1.1), cp("d", 10, 11)],
                   POSITION)
    assert len(alerts) == 2
    first = alerts[0]
    assert {s.series.benchmark for s in first.series} == {"a", "b", "c"}
    assert (first.before_sha, first.after_sha) == (SHAS[4], SHAS[5])  # where every member agrees
    assert first.machines == ("m1", "m2") and first.agreeing_machines == ("m1", "m2")
    assert first.kind == "regression" and first.worst_ratio == pytest.approx(1.2)
    assert [s.series.benchmark for s in alerts[1].series] == ["d"]


def test_a_chain_of_neighbouring_ranges_does_not_grow_into_one_alert():
    alerts = group([cp("a", 0, 2), cp("b", 1, 3), cp("c", 2, 4)], POSITION)
    assert [[s.series.benchmark for s in a.series] for a in alerts] == [["a", "b"], ["c"]]


def test_an_alert_id_comes_from_its_earliest_range_and_first_series_whatever_the_order():
    points = [cp("b", 4, 5), cp("a", 4, 5), cp("c", 4, 5, machine="m2")]
    ids = {group(order, POSITION)[0].id for order in (points, points[::-1], points[1:] + points[:1])}
    assert ids == {alert_id(SHAS[4], SHAS[5], key("a"))}


def test_an_alert_every_member_of_which_follows_an_environment_event_is_explained_by_it():
    explained = group([cp("a", 4, 5, cause="environment", event="E1"), cp("b", 4, 5, cause="environment",
                                                                            event="E1")], POSITION)[0]
    mixed = group([cp("a", 4, 5, cause="environment", event="E1"), cp("b", 4, 5)], POSITION)[0]
    assert explained.explained and explained.events == ("E1",)
    assert not mixed.explained and mixed.events == ("E1",)


def test_a_suspected_change_forms_no_alert_until_the_next_commits_confirm_it():
    assert group([cp("a", 4, 5, state="suspected")], POSITION) == []
    assert len(group([cp("a", 4, 5, state="confirmed")], POSITION)) == 1


# --------------------------------------------------------------------------- the suite's false-alarm budget


def test_bh_keeps_what_scipy_false_discovery_control_keeps():
    from scipy.stats import false_discovery_control

    from mmtrack.analysis.budget import bh_kept

    rng = np.random.default_rng(5)
    for _ in range(200):
        k, m = int(rng.integers(1, 12)), int(rng.integers(12, 600))
        p = list(10 ** rng.uniform(-8, 0, k))
        padded = np.concatenate([p, np.ones(m - k)])  # the series without a change point at the commit
        want = list(false_discovery_control(padded, method="bh")[:k] <= 0.01)
        assert bh_kept(p, m, 0.01) == want


def test_the_budget_holds_back_a_lone_change_but_not_one_that_many_series_share():
    from mmtrack.analysis.budget import within_budget

    lone = [replace(cp("a", 4, 5), p_value=1e-5)]
    shared = [replace(cp(b, 4, 5), p_value=1e-5) for b in "abcdefghijkl"]
    unscored = [replace(cp("a", 4, 5), p_value=None)]
    family = {SHAS[5]: 500}
    kept, outcome = within_budget(lone, family, 0.001)
    assert kept == [] and outcome.held_back == lone and "held back 1" in outcome.describe()
    assert within_budget(shared, family, 0.001)[0] == shared  # 1e-5 <= 12 x 0.001 / 500; alone it needs 2e-6
    assert within_budget(unscored, family, 0.001)[0] == unscored  # the newest-commit rule's steps: no p-value
    assert within_budget(lone, family, None)[0] == lone


# --------------------------------------------------------------------------- ids and states across re-detection

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def stored(alerts: list[Alert], age: int = 0) -> list[Alert]:
    return [replace(a, created_at=T0 + timedelta(days=age + i)) for i, a in enumerate(alerts)]


def test_a_triaged_alert_keeps_its_id_and_state_when_a_new_series_joins_it():
    before = stored(group([cp("b", 4, 5)], POSITION))
    acked = [replace(before[0], triage=Triage("acknowledged", "bug 12", "alice", T0))]
    after = reconcile(group([cp("a", 4, 5), cp("b", 4, 5)], POSITION), acked, POSITION, now=T0)
    assert len(after) == 1 and after[0].id == before[0].id
    assert after[0].id != alert_id(SHAS[4], SHAS[5], key("a"))  # the stored id, not the one the new group derives
    assert after[0].triage == acked[0].triage and len(after[0].series) == 2


def test_two_stored_alerts_that_one_group_overlaps_merge_into_the_older_id():
    old = stored(group([cp("a", 3, 5)], POSITION), age=0) + stored(group([cp("b", 5, 7)], POSITION), age=5)
    old[1] = replace(old[1], triage=Triage("acknowledged", "", "bob", T0))
    # re-detection places both steps on one wider range
    after = reconcile(group([cp("a", 3, 7), cp("b", 4, 6)], POSITION), old, POSITION, now=T0)
    active = [a for a in after if a.active]
    assert len(active) == 1 and active[0].id == old[0].id and active[0].merged == (old[1].id,)
    assert active[0].state == "acknowledged"  # the untriaged older alert takes the triage the other was given
    gone = next(a for a in after if a.id == old[1].id)
    assert not gone.active and gone.merged_into == old[0].id


def test_a_stored_alert_that_splits_keeps_its_id_on_the_larger_part_and_the_other_says_where_it_came_from():
    wide = stored(group([cp("a", 2, 8), cp("b", 2, 8), cp("c", 2, 8)], POSITION))
    wide = [replace(wide[0], triage=Triage("invalid", "noise", "alice", T0))]
    after = reconcile(group([cp("a", 2, 4), cp("b", 2, 4), cp("c", 6, 8)], POSITION), wide, POSITION, now=T0)
    kept = next(a for a in after if a.id == wide[0].id)
    split = next(a for a in after if a.id != wide[0].id)
    assert {s.series.benchmark for s in kept.series} == {"a", "b"}
    assert split.split_from == wide[0].id and split.state == "invalid"


def test_an_alert_no_longer_detected_is_kept_inactive_and_comes_back_with_its_state():
    first = stored(group([cp("a", 4, 5)], POSITION))
    first = [replace(first[0], triage=Triage("wontfix", "", "carol", T0))]
    gone = reconcile([], first, POSITION, now=T0)
    assert [a.active for a in gone] == [False] and gone[0].state == "wontfix"
    back = reconcile(group([cp("a", 4, 5)], POSITION), gone, POSITION, now=T0)
    assert [(a.id, a.active, a.state) for a in back] == [(first[0].id, True, "wontfix")]


def test_the_queue_puts_untriaged_regressions_first_and_the_gate_skips_dismissed_alerts():
    alerts = stored(group([cp("a", 2, 3), cp("b", 6, 7, ratio=0.8), cp("c", 10, 11, ratio=1.5)], POSITION))
    alerts[2] = replace(alerts[2], triage=Triage("invalid"))
    assert [a.series[0].series.benchmark for a in queue_order(alerts)] == ["a", "b", "c"]
    assert dismissed_series(alerts) == {(key("c"), SHAS[11])}


# --------------------------------------------------------------------------- the store and the CLI


def history(tmp_path: Path, n_commits: int = 40):
    model = synthetic_model(6, n_commits, 3, seed=11, step_every=2, config=SiteConfig())
    return model, tmp_path / "results"


def run_update(results: Path, site: Path, url: str):
    from mmtrack.commands.publish import PublishRequest
    from mmtrack.commands.update import UpdateRequest, update

    return update(UpdateRequest(results, PublishRequest(out=site, db=url, title="t"), fail_on=("regression",)))


def test_an_alert_state_survives_three_updates(tmp_path, store_url):  # noqa: F811
    from mmtrack.commands.alerts import AlertsRequest, list_alerts, show_alert, triage_alert

    model, results = history(tmp_path)
    write_asv_results(results, model, commits=list(model.commits[:-3]))
    run_update(results, tmp_path / "site", store_url)
    queue = list_alerts(AlertsRequest(db=store_url))
    assert len(queue) == 3 and {a.state for a in queue} == {"untriaged"}
    assert all(len(a.series) == 3 for a in queue)  # each injected step moved its benchmark's three metrics
    target = queue[0]
    triage_alert(store_url, target.id[:6], "acknowledged", "bug 4711", who="alice")
    for commit in model.commits[-3:]:
        write_asv_results(results, model, commits=[commit])
        outcome = run_update(results, tmp_path / "site", store_url)
        assert commit.sha in outcome.imported.summary.commits
        now = {a.id: a for a in list_alerts(AlertsRequest(db=store_url))}
        assert set(now) == {a.id for a in queue}  # the same ids as the history grows
        assert (now[target.id].state, now[target.id].triage.who, now[target.id].triage.note) == (
            "acknowledged", "alice", "bug 4711")
    detail = show_alert(store_url, target.id)
    assert [(h["state"], h["who"]) for h in detail.history] == [("acknowledged", "alice")]


def test_invalid_alerts_do_not_fail_the_gate(tmp_path, store_url):  # noqa: F811
    from mmtrack.commands.alerts import AlertsRequest, list_alerts, triage_alert
    from mmtrack.commands.detect import DetectRequest, run_detect

    model, results = history(tmp_path)
    write_asv_results(results, model)
    run_update(results, tmp_path / "site", store_url)
    gate = DetectRequest(db=store_url, fail_on=("regression",))
    assert run_detect(gate).exit_code == 1
    regressions = [a for a in list_alerts(AlertsRequest(db=store_url)) if a.kind == "regression"]
    for a in regressions:
        triage_alert(store_url, a.id, "invalid" if a is not regressions[-1] else "wontfix", "noise", who="ci")
    assert run_detect(gate).exit_code == 0
    triage_alert(store_url, regressions[0].id, "acknowledged", who="ci")  # a real one again: the gate fails
    outcome = run_detect(gate)
    assert outcome.exit_code == 1
    assert {c.series for c in outcome.open_regressions} == {s.series for s in regressions[0].series}


def test_alerts_cli_lists_shows_and_triages_as_table_and_json(tmp_path):
    model, results = history(tmp_path)
    write_asv_results(results, model)
    db = f"sqlite:///{tmp_path / 's.db'}"
    updated = run_cli("update", str(results), "-o", str(tmp_path / "site"), "--db", db, "--title", "t")
    assert updated.returncode == 0, updated.stderr
    assert "false-alarm budget: BH at q=0.001 per commit" in updated.stdout, updated.stdout
    assert "alerts: 3 (3 untriaged, 0 explained by environment events)" in updated.stdout, updated.stdout
    listed = run_cli("alerts", "list", "--db", db, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    alerts = json.loads(listed.stdout)["alerts"]
    assert len(alerts) == 3 and all(a["state"] == "untriaged" and a["series_count"] == 3 for a in alerts)
    first = alerts[0]["id"]
    env = cli_env(USER="dana")
    marked = run_cli("alerts", "invalid", first, "-m", "runner noise", "--db", db, env=env)
    assert marked.returncode == 0 and f"alert {first}: invalid by dana (runner noise)" in marked.stdout
    table = run_cli("alerts", "list", "--db", db)
    assert table.returncode == 0 and "2 untriaged" in table.stdout
    rows = [line.split()[0] for line in table.stdout.splitlines() if line.strip()[:10] in {a["id"] for a in alerts}]
    assert rows[-1] == first  # the triaged alert goes last
    shown = json.loads(run_cli("alerts", "show", first, "--db", db, "--format", "json").stdout)
    assert shown["state"] == "invalid" and shown["history"][0]["who"] == "dana"
    only = json.loads(run_cli("alerts", "list", "--state", "invalid", "--db", db, "--format", "json").stdout)
    assert [a["id"] for a in only["alerts"]] == [first]


def test_detect_states_its_budget_in_json_and_turns_it_off_with_fdr_0(tmp_path):
    model, results = history(tmp_path)
    write_asv_results(results, model)
    db = f"sqlite:///{tmp_path / 's.db'}"
    assert run_cli("import-asv", str(results), "--db", db).returncode == 0
    on = json.loads(run_cli("detect", "--db", db, "--format", "json", "--no-progress").stdout)
    off = json.loads(run_cli("detect", "--db", db, "--format", "json", "--no-progress", "--fdr", "0").stdout)
    assert on["budget"]["fdr"] == 0.001 and off["budget"]["fdr"] is None
    assert len(on["alerts"]) == 3  # the injected 15-45% steps pass the budget
    bad = run_cli("detect", "--db", db, "--fdr", "2")
    assert bad.returncode == 2 and "--fdr 2 is out of range" in bad.stderr


@pytest.mark.parametrize("args", [("show", "nope"), ("ack", "nope"), ("list", "--state", "closed")])
def test_alerts_cli_unknown_id_or_state_is_one_line_and_exit_2(tmp_path, args):
    model, results = history(tmp_path, n_commits=12)
    write_asv_results(results, model)
    db = f"sqlite:///{tmp_path / 's.db'}"
    assert run_cli("import-asv", str(results), "--db", db).returncode == 0
    r = run_cli("alerts", *args, "--db", db)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
