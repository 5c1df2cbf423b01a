"""The run folder: results.json in the simulator's shape, timeseries.csv, the report when installed."""

import csv
import json

from retrystorm.runner.outputs import live_curves, run_document, write_run
from retrystorm.runner.record import analyse


def test_results_json_and_timeseries_csv(tmp_path, small, record_of, storm_run, recovered_run):
    records = [record_of("fixed:100ms", storm_run), record_of("smira", recovered_run)]
    results = [analyse(record, small.assertions[record.label]) for record in records]
    document = run_document(small.name, results, records, {"scenario": "small", "seed": 1})
    written = write_run(tmp_path, document, records)
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["experiment"] == "small"
    assert saved["ok"] is True
    assert [row["strategy"] for row in saved["results"]] == ["fixed:100ms", "smira"]
    for key in ("attempts", "amplification", "latency_p99", "peak_in_flight", "server_recovery_s", "client_recovery_s"):
        assert key in saved["results"][0]
    assert saved["results"][0]["server_recovery_s"] is None
    assert saved["run"]["strategies"]["smira"]["target"].startswith("target on")
    rows = list(csv.DictReader((tmp_path / "timeseries.csv").read_text().splitlines()))
    assert len(rows) == 2 * 40
    assert rows[0]["strategy"] == "fixed:100ms" and rows[0]["t_s"] == "1.0"
    assert rows[40 + 27]["in_flight"] == "10.0"
    names = [path.name for path in written]
    assert names[:2] == ["results.json", "timeseries.csv"]
    assert {"report.html", "comparison.png"} <= set(names)
    assert sum(name.startswith("strategy-") and name.endswith(".png") for name in names) == 2
    assert all(path.is_file() for path in written)


def test_the_scenarios_description_heads_the_report(tmp_path, small, record_of, storm_run):
    record = record_of("smira", storm_run)
    results = [analyse(record, small.assertions["smira"])]
    document = run_document(small.name, results, [record], {}, description="Why the storm never ends.")
    write_run(tmp_path, document, [record])
    assert document["description"] == "Why the storm never ends."
    assert "<p>Why the storm never ends.</p>" in (tmp_path / "report.html").read_text()


def test_a_failed_assertion_makes_the_document_not_ok(small, record_of, storm_run):
    record = record_of("smira", storm_run)
    document = run_document(small.name, [analyse(record, small.assertions["smira"])], [record], {})
    assert document["ok"] is False


def test_live_curves_use_the_outages_as_they_happened(record_of, recovered_run):
    from retrystorm.experiment.scenario import OutageWindow

    curves = live_curves(record_of("smira", recovered_run, [OutageWindow(20.02, 25.1)]))
    assert curves.outages == [(20.02, 25.1)]
    assert len(curves.times_s) == len(curves.goodput) == len(curves.in_flight) == 40
    assert curves.in_flight[20] is None
