"""Scenarios: the validated file format shared by ``retrystorm sim`` and ``retrystorm run``.

Import-light on purpose (pydantic, YAML and the pure cores only): the simulator
imports it, and nothing here starts processes or talks to Docker. The shipped scenarios
are package data (``shipped/*.yaml``), found by name (:mod:`retrystorm.experiment.scenario.catalog`).
"""

from retrystorm.experiment.scenario.catalog import find_scenario, shipped_folder, shipped_names, shipped_scenario
from retrystorm.experiment.scenario.errors import ScenarioError
from retrystorm.experiment.scenario.loader import load_scenario, parse_scenario, scenario_data, scenario_from_data
from retrystorm.experiment.scenario.model import (
    Assertions,
    Load,
    Scenario,
    SimOptions,
    SpikeUniform,
    StrategyEntry,
    rng_for,
)
from retrystorm.experiment.scenario.run_spec import RunSpec
from retrystorm.experiment.scenario.timeline import (
    Episode,
    ErrorWindow,
    FaultPlan,
    Level,
    OutageWindow,
    SlowWindow,
    Span,
    SpikeWindow,
    Timeline,
    TriggerWindow,
    expand_faults,
    merge_outages,
)
from retrystorm.experiment.scenario.triggers import KINDS, ErrorsFault, Fault, Repeat, SlowFault, SpikeFault, Trigger

__all__ = [
    "KINDS",
    "Assertions",
    "Episode",
    "ErrorWindow",
    "ErrorsFault",
    "Fault",
    "FaultPlan",
    "Level",
    "Load",
    "OutageWindow",
    "Repeat",
    "RunSpec",
    "Scenario",
    "ScenarioError",
    "SimOptions",
    "SlowFault",
    "SlowWindow",
    "Span",
    "SpikeFault",
    "SpikeUniform",
    "SpikeWindow",
    "StrategyEntry",
    "Timeline",
    "Trigger",
    "TriggerWindow",
    "expand_faults",
    "find_scenario",
    "load_scenario",
    "merge_outages",
    "parse_scenario",
    "rng_for",
    "scenario_data",
    "scenario_from_data",
    "shipped_folder",
    "shipped_names",
    "shipped_scenario",
]
