"""``retrystorm run`` / ``retrystorm demo`` on the command line: bad input, and --dry-run touching nothing."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from chaos.scenario import SCENARIO_DIR

SHIPPED = sorted(SCENARIO_DIR.glob("*.yaml"))


def retrystorm(*args, cwd, journal):
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(journal), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "retrystorm", *map(str, args)],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=120, check=False,
    )  # fmt: skip


@pytest.fixture
def workdir(tmp_path):
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def error_line(done):
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1, done.stderr
    return lines[0]


BAD = textwrap.dedent(
    """\
    name: bad
    model: exponential
    load:
      users: 10
      think_time: exp:10s
      duration: 30s
    strategies: [fixed:100ms]
    """
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (BAD, "bad.yaml:5: load.think_time"),
        (BAD.replace("exp:10s", "exponential:1s") + "faults: [{pause: db, at: 5s, for: 5s}]\n", "'db' is not a target"),
        (BAD.replace("exp:10s", "exponential:1s").replace("fixed:100ms", "fixed:fast"), "bad.yaml:7: strategies[0]"),
        ("name: [unclosed\n", "bad.yaml:2: not valid YAML"),
    ],
)
def test_bad_scenarios_print_one_line_and_exit_2(workdir, tmp_path, text, expected):
    (workdir / "bad.yaml").write_text(text)
    line = error_line(retrystorm("run", "bad.yaml", cwd=workdir, journal=tmp_path / "j.jsonl"))
    assert expected in line
    assert list(workdir.iterdir()) == [workdir / "bad.yaml"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["missing.yaml"], "missing.yaml: cannot read the scenario"),
        ([SCENARIO_DIR / "smira-laptop.yaml", "--strategy", "EB"], "no strategy labelled 'EB'"),
        ([SCENARIO_DIR / "smira-laptop.yaml", "--seed", "abc"], "--seed"),
        ([SCENARIO_DIR / "smira-laptop.yaml", "--bogus"], "--bogus"),
    ],
)
def test_bad_flags_print_one_line_and_exit_2(workdir, tmp_path, args, expected):
    line = error_line(retrystorm("run", *args, cwd=workdir, journal=tmp_path / "j.jsonl"))
    assert expected in line
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("path", SHIPPED, ids=[path.stem for path in SHIPPED])
def test_dry_run_prints_the_plan_and_touches_nothing(workdir, tmp_path, path: Path):
    journal = tmp_path / "journal.jsonl"
    done = retrystorm("run", path, "--dry-run", cwd=workdir, journal=journal)
    assert done.returncode == 0, done.stderr
    assert "dry run: nothing was started" in done.stdout
    assert "0s: load starts: time 0" in done.stdout
    assert list(workdir.iterdir()) == []  # no run folder, no logs
    assert not journal.exists()


def test_dry_run_of_selected_strategies_and_the_demo(workdir, tmp_path):
    done = retrystorm(
        "run", SCENARIO_DIR / "jitter-shootout.yaml", "--dry-run", "--strategy", "grpc", "--strategy", "smira",
        cwd=workdir, journal=tmp_path / "j.jsonl",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "2 strategies in turn" in done.stdout
    assert "[1/2] grpc" in done.stdout and "[2/2] smira" in done.stdout
    assert "pause target for 10s" in done.stdout
    demo = retrystorm("demo", "--dry-run", cwd=workdir, journal=tmp_path / "j.jsonl")
    assert demo.returncode == 0, demo.stderr
    assert "scenario smira-laptop" in demo.stdout
    assert "[1/2] fixed:100ms" in demo.stdout
    assert list(workdir.iterdir()) == []
