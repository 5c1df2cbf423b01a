"""A run spec in the load generator's terms: one translation for the local flags and the compose form."""

import dataclasses
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import RunSpec, parse_scenario
from retrystorm.loadgen.options import FLAG_DESTS, OPTIONS, load_options, overlay_form
from retrystorm.loadgen.request_mix import RequestSpec, parse_request_line
from retrystorm.loadgen.think import ExponentialThink
from retrystorm.runner.local.locust import LocustDriver
from retrystorm.runner.locust_args import LOCUST_RUN_MARGIN_S, check_options, describe_load, locust_options
from retrystorm.runner.locust_master import swarm_form

SCENARIO = """\
name: args
model: exponential
load: {users: 100, think_time: "between:1s,3s", attempt_timeout: 2s, duration: 40s, max_attempts: 5,
       budget: tokens}
strategies:
  - fixed:100ms
  - {label: EB, strategy: "exponential:base=50ms,jitter=full", max_attempts: 3, request_deadline: 20s}
"""


@pytest.fixture
def scenario():
    return parse_scenario(SCENARIO, source="args.yaml")


def read_back(options):
    """What the Locust user reads from ``options``, as a master's form or a command line gives them."""
    return load_options(overlay_form({}, options))


def test_the_load_generator_reads_back_the_spec(scenario):
    for entry in scenario.strategies:
        spec = RunSpec.of(scenario, entry)
        options = read_back(locust_options(spec))
        assert options.policy == spec.policy
        assert options.budget == spec.budget
        assert options.think == spec.think
        assert options.attempt_timeout_s == spec.attempt_timeout_s
        assert options.arrival == spec.arrival
        assert options.seed == spec.seed


def test_users_spawn_rate_and_run_time(scenario):
    spec = RunSpec.of(scenario, scenario.strategies[0])
    options = locust_options(spec)
    assert (options["users"], options["spawn_rate"]) == ("100", "100")  # no spawn rate: all in the first second
    assert options["run_time"] == f"{40 + LOCUST_RUN_MARGIN_S:.0f}s"
    assert locust_options(dataclasses.replace(spec, spawn_rate=2.5), run_margin_s=0.5)["spawn_rate"] == "2.5"
    assert locust_options(spec, run_margin_s=0.5)["run_time"] == "41s"  # rounded up to a whole second


def test_every_option_and_flag_is_explicit(scenario):
    options = locust_options(RunSpec.of(scenario, scenario.strategies[0]))
    assert set(options) == {"users", "spawn_rate", "run_time"} | {option.dest for option in OPTIONS} | set(FLAG_DESTS)
    assert all(isinstance(value, str) for value in options.values())


def test_open_arrivals_become_a_think_time(scenario):
    load = scenario.load.model_copy(update={"arrival": "open", "rate": 50.0})
    spec = RunSpec.of(scenario.model_copy(update={"load": load}), scenario.strategies[0])
    options = locust_options(spec)
    assert options["think_time"] == "exponential:2s"  # 100 users / 50 per s
    assert options["arrival"] == "open"
    assert read_back(options).think == ExponentialThink(average_s=2.0)
    assert "think exponential:2s, open loop" in describe_load(spec)


def test_no_attempt_timeout_becomes_one_longer_than_the_run(scenario):
    spec = dataclasses.replace(RunSpec.of(scenario, scenario.strategies[0]), attempt_timeout_s=None)
    assert locust_options(spec)["attempt_timeout"] == "140s"  # 2 x 40 s + 60 s
    assert read_back(locust_options(spec)).attempt_timeout_s > spec.duration_s + LOCUST_RUN_MARGIN_S


