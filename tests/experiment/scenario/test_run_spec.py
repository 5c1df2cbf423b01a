"""One strategy's resolved run: the load section with the entry's overrides, for the simulator and live alike."""

import pytest

from retrystorm.experiment.scenario import RunSpec, parse_scenario
from retrystorm.loadgen.think import ConstantThink

SCENARIO = """\
name: spec
seed: 9
model: fixed:base_delay=50ms
load: {users: 40, spawn_rate: 4, think_time: constant:1s, attempt_timeout: 1s, duration: 30s,
       max_attempts: 5, request_deadline: 10s, budget: tokens, reset_after_success: false}
strategies:
  - fixed:100ms
  - {label: own, strategy: smira, max_attempts: 2, request_deadline: 3s, budget: quota}
"""


@pytest.fixture
def scenario():
    return parse_scenario(SCENARIO, source="spec.yaml")


def test_the_load_section_resolved(scenario):
    spec = RunSpec.of(scenario, scenario.strategies[0])
    assert (spec.label, spec.model, spec.seed) == ("fixed:100ms", scenario.model, 9)
    assert (spec.users, spec.spawn_rate, spec.think) == (40, 4.0, ConstantThink(wait_s=1.0))
    assert (spec.arrival, spec.rate, spec.attempt_timeout_s, spec.duration_s) == ("closed", None, 1.0, 30.0)
    assert spec.policy.strategy.spec() == "fixed:100ms"
    assert (spec.policy.max_attempts, spec.policy.deadline_s, spec.policy.reset_after_success) == (5, 10.0, False)
    assert spec.budget is not None and spec.budget.name == "tokens"


def test_an_entry_overrides_the_load_sections_controls(scenario):
    spec = RunSpec.of(scenario, scenario.strategies[1])
    assert (spec.label, spec.policy.strategy.name) == ("own", "smira")
    assert (spec.policy.max_attempts, spec.policy.deadline_s) == (2, 3.0)
    assert spec.budget is not None and spec.budget.name == "quota"
    assert spec.policy.reset_after_success is False  # not an entry control: the load section's
