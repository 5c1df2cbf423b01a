"""A scenario of one's own service on the command line: --dry-run, refusals in one line, init, the simulator."""

from __future__ import annotations

import os
import subprocess

import pytest
from google.protobuf import descriptor_pb2

from retrystorm.chaos.cgroups import CgroupUnavailableError, locate

from .grpc_service.greeter import file_proto
from .test_cli import error_line, retrystorm

OWN = """\
target:
  url: http://127.0.0.1:9
  {pause}
load: {{users: 5, duration: 30s}}
strategies: [fixed:100ms]
faults: [{{at: 10s, for: 5s}}]
"""


def write(folder, text, name="own.yaml"):
    path = folder / name
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("pause", "expected"),
    [
        ("pid: 4000000", "retrystorm: error: no process with pid 4000000"),
        ("pid: {parent}", "refusing pid {parent}: it is an ancestor of this controller"),
    ],
)
def test_a_pid_that_is_missing_or_refused_is_exit_2_in_one_line_even_on_a_dry_run(tmp_path, pause, expected):
    parent = os.getppid()  # the command runs in this process: its parent is the command's ancestor
    path = write(tmp_path, OWN.format(pause=pause.format(parent=parent)))
    done = retrystorm("run", path, "--dry-run", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert expected.format(parent=parent) in error_line(done)


def test_the_dry_run_says_what_is_paused_and_how_and_how_the_server_is_judged(tmp_path):
    path = write(tmp_path, OWN.format(pause="command: gunicorn app:app"))
    done = retrystorm("run", path, "--dry-run", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert done.returncode == 0, done.stderr
    plan = " ".join(done.stdout.split())
    assert f"started fresh per strategy: gunicorn app:app (cwd {tmp_path})" in plan
    assert "a pause freezes everything the command starts, in a cgroup of its own" in plan
    assert "judged from the clients (attempt latency, timeouts)" in plan
    assert "dry run: nothing was started" in plan


def test_a_foreign_target_on_the_compose_backend_skips_the_admin_calls_and_says_so(tmp_path):
    text = OWN.format(pause="service: web").replace("http://127.0.0.1:9", "http://127.0.0.1:18070")
    done = retrystorm(
        "run", write(tmp_path, text), "--dry-run", "--backend", "compose", cwd=tmp_path, journal=tmp_path / "j.jsonl"
    )
    if "pip install 'retrystorm[docker]'" in done.stderr:
        pytest.skip("the Docker SDK is not installed")
    assert done.returncode == 0, done.stderr
    plan = " ".join(done.stdout.split())
    assert "no admin API: nothing is reset between strategies" in plan
    assert "outages pause 'target' (compose service web) through the docker backend" in plan
    command = retrystorm(
        "run", write(tmp_path, OWN.format(pause="command: x"), "cmd.yaml"), "--dry-run", "--backend", "compose",
        cwd=tmp_path, journal=tmp_path / "j.jsonl",
    )  # fmt: skip
    assert "target.command: --backend compose pauses the stack's containers" in error_line(command)


def test_the_simulator_has_no_model_of_ones_own_service_unless_one_is_given(tmp_path):
    path = write(tmp_path, OWN.format(pause="command: x"))
    done = retrystorm("sim", "run", path, cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert "which the simulator has no model of; add model:" in error_line(done)
    with_model = write(tmp_path, "model: queue:workers=2\n" + OWN.format(pause="command: x"), "approx.yaml")
    done = retrystorm("sim", "run", with_model, "--json", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert done.returncode == 0, done.stderr
    assert "stands for the service at http://127.0.0.1:9" in done.stdout


def test_init_writes_a_scenario_that_loads_and_refuses_to_overwrite_it(tmp_path):
    journal = tmp_path / "j.jsonl"
    done = retrystorm(
        "init", "http://127.0.0.1:8000", "--command", "gunicorn app:app", "--no-probe", cwd=tmp_path, journal=journal
    )
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "scenario.yaml").read_text()
    assert 'command: "gunicorn app:app"' in text and "faults:\n  - {pause: target" in text
    plan = retrystorm("run", "scenario.yaml", "--dry-run", cwd=tmp_path, journal=journal)
    assert plan.returncode == 0, plan.stderr
    again = retrystorm("init", "http://127.0.0.1:8000", cwd=tmp_path, journal=journal)
    assert "scenario.yaml exists; pass --force to overwrite it" in error_line(again)
    forced = retrystorm("init", "http://127.0.0.1:8000", "--force", "--no-probe", cwd=tmp_path, journal=journal)
    assert forced.returncode == 0 and "faults: []" in (tmp_path / "scenario.yaml").read_text()


def test_simulate_beside_a_live_run_needs_a_model_of_the_service(tmp_path):
    path = write(tmp_path, OWN.format(pause="command: x"))
    done = retrystorm("run", path, "--simulate", "--dry-run", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert error_line(done).startswith("retrystorm: error: --simulate: own: target: is your own service")
    with_model = write(tmp_path, "model: queue:workers=2\n" + OWN.format(pause="command: x"), "approx.yaml")
    done = retrystorm("run", with_model, "--simulate", "--dry-run", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("trigger", "expected"),
    [
        (
            "{errors: target, status: 503, at: 10s, for: 5s}",
            (
                "faults[0]: errors: target: your own service's answers cannot be changed from outside; an error burst "
                "needs a fault proxy in front of it (not part of retrystorm)"
            ),
        ),
    ],
)
def test_a_trigger_a_service_of_ones_own_cannot_take_live_is_exit_2_in_one_line_on_a_dry_run(
    tmp_path, trigger, expected
):
    text = OWN.format(pause="command: gunicorn app:app").replace("faults: [{at: 10s, for: 5s}]", f"faults: [{trigger}]")
    done = retrystorm("run", write(tmp_path, text), "--dry-run", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert done.returncode == 2, done.stdout + done.stderr
    assert expected in error_line(done)


SLOW = "faults: [{slow: target, capacity: 0.4, at: 10s, for: 5s}]"


def test_a_slow_of_a_service_with_nothing_to_cut_is_exit_2_in_one_line_on_a_dry_run(tmp_path):
    text = OWN.format(pause="").replace("faults: [{at: 10s, for: 5s}]", SLOW)
    done = retrystorm("run", write(tmp_path, text), "--dry-run", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert done.returncode == 2, done.stderr
    assert "faults[0]: slow: target: a CPU cut needs something to cut: give target.command" in error_line(done)


@pytest.mark.live  # a process to name by its pid
@pytest.mark.parametrize("pause", ["command: python -m http.server", "pid: {child}", "container: web"])
def test_a_slow_of_a_command_a_pid_or_a_container_is_planned_on_a_dry_run(tmp_path, pause):
    if "container" not in pause:
        try:
            locate(os.getpid())
        except CgroupUnavailableError as error:
            pytest.skip(f"no writable cgroup cpu controller: {error}")
    child = subprocess.Popen(["sleep", "60"])
    try:
        text = OWN.format(pause=pause.format(child=child.pid)).replace("faults: [{at: 10s, for: 5s}]", SLOW)
        done = retrystorm("run", write(tmp_path, text), "--dry-run", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    finally:
        child.kill()
        child.wait()
    if "pip install 'retrystorm[docker]'" in done.stderr:
        pytest.skip("the Docker SDK is not installed")
    assert done.returncode == 0, done.stderr
    assert "slow target" in " ".join(done.stdout.split())


def test_a_slow_of_a_compose_service_of_ones_own_is_planned_and_an_error_burst_refused(tmp_path):
    text = OWN.format(pause="service: web").replace("faults: [{at: 10s, for: 5s}]", SLOW)
    done = retrystorm(
        "run", write(tmp_path, text), "--dry-run", "--backend", "compose", cwd=tmp_path, journal=tmp_path / "j.jsonl"
    )
    if "pip install 'retrystorm[docker]'" in done.stderr:
        pytest.skip("the Docker SDK is not installed")
    assert done.returncode == 0, done.stderr
    assert "slow target" in " ".join(done.stdout.split())
    burst = text.replace("{slow: target, capacity: 0.4,", "{errors: target, status: 503, probability: 0.5,")
    done = retrystorm(
        "run", write(tmp_path, burst), "--dry-run", "--backend", "compose", cwd=tmp_path, journal=tmp_path / "j.jsonl"
    )
    assert done.returncode == 2, done.stderr
    assert "faults[0]: errors: target: your own service's answers cannot be changed" in error_line(done)


GRPC_OWN = """\
target: {{url: 'grpc://127.0.0.1:9', command: python greeter.py 9}}
grpc: {{method: {method}, request: {request}, descriptor_set: greeter.pb}}
load: {{users: 5, duration: 30s}}
strategies: [grpc-retry]
faults: [{{at: 10s, for: 5s}}]
"""


def greeter_descriptor_set(folder):
    (folder / "greeter.pb").write_bytes(descriptor_pb2.FileDescriptorSet(file=[file_proto()]).SerializeToString())


@pytest.mark.parametrize(
    ("method", "message", "expected"),
    [
        ("/demo.v1.Greeter/SayHi", "{name: x}", "grpc.method: demo.v1.Greeter has no method 'SayHi'; its methods: Say"),
        ("/demo.v1.Other/SayHello", "{name: x}", "grpc.method: the descriptor set"),
        ("/demo.v1.Greeter/SayHello", "{nom: x}", 'grpc.request: Message type "demo.v1.HelloRequest" has no field'),
    ],
)
def test_a_grpc_service_s_method_and_message_are_checked_with_its_descriptor_set_on_a_dry_run(
    tmp_path, method, message, expected
):
    greeter_descriptor_set(tmp_path)
    path = write(tmp_path, GRPC_OWN.format(method=method, request=message))
    done = retrystorm("run", path, "--dry-run", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert expected in error_line(done)


def test_a_grpc_service_s_plan_says_where_calls_go_and_when_it_is_ready(tmp_path):
    greeter_descriptor_set(tmp_path)
    path = write(tmp_path, GRPC_OWN.format(method="/demo.v1.Greeter/SayHello", request="{name: storm}"))
    done = retrystorm("run", path, "--dry-run", cwd=tmp_path, journal=tmp_path / "j.jsonl")
    assert done.returncode == 0, done.stderr
    plan = " ".join(done.stdout.split())
    assert "your service at grpc://127.0.0.1:9" in plan and "ready: its port accepting a connection" in plan
    assert "gRPC calls of /demo.v1.Greeter/SayHello, grpcio retries (real)" in plan