def test_the_local_command_line_and_the_compose_form_carry_the_same_options(scenario):
    spec = RunSpec.of(scenario, scenario.strategies[1])
    kept = dataclasses.replace(spec, policy=dataclasses.replace(spec.policy, reset_after_success=False))
    for each in (spec, kept):
        argv = LocustDriver(Path("/logs")).argv("http://127.0.0.1:1", each, 1234)
        flags: dict[str, str] = {}
        for item in argv[argv.index("--only-summary") + 1 :]:
            name, _, value = item.removeprefix("--").replace("-", "_").partition("=")
            flags[name] = f"{flags[name]}\n{value}" if name in flags else value or "true"  # --request repeats
        form = swarm_form(each, "http://127.0.0.1:1")
        assert flags == {name: value for name, value in locust_options(each).items() if value not in ("false", "")}
        assert {("users" if name == "user_count" else name): value for name, value in form.items()} == {
            **locust_options(each),
            "host": "http://127.0.0.1:1",
        }
    mixed = dataclasses.replace(spec, requests=(RequestSpec(method="POST", path="/orders", body="a b"), RequestSpec()))
    argv = LocustDriver(Path("/logs")).argv("http://h", mixed, 1)
    requests = [item.removeprefix("--request=") for item in argv if item.startswith("--request=")]
    assert [parse_request_line(line) for line in requests] == list(mixed.requests)
    assert "\n".join(requests) == locust_options(mixed)["request"]
    assert read_back(locust_options(mixed)).requests == mixed.requests
    assert "--keep-backoff" in LocustDriver(Path("/logs")).argv("http://h", kept, 1)
    assert "--keep-backoff" not in LocustDriver(Path("/logs")).argv("http://h", spec, 1)


@pytest.mark.live  # Locust itself
def test_locust_parses_the_local_command_line(scenario):
    """Every flag is one Locust's parser takes (the retrystorm ones registered as the locustfile does).

    In a process of its own: importing Locust monkey-patches the process with gevent.
    """

    spec = RunSpec.of(scenario, scenario.strategies[1])
    argv = LocustDriver(Path("/logs")).argv("http://127.0.0.1:1", spec, 1234)
    code = (
        "import sys; from locust.argument_parser import parse_options; "
        "from retrystorm.loadgen.flags import add_arguments; from locust import events; "
        "events.init_command_line_parser.add_listener(add_arguments); "
        "o = parse_options(sys.argv[1:]); "
        "print(o.num_users, o.spawn_rate, o.run_time, o.retry_strategy, o.keep_backoff, o.request_path)"
    )
    found = subprocess.run([sys.executable, "-c", code, *argv[3:]], capture_output=True, text=True, check=False)
    assert found.returncode == 0, found.stderr or shlex.join(argv)
    assert found.stdout.splitlines()[-1].split() == [
        "100",
        "100.0",
        "70",
        "exponential:base=50ms,factor=2,max=5m,jitter=full",
        "False",
        "/api",
    ]


def test_a_spec_the_load_generator_refuses_is_refused_before_anything_starts(scenario):
    bad = dataclasses.replace(RunSpec.of(scenario, scenario.strategies[0]), attempt_timeout_s=float("inf"))
    with pytest.raises(UserError, match=r"^--attempt-timeout: "):
        check_options(bad)


def test_default_workers_follow_the_peak_load_and_leave_a_core_free(scenario):
    from retrystorm.runner.local.locust import default_workers, peak_attempts_per_s

    spec = RunSpec.of(scenario, scenario.strategies[0])
    small = dataclasses.replace(spec, users=100)  # 100 users / min(2 s mean think, 2 s timeout): 50/s
    assert peak_attempts_per_s(small) == 50.0
    assert default_workers(small, cores=8) == 1
    big = dataclasses.replace(spec, users=6000)  # 3,000 attempts/s: three workers at 1,000/s each
    assert default_workers(big, cores=8) == 3
    assert default_workers(big, cores=2) == 1  # one core for the target and the runner
    assert default_workers(dataclasses.replace(spec, users=1_000_000), cores=8) == 7


def test_the_driver_describes_one_process_or_a_master_and_workers(scenario, tmp_path):
    spec = RunSpec.of(scenario, scenario.strategies[0])
    assert "one process:" in LocustDriver(tmp_path, 1).describe(spec)
    assert "a master and 4 workers:" in LocustDriver(tmp_path, 4).describe(spec)
    assert "--workers auto" in LocustDriver(tmp_path).describe(spec)


