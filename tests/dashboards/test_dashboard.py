"""The generated dashboard: committed as generated, valid for the SDK's schema, and what the experiment needs."""

import json
import re
import sys

import pytest
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import dashboard as model
from matplotlib.colors import to_hex

from retrystorm.chaos.annotations import TAGS, trigger_tags
from retrystorm.cli import main
from retrystorm.dashboards import experiment, promql
from retrystorm.dashboards.files import DASHBOARD_DIR, GENERATORS, generated, load, stale_dashboards, write_dashboards
from retrystorm.dashboards.queries import annotation_queries, iter_panels, panel_queries
from retrystorm.experiment.report.panels import TRIGGER_COLOURS

#: The issue's list, each with words its title must contain.
REQUIRED_PANELS = {
    "in flight and modelled delay": "retrystorm_target_in_flight_requests",
    "requests ended per second": "retrystorm_target_requests_total",
    "attempts per second by outcome": "retrystorm_client_attempts_started_total",
    "goodput": 'retrystorm_client_requests_total{strategy=~"$strategy", outcome="ok"}',
    "latency p50 / p99": "histogram_quantile(0.99, sum by (strategy, le) (rate(",
    "users in backoff": "retrystorm_client_users_in_backoff",
    "amplification": "retrystorm_client_attempts_started_total",
    "budget refusals": "retrystorm_client_budget_refusals_total",
    "Outages": "retrystorm_chaos_outage_active",
    "Triggers in force": "retrystorm_target_capacity_ratio",
}
#: Each trigger kind's metric (the metrics reference), as its annotation query and its timeline row read it.
TRIGGER_METRICS = {
    "pause": ["retrystorm_chaos_outage_active"],
    "slow": ["retrystorm_target_capacity_ratio", "retrystorm_chaos_throttle_active"],
    "spike": ['retrystorm_client_load_factor{strategy=~"$strategy"}'],
    "errors": ["retrystorm_target_injected_error_probability"],
}


@pytest.fixture(scope="module")
def board():
    return experiment.dashboard_json()


def test_committed_dashboard_is_what_the_generator_writes():
    assert GENERATORS, "no dashboard generators"
    stale = stale_dashboards()
    assert not stale, f"{stale} differ from the code: run `retrystorm dashboards build` (never edit the JSON by hand)"
    assert sorted(path.name for path in DASHBOARD_DIR.glob("*.json")) == sorted(generated())


def test_build_writes_and_check_catches_a_hand_edit(tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["dashboards", "build", "--out", str(tmp_path)])
    assert done.value.code == 0
    written = tmp_path / "retrystorm.json"
    assert written.read_text() == (DASHBOARD_DIR / "retrystorm.json").read_text()
    with pytest.raises(SystemExit) as done:
        main(["dashboards", "build", "--out", str(tmp_path), "--check"])
    assert done.value.code == 0
    written.write_text(written.read_text().replace("Clients: goodput", "Clients: throughput"))
    with pytest.raises(SystemExit) as done:
        main(["dashboards", "build", "--out", str(tmp_path), "--check"])
    assert done.value.code == 1
    assert "run `retrystorm dashboards build`" in " ".join(capsys.readouterr().out.split())


def test_the_sdk_reads_back_every_field(board):
    """Every field is one the foundation SDK's Grafana 11.6 model knows, but the Prometheus annotation options."""
    again = json.loads(json.dumps(model.Dashboard.from_json(board), cls=JSONEncoder))
    extras = {"step", "titleFormat", "textFormat", "tagKeys", "useValueForTime"}
    expected = json.loads(json.dumps(board))
    expected["annotations"]["list"] = [
        {k: v for k, v in entry.items() if k not in extras} for entry in expected["annotations"]["list"]
    ]
    assert again == expected


def test_panels_of_the_issue_are_there_with_their_metrics(board):
    queries = panel_queries(board)
    for words, needle in REQUIRED_PANELS.items():
        matching = [query for query in queries if words in query.panel]
        assert matching, f"no panel titled with {words!r}"
        assert any(needle.replace("$strategy", ".*") in query.expr for query in matching), (words, matching)


def test_every_panel_has_a_prometheus_query_on_the_provisioned_datasource(board):
    panels = list(iter_panels(board))
    assert len(panels) >= len(REQUIRED_PANELS)
    for panel in panels:
        assert panel["datasource"] == {"type": "prometheus", "uid": "prometheus"}, panel["title"]
        assert panel["targets"], f"panel {panel['title']!r} has no query"
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert len(set(ref_ids)) == len(ref_ids), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "prometheus"
            assert target["expr"].strip()


def test_client_panels_select_the_strategy_variable_everywhere(board):
    client_selectors = 0
    for panel in iter_panels(board):
        for target in panel["targets"]:
            for found in re.finditer(r"retrystorm_client_\w+(\{[^}]*\})?", target["expr"]):
                client_selectors += 1
                assert found.group(1) and 'strategy=~"$strategy"' in found.group(1), (panel["title"], target["expr"])
    assert client_selectors >= 8


