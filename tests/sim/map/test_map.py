"""``retrystorm map``: a grid of runs in parallel, the same whatever the workers, its files, its budget."""

import csv
import io
import json
import textwrap

import pytest

from retrystorm.sim.map.budget import corners, estimate, offered_requests
from retrystorm.sim.map.build import prepare
from retrystorm.sim.map.document import verdict
from retrystorm.sim.map.grid import RunFigures, run_all
from tests.support.cli import run_cli

#: The seed server scaled down (limit 6, k 3) under 200 users: fixed retries tip over after a long enough freeze.
SMALL = textwrap.dedent(
    """\
    name: small
    model: exponential:limit=6,k=3
    load: {users: 200, think_time: exponential:10s, attempt_timeout: 2s, duration: 45s}
    strategies: [fixed:100ms, {label: EB, strategy: "exponential:base=1s,factor=2,max=1m,jitter=full"}]
    faults:
      - {pause: target, at: 15s, for: 10s}
    """
)


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.yaml"
    path.write_text(SMALL)
    return path


def plan_of(path, *varies, **options):
    values = {"repeat": 1, "seed": None, "horizon_s": None, "marks": ()}
    values.update(options)
    return prepare(str(path), varies, (), **values)


def test_a_grpc_scenario_is_mapped_as_its_emulation(tmp_path):
    path = tmp_path / "grpc.yaml"
    path.write_text(SMALL.replace("name: small", "name: grpc-small\ngrpc: {mode: emulated}"))
    plan = plan_of(path, "faults[0].for=5s,10s")
    assert len(plan.cells) == 2
    assert all(cell.scenario().grpc is not None for cell in plan.cells)


def test_cells_run_until_the_same_time_after_their_trigger(small):
    plan = plan_of(small, "faults[0].for=2s..20s:3")
    assert [cell.scenario().load.duration for cell in plan.cells] == [37, 46, 55]  # trigger end + 20 s
    assert [task.label for task in plan.tasks] == ["fixed:100ms"] * 3 + ["EB"] * 3


@pytest.mark.live
def test_the_same_map_whatever_the_workers(small):
    plan = plan_of(small, "faults[0].for=1s..25s:4", "load.users=50..200:2", repeat=2)
    one = plan.document(run_all(plan.tasks, workers=1))
    two = plan.document(run_all(plan.tasks, workers=2))
    assert json.dumps(one) == json.dumps(two)
    assert len(one["cells"]) == 2 * 8
    assert {cell["agreement"] for cell in one["cells"]} == {None}  # the slot a live confirmation fills
    assert one["seeds"] == [1, 2]


def test_longer_freezes_tip_fixed_retries_over_and_the_edge_says_where(small):
    plan = plan_of(small, "faults[0].for=1s..25s:4")
    document = plan.document(run_all(plan.tasks, workers=1))
    fixed = [cell["verdict"] for cell in document["cells"] if cell["strategy"] == "fixed:100ms"]
    assert fixed[0] == "recovers" and fixed[-1] == "metastable"
    edge = document["strategies"][0]["edge"][0]["edge"]
    assert edge == pytest.approx(next(v for v, f in zip(plan.axes[0].values, fixed, strict=True) if f != "recovers"))


def test_a_cell_is_mixed_when_only_some_seeds_recover():
    def run(server_s):
        return RunFigures(0, "x", 1, server_s, None, 10, 1.0, 1.0, 100, 0.1)

    assert verdict([run(1.0), run(2.0)]) == "recovers"
    assert verdict([run(None), run(None)]) == "metastable"
    assert verdict([run(1.0), run(None)]) == "mixed"


def test_the_estimate_scales_calibration_runs_by_the_offered_load(small):
    plan = plan_of(small, "load.users=50..200:4")
    found = estimate(plan.tasks, plan.cells, budget_s=3600)
    assert len(found.calibration) == 4  # first and last cell, per strategy; their figures are kept
    assert corners([3, 4]) == [0, 3, 8, 11]  # a plane's four corners, the last axis varying fastest
    offered = [offered_requests(cell.scenario()) for cell in plan.cells]
    assert offered == pytest.approx([50 / 10 * 45, 100 / 10 * 45, 150 / 10 * 45, 200 / 10 * 45])
    assert "calibration runs of the grid's corners" in found.how


def map_cli(*args, cwd):
    return run_cli("map", *args, cwd=cwd, env={"COLUMNS": "200"})


@pytest.mark.live  # two worker processes
def test_map_writes_json_csv_png_and_report(small, tmp_path):
    marks = ["--mark", "here@faults[0].for=10s,load.users=100"]
    done = map_cli(small, "--vary", "faults[0].for=2s..20s:3", "--vary", "load.users=50..150:3", "--out", "m",
                   "--workers", "2", "--json", *marks, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert (tmp_path / "m" / "map.json").read_text() == json.dumps(document, indent=2) + "\n"
    rows = list(csv.DictReader(io.StringIO((tmp_path / "m" / "map.csv").read_text())))
    assert len(rows) == 2 * 9
    assert list(rows[0])[:4] == ["strategy", "faults[0].for", "load.users", "verdict"]
    assert (tmp_path / "m" / "map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (tmp_path / "m" / "report.html").read_text()
    assert "here: faults[0].for 10s, load.users 100" in page
    assert "estimate:" in done.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vary", "faults[0].fro=1s..2s:2"], "--vary faults[0].fro=1s..2s:2: faults[0].fro: no such field"),
        (["--vary", "load.users=5..1:3"], "expected LO < HI"),
        (["--vary", "faults[0].for=1s..2s:2", "--budget", "1ms"], "the map would take about"),
        (["--vary", "load.users=1..2:2", "--vary", "load.users=3..4:2"], "load.users is given twice"),
        (["--vary", "faults[0].for=1s..2h:2"], "with faults[0].for=2h: faults[0].for: got 7200"),  # a cell refused
        (["--vary", "load.users=100..200:2", "--strategy", "nope"], "no strategy labelled 'nope'"),
    ],
)
def test_bad_maps_are_one_line_and_exit_2(small, tmp_path, args, message):
    done = (
        map_cli(small, *args, "--horizon", "2h", cwd=tmp_path)
        if "200s" in str(args)
        else map_cli(small, *args, cwd=tmp_path)
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert not (tmp_path / "maps").exists()


def test_a_map_too_big_to_calibrate_is_refused_from_the_offered_load(small, tmp_path):
    done = map_cli(small, "--vary", "load.users=100000..1000000:2", "--budget", "1m", cwd=tmp_path)
    assert done.returncode == 2
    assert "without a calibration run" in done.stderr


def test_a_scenario_without_a_trigger_has_nothing_to_map(tmp_path):
    (tmp_path / "calm.yaml").write_text(SMALL.split("faults:")[0])
    done = map_cli("calm.yaml", "--vary", "load.users=10..20:2", cwd=tmp_path)
    assert done.returncode == 2
    assert "a map needs a trigger to recover from" in done.stderr
