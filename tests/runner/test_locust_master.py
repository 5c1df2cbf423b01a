"""The Locust master driver's swarm form and how it reads the master's answers."""

import asyncio
import dataclasses
import socket

import pytest

from retrystorm.experiment.scenario import RunSpec
from retrystorm.loadgen.options import FLAG_DESTS, OPTIONS, load_options, overlay_form
from retrystorm.runner.locust_args import locust_options
from retrystorm.runner.locust_master import MasterApi, MasterLoad, swarm_form, swarm_refusal


@pytest.fixture
def spec(small):
    return RunSpec.of(small, small.strategies[0])


def test_the_form_carries_users_host_run_time_and_every_option(spec):
    form = swarm_form(spec, "http://target:8070", run_margin_s=30.0)
    assert form["user_count"] == "100"
    assert form["spawn_rate"] == "100"
    assert form["host"] == "http://target:8070"
    assert form["run_time"] == "70s"  # 40 s + 30 s
    assert set(form) >= {option.dest for option in OPTIONS} | set(FLAG_DESTS)
    options = {key: value for key, value in locust_options(spec).items() if key != "users"}
    assert {key: form[key] for key in options} == options  # the one translation, as the local backend's flags
    assert form["keep_backoff"] == "false"
    assert form["ignore_retry_after"] == "false"
    assert form["request_path"] == "/api"


def test_the_form_overrides_whatever_the_previous_swarm_left(spec):
    """Locust keeps form values from swarm to swarm: nothing of the last one may leak into this one."""
    left = {option.dest: "junk" for option in OPTIONS} | dict.fromkeys(FLAG_DESTS, True)
    values = overlay_form(left, swarm_form(spec, "http://target:8070"))
    options = load_options(values)  # what the master's check and every worker read
    assert options.policy == spec.policy
    assert options.policy.reset_after_success is True
    assert options.policy.honour_retry_after is True
    assert options.request_path == "/api"
    assert options.seed == spec.seed
    assert options.attempt_timeout_s == spec.attempt_timeout_s


def test_kept_backoff_is_sent_as_true(spec):
    kept = dataclasses.replace(spec, policy=dataclasses.replace(spec.policy, reset_after_success=False))
    form = swarm_form(kept, "http://target:8070")
    assert form["keep_backoff"] == "true"
    assert load_options(overlay_form({}, form)).policy.reset_after_success is False


def test_fractional_spawn_rates_are_sent_as_written(spec):
    assert swarm_form(dataclasses.replace(spec, spawn_rate=2.5), "http://t")["spawn_rate"] == "2.5"


@pytest.mark.parametrize(
    ("answer", "refusal"),
    [
        ({"success": True, "message": "Swarming started", "host": "http://t"}, None),
        ({"success": False, "message": "--retry-strategy: got 'fixed:lots'", "host": "http://t"}, "--retry-strategy"),
        ({"success": False}, "unexpected answer"),
        (["not", "a", "mapping"], "unexpected answer"),
        ({"success": "true"}, "unexpected answer"),
    ],
)
def test_the_masters_answer_to_a_swarm(answer, refusal):
    found = swarm_refusal(answer)
    if refusal is None:
        assert found is None
    else:
        assert found is not None and refusal in found


def test_an_unreachable_master_is_a_reason_for_the_watch():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        load = MasterLoad(MasterApi(f"http://127.0.0.1:{port}", "the Locust master"), "http://t", 2, 1.0)

        async def probe():
            try:
                return await load.probe()
            finally:
                await load.api.close()

        reason = asyncio.run(probe())
    assert reason is not None and reason.startswith(f"cannot reach the Locust master at http://127.0.0.1:{port}")


class StatsApi:
    """A master API that answers ``GET /stats/requests`` with ``answer`` (or fails)."""

    base_url = "http://127.0.0.1:1"

    def __init__(self, answer):
        self.answer = answer

    async def call_json(self, method, path, *, timeout_s):
        from retrystorm.runner.errors import RunFailedError

        assert (method, path) == ("GET", "/stats/requests")
        if isinstance(self.answer, Exception):
            raise RunFailedError("the master did not answer")
        return self.answer


@pytest.mark.parametrize(
    ("answer", "shares"),
    [
        (
            {"workers": [{"id": "a", "cpu_usage": 97.0}, {"id": "b", "cpu_usage": 12.5}]},
            {"worker a": 0.97, "worker b": 0.125},
        ),
        ({"workers": [{"id": "a"}]}, None),  # no figure yet
        ({"workers": "junk"}, None),
        (RuntimeError(), None),  # the master did not answer: not read, not saturated
    ],
)
def test_the_compose_generators_cpu_is_what_the_master_heard_from_each_worker(answer, shares):
    load = MasterLoad(StatsApi(answer), "http://target:8070", workers=2, stop_timeout_s=1.0)
    assert asyncio.run(load.generator_cpu()) == shares