def test_rates_use_the_rate_interval_and_quantiles_sum_buckets_first(board):
    exprs = [target["expr"] for panel in iter_panels(board) for target in panel["targets"]]
    windows = re.findall(r"rate\([^\[]*\[([^\]]+)\]\)", " ".join(exprs))
    assert windows and set(windows) == {"$__rate_interval"}
    quantiles = [expr for expr in exprs if "histogram_quantile" in expr]
    assert len(quantiles) == 2
    for expr in quantiles:
        assert re.fullmatch(r"histogram_quantile\(0\.\d+, sum by \([^)]*\ble\b[^)]*\) \(rate\(\w+_bucket\{.*", expr)


def test_strategy_variable_lists_the_client_strategies_with_all_as_any(board):
    (variable,) = board["templating"]["list"]
    assert variable["name"] == "strategy"
    assert variable["query"] == "label_values(retrystorm_client_attempts_total, strategy)"
    assert variable["includeAll"] and variable["multi"] and variable["allValue"] == ".*"
    assert variable["datasource"]["uid"] == "prometheus"


def test_outages_are_an_annotation_query_and_a_state_timeline(board):
    by_name = {entry["name"]: entry for entry in board["annotations"]["list"]}
    metric = by_name["Outages (chaos metric)"]
    assert metric["datasource"]["uid"] == "prometheus" and metric["enable"]
    assert promql.CHAOS_OUTAGE_ACTIVE in metric["expr"]
    assert metric["step"] == "1s", "Grafana's default 60 s step would miss short outages"
    posted = by_name["Outages (posted by the chaos controller)"]
    assert posted["datasource"]["uid"] == "-- Grafana --"
    assert posted["target"]["type"] == "tags" and set(posted["target"]["tags"]) == set(TAGS)
    timelines = [panel for panel in iter_panels(board) if panel["type"] == "state-timeline"]
    outages = next(panel for panel in timelines if panel["title"] == "Outages")
    (mapping,) = outages["fieldConfig"]["defaults"]["mappings"]
    assert mapping["options"]["1"] == {"text": "paused", "color": "red"}


def test_every_trigger_kind_has_its_metric_annotation_and_posted_annotation_in_its_plot_colour(board):
    by_name = {entry["name"]: entry for entry in board["annotations"]["list"]}
    names = {
        "pause": ("Outages (chaos metric)", "Outages (posted by the chaos controller)"),
        "slow": ("Slow (target and chaos metrics)", "Slow (posted by retrystorm run)"),
        "spike": ("Spike (client metric)", "Spike (posted by retrystorm run)"),
        "errors": ("Errors (target metric)", "Errors (posted by retrystorm run)"),
    }
    assert set(names) == set(TRIGGER_COLOURS) == {trigger.kind for trigger in experiment.TRIGGERS}
    for kind, (metric_name, posted_name) in names.items():
        colour = to_hex(TRIGGER_COLOURS[kind])
        metric, posted = by_name[metric_name], by_name[posted_name]
        assert metric["iconColor"] == posted["iconColor"] == colour, kind
        assert metric["datasource"]["uid"] == "prometheus" and metric["enable"] and metric["step"] == "1s"
        assert all(needle in metric["expr"] for needle in TRIGGER_METRICS[kind]), (kind, metric["expr"])
        assert posted["datasource"]["uid"] == "-- Grafana --"
        assert posted["target"]["tags"] == list(trigger_tags(kind)) and not posted["target"]["matchAny"]
    assert len(annotation_queries(board)) == len(names)  # one Prometheus annotation query per kind


def test_the_trigger_timeline_has_a_row_per_kind_in_its_colour(board):
    (timeline,) = [panel for panel in iter_panels(board) if panel["title"] == "Triggers in force"]
    rows = {target["legendFormat"]: target for target in timeline["targets"]}
    assert list(rows) == ["pause", "slow", "spike", "errors"]
    colours = {}
    for override in timeline["fieldConfig"]["overrides"]:
        kind = next(k for k, target in rows.items() if target["refId"] == override["matcher"]["options"])
        (mappings,) = [prop["value"] for prop in override["properties"] if prop["id"] == "mappings"]
        colours[kind] = mappings[0]["options"]["1"]["color"]
        assert mappings[0]["options"]["0"]["color"] == "transparent"
    assert colours == {kind: to_hex(colour) for kind, colour in TRIGGER_COLOURS.items()}
    for kind, target in rows.items():
        assert all(needle in target["expr"] for needle in TRIGGER_METRICS[kind]), (kind, target["expr"])
        assert target["expr"].endswith(" or vector(0)"), "a row (and data) even before any trigger"


def test_layout_fits_the_grid_without_overlaps(board):
    ids = [panel["id"] for panel in board["panels"]]
    assert len(set(ids)) == len(ids)
    cells = set()
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
        area = {
            (x, y) for x in range(grid["x"], grid["x"] + grid["w"]) for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & area, f"{panel['title']} overlaps another panel"
        cells |= area
    assert board["uid"] == experiment.UID and board["schemaVersion"] >= 39


def test_write_dashboards_round_trips(tmp_path):
    (path,) = write_dashboards(tmp_path)
    assert load(path) == experiment.dashboard_json()
    assert not stale_dashboards(tmp_path)


@pytest.mark.live  # a fresh interpreter: what an import pulls in
def test_dashboards_package_imports_no_locust():
    """The chaos controller imports retrystorm.chaos.annotations -> dashboards: no gevent patching may come along."""
    import subprocess

    code = (
        "import sys, retrystorm.chaos.annotations, retrystorm.dashboards.experiment, retrystorm.dashboards.queries; "
        "print('locust' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "False"
