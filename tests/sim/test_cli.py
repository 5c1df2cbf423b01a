"""``retrystorm sim``: JSON and CSV on stdout, files, exit codes, one-line errors."""

import csv
import io
import json
import os
import subprocess
import sys
import textwrap

import pytest

from retrystorm.loadgen.series_names import GAUGES, RATES
from tests.support.cli import run_cli

SMALL = textwrap.dedent(
    """\
    name: small
    model: exponential:limit=6,k=3
    load:
      users: 200
      think_time: exponential:10s
      attempt_timeout: 2s
      duration: 60s
    strategies:
      - fixed:100ms
      - EB=exponential:base=100ms,factor=2.7,max=1m,jitter=full
    faults:
      - {at: 20s, for: 10s}
    assertions:
      fixed:100ms:
        server_recovers_within: never
    """
).replace("- EB=exponential:base=100ms,factor=2.7,max=1m,jitter=full", "- {label: EB, strategy: exponential}")


def run(*args):
    return run_cli("sim", *args)


def run_in_a_process(*args, env):
    return subprocess.run(
        [sys.executable, "-m", "retrystorm", "sim", *args], capture_output=True, text=True, timeout=300, check=False,
        env=env,
    )  # fmt: skip


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    return path


def test_json_is_the_only_thing_on_stdout():
    result = run("smira", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["experiment"] == "smira"
    assert [row["strategy"] for row in document["results"]] == ["fixed:100ms", "smira"]
    fixed, smira = document["results"]
    assert fixed["server_recovery_s"] is None
    assert 0 < smira["server_recovery_s"] <= 15
    assert document["ok"] is True
    assert all(finding["holds"] for finding in document["findings"])


def test_smira_with_the_go_overflow():
    result = run("smira", "--overflow", "go", "--json")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert "7,792" in document["findings"][0]["text"]
    assert any("overflow=go" in choice for choice in document["choices"])


def test_run_a_scenario_file_as_csv(small):
    result = run("run", str(small), "--csv")
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [row["strategy"] for row in rows] == ["fixed:100ms", "EB"]
    assert int(rows[0]["attempts"]) > int(rows[1]["attempts"])


def test_out_folder_has_results_series_and_plots(small, tmp_path):
    folder = tmp_path / "out"
    result = run("run", str(small), "--out", str(folder), "--users", "100")
    assert result.returncode == 0, result.stderr
    assert "fixed:100ms" in result.stdout
    for name in ("timeseries.png", "requests.png"):
        assert (folder / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    series = list(csv.DictReader((folder / "timeseries.csv").read_text().splitlines()))
    assert len(series) == 2 * 60
    assert {"strategy", "t_s", *RATES, *GAUGES} <= set(series[0])  # the live runner's names
    assert json.loads((folder / "results.json").read_text())["results"][0]["strategy"] == "fixed:100ms"


@pytest.mark.live  # two interpreters, each with its own hash seed
def test_same_document_in_another_process(small):
    first = run_in_a_process("run", str(small), "--json", env={**os.environ, "PYTHONHASHSEED": "1"})
    second = run_in_a_process("run", str(small), "--json", env={**os.environ, "PYTHONHASHSEED": "2"})
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout


def test_a_failed_assertion_exits_1(small):
    text = small.read_text().replace("server_recovers_within: never", "server_recovers_within: 5s")
    small.write_text(text)
    result = run("run", str(small))
    assert result.returncode == 1
    assert "FAIL" in result.stdout
    assert "server_recovers_within 5s: measured never (FAIL)" in result.stdout


def test_ad_hoc_run_from_flags():
    result = run(
        "run", "--model", "fixed:base_delay=10ms", "--strategy", "none", "--users", "50",
        "--duration", "30s", "--outage", "5s@10s", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)["results"]
    assert row["strategy"] == "none"
    assert row["outages"] == [[10.0, 15.0]]


def test_contention_and_edge_json(small):
    result = run("contention", "--clients", "10,20", "--repetitions", "2", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["results"]
    assert {(row["strategy"], row["clients"]) for row in rows} >= {("none", 10), ("decorrelated", 20)}
    result = run("edge", str(small), "--max-outage", "40s", "--resolution", "5s", "--curve-points", "2", "--json")
    assert result.returncode == 0, result.stderr
    edges = {row["strategy"]: row["edge_s"] for row in json.loads(result.stdout)["results"]}
    assert set(edges) == {"fixed:100ms", "EB"}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["bogus"], "unknown experiment 'bogus'; valid: wyegelwel, smira, contention, edge, osdi22, brooker, run"),
        (["run"], "give a SCENARIO file, or at least one --strategy"),
        (["run", "--strategy", "bogus"], "unknown strategy 'bogus'; valid:"),
        (["run", "--strategy", "fixed", "--outage", "30s"], "expected FOR@AT like 30s@20s"),
        (["run", "no-such-file.yaml"], "no-such-file.yaml: cannot read the scenario"),
        (["run", "--strategy", "fixed", "--think-time", "exp:1s"], "command line: load.think_time: got 'exp:1s'"),
        (["run", "--strategy", "fixed", "--model", "queue:workers=0"], "workers: got 0, expected a whole number >= 1"),
        (
            ["run", "--strategy", "fixed", "--model", "fixed:base_delay=0", "--think-time", "constant:0"],
            "load.think_time constant:0s with model fixed:base_delay=0s: each user would send request after request",
        ),
        (["smira", "--json", "--csv"], "--json and --csv print to the same stdout"),
        (["contention", "--clients", "ten"], "expected a list like 10,50,100"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, expected):
    result = run(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert expected in lines[0]
    assert result.stdout == ""


def test_a_bad_scenario_names_its_line(small):
    small.write_text(small.read_text().replace("users: 200", "users: many"))
    result = run("run", str(small))
    assert result.returncode == 2
    assert f"{small}:4: load.users: got 'many'; expected a valid integer" in result.stderr
