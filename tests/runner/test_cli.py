"""``retrystorm run`` / ``retrystorm demo`` on the command line: bad input, and --dry-run touching nothing."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from retrystorm.experiment.scenario import shipped_names
from tests.support.cli import run_cli

SHIPPED = shipped_names()


def retrystorm(*args, cwd, journal, env=None):
    return run_cli(*args, cwd=cwd, env={"RETRYSTORM_CHAOS_JOURNAL": str(journal), "COLUMNS": "200", **(env or {})})


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
        (
            BAD.replace("exp:10s", "exponential:1s") + "faults: [{slow: db, capacity: 0.5, at: 5s, for: 5s}]\n",
            "faults: slow: 'db' is not a target of the",
        ),
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
        (["smira-laptop", "--strategy", "EB"], "no strategy labelled 'EB'"),
        (["smira-laptop", "--seed", "abc"], "--seed"),
        (["smira-laptop", "--bogus"], "--bogus"),
        (["smira-laptop", "--workers", "0"], "--workers"),
        (["smira-laptop", "--workers", "257"], "--workers"),
        (["smira-laptop", "--workers", "2", "--backend", "compose"], "--workers: applies to --backend local only"),
    ],
)
def test_bad_flags_print_one_line_and_exit_2(workdir, tmp_path, args, expected):
    line = error_line(retrystorm("run", *args, cwd=workdir, journal=tmp_path / "j.jsonl"))
    assert expected in line
    assert list(workdir.iterdir()) == []


@pytest.mark.parametrize("name", SHIPPED)
def test_dry_run_prints_the_plan_and_touches_nothing(workdir, tmp_path, name: str):
    journal = tmp_path / "journal.jsonl"
    done = retrystorm("run", name, "--dry-run", cwd=workdir, journal=journal)
    assert done.returncode == 0, done.stderr
    assert "dry run: nothing was started" in done.stdout
    assert "0s: load starts: time 0" in done.stdout
    assert list(workdir.iterdir()) == []  # no run folder, no logs
    assert not journal.exists()


def test_dry_run_of_selected_strategies_and_the_demo(workdir, tmp_path):
    done = retrystorm(
        "run", "jitter-shootout", "--dry-run", "--strategy", "grpc", "--strategy", "smira",
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


def test_dry_run_says_how_many_locust_processes_send_the_load(workdir, tmp_path):
    done = retrystorm("run", "smira-laptop", "--dry-run", "--workers", "3", cwd=workdir, journal=tmp_path / "j.jsonl")
    assert done.returncode == 0, done.stderr
    assert "a master and 3 workers" in done.stdout.replace("\n", " ")


#: Live, users that never wait just send fast; the simulator refuses them (virtual time would stand still).
STANDSTILL = textwrap.dedent(
    """\
    name: standstill
    model: fixed:base_delay=0
    load: {users: 1, think_time: constant:0s, duration: 3s}
    strategies: [fixed:100ms]
    """
)


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry run"])
def test_simulate_refuses_what_the_simulator_refuses_before_anything_starts(workdir, tmp_path, dry_run):
    (workdir / "standstill.yaml").write_text(STANDSTILL)
    journal = tmp_path / "journal.jsonl"
    done = retrystorm("run", "standstill.yaml", "--simulate", "--out", "run", *dry_run, cwd=workdir, journal=journal)
    line = error_line(done)
    assert "--simulate: the simulator cannot run fixed:100ms" in line
    assert "sim.requests_per_user" in line  # what would make it run
    assert list(workdir.iterdir()) == [workdir / "standstill.yaml"]  # no run folder, no logs
    assert not journal.exists()
    without = retrystorm("run", "standstill.yaml", "--dry-run", cwd=workdir, journal=journal)
    assert without.returncode == 0, without.stderr  # live alone, such users are fine


def test_simulate_takes_a_grpc_scenario_to_the_simulator_s_own_checks(workdir, tmp_path):
    grpc = STANDSTILL.replace("name: standstill", "name: grpc-standstill\ngrpc: {mode: emulated}")
    (workdir / "grpc.yaml").write_text(grpc)
    journal = tmp_path / "journal.jsonl"
    done = retrystorm("run", "grpc.yaml", "--simulate", "--dry-run", cwd=workdir, journal=journal)
    assert "--simulate: the simulator cannot run fixed:100ms" in error_line(done)  # no refusal of gRPC itself
    (workdir / "grpc.yaml").write_text(grpc.replace("constant:0s", "constant:1s"))
    planned = retrystorm("run", "grpc.yaml", "--simulate", "--dry-run", cwd=workdir, journal=journal)
    assert planned.returncode == 0, planned.stderr
    assert "gRPC calls" in planned.stdout + planned.stderr


#: Where nothing answers, and no Docker engine: a compose run that touched either would fail.
NOWHERE = {
    "RETRYSTORM_TARGET_URL": "http://127.0.0.1:9",
    "RETRYSTORM_LOCUST_URL": "http://127.0.0.1:9",
    "RETRYSTORM_PROMETHEUS_URL": "http://127.0.0.1:9",
    "RETRYSTORM_LOAD_TARGET_URL": "",
    "RETRYSTORM_CHAOS_URL": "",
    "DOCKER_HOST": "unix:///nonexistent/docker.sock",
}


def test_compose_dry_run_names_every_address_and_touches_nothing(workdir, tmp_path):
    journal = tmp_path / "journal.jsonl"
    args = ("run", "smira-laptop", "--backend", "compose", "--dry-run")
    env = {**NOWHERE, "RETRYSTORM_LOCUST_URL": "http://127.0.0.1:18089", "COMPOSE_PROJECT_NAME": "ci"}
    done = retrystorm(*args, "--target-url", "http://127.0.0.1:18070/", cwd=workdir, journal=journal, env=env)
    assert done.returncode == 0, done.stderr
    plan = done.stdout
    assert "compose stack (target http://127.0.0.1:18070, Locust master http://127.0.0.1:18089, " in plan
    assert "metrics from Prometheus http://127.0.0.1:9)" in plan
    assert "load sent to http://127.0.0.1:18070)" in plan
    assert "through the docker backend (compose project 'ci')" in plan
    assert "POST http://127.0.0.1:18089/swarm" in plan
    assert "dry run: nothing was started" in plan
    assert list(workdir.iterdir()) == []
    assert not journal.exists()
    chaos = retrystorm(*args, cwd=workdir, journal=journal, env={**env, "RETRYSTORM_CHAOS_URL": "http://127.0.0.1:9"})
    assert "through the chaos API at http://127.0.0.1:9" in chaos.stdout, chaos.stderr


def test_compose_refuses_urllib3_s_own_retry_in_one_line(workdir, tmp_path):
    (workdir / "u.yaml").write_text(STANDSTILL.replace("[fixed:100ms]", "[{strategy: urllib3, http_client: urllib3}]"))
    done = retrystorm(
        "run", "u.yaml", "--backend", "compose", "--dry-run", cwd=workdir, journal=tmp_path / "j", env=NOWHERE
    )
    assert error_line(done) == (
        "retrystorm: error: http_client: urllib3: the compose stack's Locust runs the emulating user only; run it "
        "with --backend local"
    )


def test_compose_defaults_are_the_compose_service_names(workdir, tmp_path):
    env = {name: "" for name in NOWHERE if name.startswith("RETRYSTORM_")}
    args = ("run", "smira-laptop", "--backend", "compose", "--dry-run")
    done = retrystorm(*args, cwd=workdir, journal=tmp_path / "j.jsonl", env=env)
    assert done.returncode == 0, done.stderr
    assert (
        "compose stack (target http://target:8070, Locust master http://locust-master:8089, "
        "metrics from Prometheus http://prometheus:9090)" in done.stdout
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--locust-url", "http://127.0.0.1:8089"], "--locust-url: applies to --backend compose only"),
        (["--backend", "compose", "--prometheus-url", "prometheus:9090"], "--prometheus-url: got 'prometheus:9090'"),
        (["--backend", "compose", "--target-url", "http://t:99999"], "--target-url: got"),
        (["--backend", "docker"], "'docker' is not one of 'local', 'compose'"),
        (["--admin-token", "t"], "--admin-token: applies to --backend compose only"),
    ],
)
def test_bad_compose_options_print_one_line_and_exit_2(workdir, tmp_path, args, expected):
    done = retrystorm("run", "smira-laptop", *args, cwd=workdir, journal=tmp_path / "j.jsonl")
    assert expected in error_line(done)
    assert list(workdir.iterdir()) == []


def test_no_docker_engine_is_one_line_and_exit_3(workdir, tmp_path):
    done = retrystorm(
        "run", "smira-laptop", "--backend", "compose", "--out", "run",
        cwd=workdir, journal=tmp_path / "j.jsonl", env=NOWHERE,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("retrystorm run: cannot reach a Docker engine ("), done.stderr
    assert last.endswith("start dockerd or set DOCKER_HOST")
    assert "Traceback" not in done.stderr
    assert not (workdir / "run" / "results.json").exists()


DOCKER_PROBE = textwrap.dedent(
    """
    import json, runpy, sys
    sys.argv = ["retrystorm", "run", sys.argv[1], "--dry-run"]
    try:
        runpy.run_module("retrystorm", run_name="__main__")
    except SystemExit as done:
        status = done.code
    print(json.dumps({"status": status, "docker": sorted(m for m in sys.modules if m.split(".")[0] == "docker")}))
    """
)


@pytest.mark.live  # a fresh interpreter: what a run imports
def test_a_local_run_never_imports_the_docker_sdk(workdir, tmp_path):
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(tmp_path / "journal.jsonl")}
    done = subprocess.run(
        [sys.executable, "-c", DOCKER_PROBE, "smira-laptop"],
        capture_output=True, text=True, cwd=workdir, env=env, timeout=120, check=True,
    )  # fmt: skip
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["status"] == 0, done.stderr
    assert report["docker"] == []


def test_the_admin_token_reaches_the_target_provider_and_stays_out_of_reprs():
    from retrystorm.chaos.backends import ProcessBackend
    from retrystorm.runner.compose import ComposeEndpoints, compose_stack

    endpoints = ComposeEndpoints(admin_token="s3cret-admin")
    stack = compose_stack(endpoints, backend=ProcessBackend({}))
    assert stack.targets.admin_token == "s3cret-admin"
    assert "s3cret-admin" not in repr(endpoints)


def test_every_problem_of_a_scenario_is_one_line_of_its_own(workdir, tmp_path):
    text = "name: bad\nmodel: exponential:limt=30\nlod: {users: 3}\nstrategies: [fixed:100ms]\n"
    (workdir / "bad.yaml").write_text(text)
    done = retrystorm("run", "bad.yaml", cwd=workdir, journal=tmp_path / "j.jsonl")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        (
            "retrystorm: error: bad.yaml:3: lod: unknown field (did you mean 'load'?); accepted: "
            "name, description, seed, model, target, grpc, requests, retry_on, load, strategies, faults, assertions, "
            "slo, sim, hosts"
        ),
        "retrystorm: error: bad.yaml:1: load: missing; this field is required",
        (
            "retrystorm: error: bad.yaml:2: model: model 'exponential': unknown parameter 'limt' "
            "(did you mean 'limit'?); accepted: base_delay, limit, factor, k, tick, max_delay, overflow"
        ),
    ]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "smira-laptop", "--strategy", "smria"], "labelled 'smria' in smira-laptop (did you mean 'smira'?)"),
        (["run", "smira-laptop", "--strategy", "fixed"], "(did you mean 'fixed:100ms'?)"),
        (["rn", "smira-laptop"], "no command 'rn' (did you mean 'run'?)"),
        (["sim", "smria"], "unknown experiment 'smria' (did you mean 'smira'?)"),
    ],
)
def test_typed_names_get_the_closest_one(workdir, tmp_path, args, expected):
    line = error_line(retrystorm(*args, "--dry-run", cwd=workdir, journal=tmp_path / "j.jsonl"))
    assert expected in line