GRPC_SCENARIO = """\
name: g
model: exponential
grpc: {mode: real, request_bytes: "hex:0a026869"}
load: {users: 10, duration: 20s}
strategies:
  - grpc-retry:max_tokens=10
  - {label: emulated, strategy: "fixed:100ms", grpc_mode: emulated}
"""


def test_a_grpc_load_runs_the_grpc_user_with_its_mode_method_and_request(tmp_path):
    found = parse_scenario(GRPC_SCENARIO, source="g.yaml")
    real, emulated = (RunSpec.of(found, entry) for entry in found.strategies)
    options = locust_options(real)
    assert options["grpc_mode"] == "real" and options["grpc_method"] == "/retrystorm.target.v1.Target/Echo"
    assert options["grpc_request"] == "b64:CgJoaQ=="  # the same bytes, as the user's flag takes them
    assert locust_options(emulated)["grpc_mode"] == "emulated"
    assert "grpc_mode" not in locust_options(RunSpec.of(parse_scenario(SCENARIO, source="a.yaml"), _first()))
    driver = LocustDriver(tmp_path)
    argv = driver.argv("127.0.0.1:9", real, 1)
    assert argv[argv.index("-f") + 1].endswith("grpc_locustfile.py") and "--grpc-request=b64:CgJoaQ==" in argv
    assert "gRPC calls of /retrystorm.target.v1.Target/Echo, grpcio retries (real)" in describe_load(real)
    assert "one gRPC channel (one retry throttle) per process running users" in driver.describe(real)


def _first():
    return parse_scenario(SCENARIO, source="a.yaml").strategies[0]


def test_real_mode_refuses_a_strategy_with_no_grpcio_form_as_the_user_would():
    found = parse_scenario(GRPC_SCENARIO, source="g.yaml")
    spec = dataclasses.replace(RunSpec.of(found, found.strategies[1]), grpc=RunSpec.of(found, found.strategies[0]).grpc)
    with pytest.raises(UserError) as caught:
        check_options(spec)
    assert "--grpc-mode real: --retry-strategy 'fixed:100ms' has no grpcio form" in str(caught.value)


URLLIB3_SCENARIO = """\
name: u
model: exponential
load: {users: 10, duration: 20s}
strategies:
  - {label: real, strategy: "urllib3:total=3,backoff_factor=0.1", http_client: urllib3}
  - {label: emulated, strategy: "urllib3:total=3,backoff_factor=0.1"}
"""


def test_urllib3_s_own_retry_runs_the_urllib3_user_with_the_preset_s_flags_left_to_it(tmp_path):
    found = parse_scenario(URLLIB3_SCENARIO, source="u.yaml")
    real, emulated = (RunSpec.of(found, entry) for entry in found.strategies)
    options = locust_options(real)
    assert [options[dest] for dest in ("max_attempts", "retry_budget", "retry_on", "request_deadline")] == [
        "auto", "auto", "auto", "none"
    ]  # fmt: skip
    check_options(real)  # what the urllib3 user checks at its start
    assert locust_options(emulated)["max_attempts"] == "4"  # the emulation takes the preset's cap as a flag
    driver = LocustDriver(tmp_path)
    argv = driver.argv("http://127.0.0.1:9", real, 1)
    assert argv[argv.index("-f") + 1].endswith("/locustfile.py")
    assert "--http-client=urllib3" in argv  # the one locustfile's urllib3 user
    other = driver.argv("http://127.0.0.1:9", emulated, 1)
    assert other[other.index("-f") + 1].endswith("/locustfile.py")
    assert not any(flag.startswith("--http-client") for flag in other)  # the default: the emulation
    assert "urllib3's own Retry retries" in describe_load(real)
    assert "urllib3's own Retry" not in describe_load(emulated)
