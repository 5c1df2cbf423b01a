"""Scenarios: the validated file format shared by ``retrystorm sim`` and ``retrystorm run``.

Import-light on purpose (pydantic, YAML and the pure cores only): the simulator
imports it, and nothing here starts processes or talks to Docker.
"""

from experiment.scenario.loader import (
    SCENARIO_DIR,
    ScenarioError,
    load_scenario,
    parse_scenario,
    scenario_from_data,
    shipped_scenario,
)
from experiment.scenario.model import (
    Assertions,
    Fault,
    Load,
    Repeat,
    Scenario,
    SimOptions,
    SpikeUniform,
    StrategyEntry,
    rng_for,
)
from experiment.scenario.run_spec import RunSpec
from experiment.scenario.timeline import FaultPlan, OutageWindow, expand_faults, merge_outages

__all__ = [
    "SCENARIO_DIR",
    "Assertions",
    "Fault",
    "FaultPlan",
    "Load",
    "OutageWindow",
    "Repeat",
    "RunSpec",
    "Scenario",
    "ScenarioError",
    "SimOptions",
    "SpikeUniform",
    "StrategyEntry",
    "expand_faults",
    "load_scenario",
    "merge_outages",
    "parse_scenario",
    "rng_for",
    "scenario_from_data",
    "shipped_scenario",
]
