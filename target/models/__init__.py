"""Overload models: the pure core of the server side.

A model decides when each in-flight request finishes, given the time and the load.
No clock, no I/O, no global random state: the HTTP service and the simulator drive the
same models. Importing this package registers every model.
"""

from retrystorm.target.models.base import (
    MAX_DURATION_S,
    MAX_FACTOR,
    MAX_REQUESTS,
    MODELS,
    Completion,
    ModelServer,
    Outcome,
    OverloadModel,
    next_tick_s,
    parse_model,
    switch_model,
)
from retrystorm.target.models.capacity import ScaledServer
from retrystorm.target.models.exponential import ExponentialModel, ExponentialServer
from retrystorm.target.models.fixed import FixedModel, FixedServer
from retrystorm.target.models.linear import LinearModel, LinearServer
from retrystorm.target.models.queue import QueueModel, QueueServer

__all__ = [
    "MAX_DURATION_S",
    "MAX_FACTOR",
    "MAX_REQUESTS",
    "MODELS",
    "Completion",
    "ExponentialModel",
    "ExponentialServer",
    "FixedModel",
    "FixedServer",
    "LinearModel",
    "LinearServer",
    "ModelServer",
    "Outcome",
    "OverloadModel",
    "QueueModel",
    "QueueServer",
    "ScaledServer",
    "next_tick_s",
    "parse_model",
    "switch_model",
]
