"""Package docstrings that say what is there: each names its modules, experiments or commands, and nothing else."""

import importlib
import pkgutil
import re

import retrystorm.chaos
import retrystorm.sim.experiments
from retrystorm.sim.cli import sim

#: Modules of sim/experiments that are not experiments, and what they are.
EXPERIMENT_HELPERS = {"base": "what an experiment hands to the output layer", "scenario_runs": "sim run's engine"}


def named(docstring: str) -> set[str]:
    """The names a docstring quotes as ``name`` or ``name/``."""
    return {match.rstrip("/") for match in re.findall(r"``([\w/]+)``", docstring)}


def test_the_chaos_package_docstring_names_each_of_its_modules_and_subpackages():
    modules = {info.name for info in pkgutil.iter_modules(retrystorm.chaos.__path__)}
    assert modules >= {"controller", "watchdog", "backends", "network"}
    missing = modules - named(retrystorm.chaos.__doc__ or "")
    assert not missing, f"chaos/__init__.py does not say what these are: {sorted(missing)}"


def test_the_experiments_docstring_lists_every_sim_experiment_and_each_is_a_command():
    experiments = set(sim.commands) - {"run"}
    modules = {info.name for info in pkgutil.iter_modules(retrystorm.sim.experiments.__path__)}
    assert len(experiments) >= 6
    assert modules - set(EXPERIMENT_HELPERS) == experiments, "one module of sim/experiments per sim command"
    for name in experiments:
        importlib.import_module(f"retrystorm.sim.experiments.{name}")
    listed = named(retrystorm.sim.experiments.__doc__ or "")
    assert experiments <= listed, f"sim/experiments/__init__.py misses {sorted(experiments - listed)}"
    assert set(EXPERIMENT_HELPERS) <= listed
