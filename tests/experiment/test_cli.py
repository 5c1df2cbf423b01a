"""``retrystorm scenarios``, and shipped scenarios run by name from a directory outside the checkout."""

import json

import pytest

from retrystorm.experiment.scenario import load_scenario, shipped_folder, shipped_names
from tests.support.cli import run_cli


def retrystorm(*args, cwd):
    return run_cli(*args, cwd=cwd, env={"RETRYSTORM_CHAOS_JOURNAL": str(cwd / "journal.jsonl"), "COLUMNS": "80"})


@pytest.fixture
def elsewhere(tmp_path):
    """An empty directory outside the checkout to run commands from."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def test_scenarios_lists_each_shipped_one_on_one_line(elsewhere):
    done = retrystorm("scenarios", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines] == shipped_names()
    for line, name in zip(lines, shipped_names(), strict=True):
        first = load_scenario(name).description.strip().splitlines()[0]
        assert line.endswith(first), "one line each, even when it is longer than the terminal"


def test_scenarios_name_prints_the_file_as_shipped(elsewhere):
    done = retrystorm("scenarios", "jitter-shootout", cwd=elsewhere)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (shipped_folder() / "jitter-shootout.yaml").read_text(encoding="utf-8")
    unknown = retrystorm("scenarios", "jitter", cwd=elsewhere)
    assert unknown.returncode == 2
    assert unknown.stderr.count("\n") == 1 and "did you mean 'jitter-shootout'?" in unknown.stderr


def test_run_and_sim_run_take_a_shipped_name_from_anywhere(elsewhere):
    planned = retrystorm("run", "smira-laptop", "--dry-run", cwd=elsewhere)
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.startswith("scenario smira-laptop (seed 1)")
    assert sorted(path.name for path in elsewhere.iterdir()) == []
    simulated = retrystorm(
        "sim", "run", "smira-sigstop", "--users", "50", "--duration", "30s", "--outage", "5s@10s", "--json",
        cwd=elsewhere,
    )  # fmt: skip
    # 1: at 50 users, the full-size scenario's assertions (fixed retries never recover) do not hold
    assert simulated.returncode == 1, simulated.stderr
    document = json.loads(simulated.stdout)
    assert document["experiment"] == "smira-sigstop"
    assert [row["strategy"] for row in document["results"]] == ["fixed:100ms", "smira"]


def test_a_path_still_works_and_an_unknown_name_is_one_line_and_exit_2(elsewhere):
    (elsewhere / "mine.yaml").write_text((shipped_folder() / "smira-laptop.yaml").read_text().replace(
        "name: smira-laptop", "name: mine"
    ))  # fmt: skip
    planned = retrystorm("run", "mine.yaml", "--dry-run", cwd=elsewhere)
    assert planned.returncode == 0, planned.stderr
    assert planned.stdout.startswith("scenario mine (seed 1)")
    for args in (["run", "smira-lapton", "--dry-run"], ["sim", "run", "smira-sigstp"]):
        done = retrystorm(*args, cwd=elsewhere)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1, done.stderr
        assert "did you mean 'smira-" in lines[0]
        assert lines[0].endswith(f"shipped scenarios: {', '.join(shipped_names())} (retrystorm scenarios lists them)")
