"""Analysis of a run's time series: recovery times, latency summaries, verdicts, the results document.

Pure functions over recorded series, shared by the simulator and the live runner.
"""

from retrystorm.experiment.analysis.recovery import (
    CLIENT_SIGNALS,
    SERVER_GAUGES,
    Recovery,
    RecoveryRule,
    SteadyLevels,
    client_recovery_s,
    client_side_server_recovery_s,
    default_steady_window,
    goodput_fraction,
    noise_threshold,
    recoveries,
    server_recovery_s,
    steady_levels,
)
from retrystorm.experiment.analysis.results import RunResult, Verdict, results_document
from retrystorm.experiment.analysis.samples import Samples
from retrystorm.experiment.analysis.stats import LatencySummary, percentile
from retrystorm.experiment.analysis.verdicts import evaluate

__all__ = [
    "CLIENT_SIGNALS",
    "SERVER_GAUGES",
    "LatencySummary",
    "Recovery",
    "RecoveryRule",
    "RunResult",
    "Samples",
    "SteadyLevels",
    "Verdict",
    "client_recovery_s",
    "client_side_server_recovery_s",
    "default_steady_window",
    "evaluate",
    "goodput_fraction",
    "noise_threshold",
    "percentile",
    "recoveries",
    "results_document",
    "server_recovery_s",
    "steady_levels",
]
