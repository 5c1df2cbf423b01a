"""``retrystorm map --live``: a cell along the simulated boundary run live, end to end (real target, real Locust).

Which cells are picked and how agreement is judged are tested without processes in
``tests/sim/map/test_confirm.py``; here one tiny map confirms one cell live and writes
the agreement into map.json, map.csv, the report and the terminal. Whether the live
verdict agrees is the finding, not the test: the test checks that it is recorded.
"""

import csv
import io
import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = [pytest.mark.live]

#: The seed server scaled down (limit 6, k 3) under 60 users at about 30 requests/s: a 1 s freeze recovers in
#: the simulator, an 8 s one tips fixed retries over. A live cell: 6 s steady, the freeze, 8 s after it.
TINY = textwrap.dedent(
    """\
    name: tiny-live
    model: exponential:limit=6,k=3
    load: {users: 60, spawn_rate: 60, think_time: exponential:2s, attempt_timeout: 1s, duration: 22s}
    strategies: [fixed:100ms]
    faults:
      - {pause: target, at: 6s, for: 8s}
    """
)


def map_cli(*args, cwd, timeout_s=240):
    return subprocess.run(
        [sys.executable, "-m", "retrystorm", "map", *map(str, args)],
        capture_output=True, text=True, timeout=timeout_s, check=False, cwd=cwd,
    )  # fmt: skip


def test_map_live_1_runs_a_boundary_cell_live_and_records_its_agreement(tmp_path):
    (tmp_path / "tiny.yaml").write_text(TINY)
    done = map_cli("tiny.yaml", "--vary", "faults[0].for=1s,8s", "--horizon", "8s", "--workers", "1",
                   "--out", "m", "--live", "1", cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "live: 1 cell along the simulated boundary, one after the other, about 32s in all" in done.stderr
    assert "[1/1] fixed:100ms at faults[0].for=8s: the tips side, about 32s" in done.stderr
    document = json.loads((tmp_path / "m" / "map.json").read_text())
    stuck, recovering = document["cells"][1], document["cells"][0]
    assert (stuck["verdict"], recovering["verdict"]) == ("metastable", "recovers")  # the simulated boundary
    assert recovering["agreement"] is None
    found = stuck["agreement"]
    assert found["side"] == "tips" and found["server_simulated"] == "metastable"
    assert found["server_live"] in ("recovers", "metastable")
    assert found["server_agrees"] is (found["server_live"] == "metastable")
    assert (found["server_recovery_s_live"] is None) is (found["server_live"] == "metastable")
    assert document["live"]["cells"] == 1 and document["live"]["runs"][0]["at"] == {"faults[0].for": 8.0}
    live_run = json.loads((tmp_path / found["folder"] / "results.json").read_text())
    [row] = live_run["results"]
    assert row["strategy"] == "fixed:100ms" and row["requests"] > 0
    assert [outage[1] - outage[0] for outage in row["planned_outages"]] == [8.0]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "m" / "map.csv").read_text())))
    assert rows[1]["live_server_live"] == found["server_live"] and rows[0]["live_server_live"] == ""
    assert "Confirmed live" in (tmp_path / "m" / "report.html").read_text()
    assert "live: 1 of 1 cells" in done.stdout or "live: 0 of 1 cells" in done.stdout


def test_map_live_bad_values_are_one_line_and_exit_2(tmp_path):
    (tmp_path / "tiny.yaml").write_text(TINY)
    for value, message in (("-1", "-1 is not in the range 0<=x<=100"), ("x", "'x' is not a valid integer")):
        done = map_cli("tiny.yaml", "--vary", "faults[0].for=1s,8s", "--live", value, cwd=tmp_path)
        assert done.returncode == 2
        assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_map_live_dry_run_bounds_the_live_time_and_runs_nothing(tmp_path):
    (tmp_path / "tiny.yaml").write_text(TINY)
    done = map_cli("tiny.yaml", "--vary", "faults[0].for=1s,8s", "--horizon", "8s", "--live", "2", "--dry-run",
                   cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "up to 2 cells along the simulated boundary" in done.stdout and "at most 64s in all" in done.stdout
    assert not (tmp_path / "maps").exists()


def test_a_trigger_the_local_backend_cannot_play_live_is_refused_before_the_grid_runs(tmp_path):
    own = TINY.replace("model: exponential:limit=6,k=3", "model: exponential:limit=6,k=3\ntarget: {url: "
                       "'http://127.0.0.1:18599', command: 'sleep 60'}")  # fmt: skip
    (tmp_path / "own.yaml").write_text(own.replace("{pause: target,", "{errors: target, status: 503, probability: 1,"))
    args = ("own.yaml", "--vary", "faults[0].for=1s,8s", "--dry-run")
    assert map_cli(*args, cwd=tmp_path).returncode == 0  # the simulator maps it
    done = map_cli(*args, "--live", "1", cwd=tmp_path)
    assert done.returncode == 2
    assert "faults[0]: errors: target: your own service's answers cannot be changed from outside" in done.stderr


def test_a_grpc_scenario_maps_but_its_cells_are_not_run_live(tmp_path):
    (tmp_path / "grpc.yaml").write_text(TINY.replace("name: tiny-live", "name: tiny-grpc\ngrpc: {mode: emulated}"))
    args = ("grpc.yaml", "--vary", "faults[0].for=1s,8s", "--dry-run")
    mapped = map_cli(*args, cwd=tmp_path)
    assert mapped.returncode == 0, mapped.stderr  # the simulator maps it
    done = map_cli(*args, "--live", "1", cwd=tmp_path)
    assert done.returncode == 2
    assert "map --live: the cells of a grpc: scenario do not run live yet" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
