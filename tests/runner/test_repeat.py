"""``retrystorm run --repeat N``: each strategy N times, taking turns; one standing run per strategy, the spread."""

from __future__ import annotations

import json

import jsonschema_rs

from retrystorm.experiment.scenario import parse_scenario
from retrystorm.runner.cli import RunOptions, run_plan
from retrystorm.runner.plan import make_plan
from retrystorm.runner.results_schema import results_schema
from tests.support.cli import CliResult, run_cli

from .test_execute import SCENARIO, setting


def test_each_strategy_runs_n_times_taking_turns_and_results_give_the_spread(tmp_path, capsys):
    world, stack, _, _, _, _, _, runtime = setting(tmp_path)
    scenario = parse_scenario(SCENARIO, source="fake.yaml")
    plan = make_plan(scenario, scenario.strategies, repeat=3)
    assert run_plan(plan, stack, tmp_path / "run", RunOptions(journal=tmp_path / "j.jsonl", runtime=runtime)) == 0
    starts = [event.removeprefix("start load ") for event in world.names() if event.startswith("start load")]
    assert starts == [f"{label} run {n}" for n in (1, 2, 3) for label in ("fixed:100ms", "smira")]
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    assert [row["strategy"] for row in document["results"]] == ["fixed:100ms", "smira"]
    assert document["repeats"]["count"] == 3 and len(document["repeats"]["runs"]) == 6
    row = document["results"][0]
    assert row["runs"] == 3 and row["repeat"] in (1, 2, 3)
    assert row["spread"]["server_recovery_s"]["values"] == [row["server_recovery_s"]] * 3
    assert list(document["run"]["strategies"]) == [
        f"{label} run {n}" for n in (1, 2, 3) for label in ("fixed:100ms", "smira")
    ]
    assert list(jsonschema_rs.validator_for(results_schema()).iter_errors(document)) == []
    out = capsys.readouterr().out
    assert "fake: live, 3 runs per strategy" in out and "smira #3" in out
    assert "Spread over the runs" in out
    # identical runs: no winner inside the noise
    assert "No clear winner: fixed:100ms, smira tie" in out


def retrystorm(*args: str) -> CliResult:
    return run_cli(*args, env={"COLUMNS": "200"})


def test_repeat_is_bounded_and_refused_with_simulate():
    done = retrystorm("run", "smira-laptop", "--repeat", "0", "--dry-run")
    assert done.returncode == 2 and "--repeat" in done.stderr and "Traceback" not in done.stderr
    done = retrystorm("run", "smira-laptop", "--repeat", "2", "--simulate", "--dry-run")
    assert done.returncode == 2
    assert done.stderr == (
        "retrystorm: error: --simulate: compares one live run per strategy with the simulator; drop --repeat\n"
    )
    done = retrystorm("run", "smira-laptop", "--repeat", "3", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "2 strategies in turn, each 3 times, each against a fresh target" in done.stdout
