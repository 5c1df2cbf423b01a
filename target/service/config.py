"""The target service's settings, and the limits a model must meet to be served live."""

from __future__ import annotations

import dataclasses
import math
import socket
from pathlib import Path

from retrystorm.errors import SpecError
from retrystorm.request_guard import check_token
from retrystorm.spec import DURATION, ParamInfo, params_of
from retrystorm.target.models import ExponentialModel, OverloadModel
from retrystorm.target.models.base import MIN_TICK_S
from retrystorm.target.service.limits import ConnectionLimits

_SOMAXCONN = Path("/proc/sys/net/core/somaxconn")


def default_backlog() -> int:
    """The system's maximum listen backlog, as Go's ``net`` package uses.

    Linux caps a socket's accept queue at ``net.core.somaxconn``; that queue is where
    connections wait while the server is frozen.
    """
    try:
        return int(_SOMAXCONN.read_text().strip())
    except (OSError, ValueError):
        return socket.SOMAXCONN


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ServiceConfig:
    """Everything ``retrystorm target`` can set."""

    model: OverloadModel = dataclasses.field(default_factory=ExponentialModel)
    host: str = "127.0.0.1"
    port: int = 8070
    #: Also serve the model over gRPC on this port (0: a free one; ``None``: no gRPC), on ``host``.
    grpc_port: int | None = None
    backlog: int = dataclasses.field(default_factory=default_backlog)
    cancel_on_disconnect: bool = False
    report_interval_s: float = 0.0
    #: Seed of the random numbers the model draws (the queue model's overwhelm rule).
    seed: int | None = None
    #: Bearer token the admin API requires (empty: none, and the service listens on loopback only).
    admin_token: str = dataclasses.field(default="", repr=False)
    #: Header and idle timeouts, and the most connections open at once.
    limits: ConnectionLimits = dataclasses.field(default_factory=ConnectionLimits)

    def __post_init__(self) -> None:
        check_servable(self.model)
        check_token(self.admin_token, "admin_token")
        if not 0 <= self.port <= 65535:
            raise SpecError(f"port: got {self.port}, expected 0 to 65535 (0 picks a free port)")
        if self.grpc_port is not None and not 0 <= self.grpc_port <= 65535:
            raise SpecError(f"grpc_port: got {self.grpc_port}, expected 0 to 65535 (0 picks a free port)")
        if self.backlog < 1:
            raise SpecError(f"backlog: got {self.backlog}, expected a whole number >= 1")
        if not math.isfinite(self.report_interval_s) or self.report_interval_s < 0:
            raise SpecError(f"report_interval: got {self.report_interval_s}, expected a duration >= 0 (0 disables)")


def live_param(info: ParamInfo) -> ParamInfo:
    """``info`` with the bounds a live server adds to the model's own: a tick of at least :data:`MIN_TICK_S`.

    The admin API's model bodies state these bounds (:mod:`retrystorm.target.service.bodies`);
    :func:`check_servable` enforces them on any model.
    """
    if info.key == "tick" and info.type is DURATION:
        return dataclasses.replace(info, at_least=MIN_TICK_S, above=None)
    return info


def check_servable(model: OverloadModel) -> None:
    """Reject parameters a model accepts in theory but a live server cannot run.

    Durations and numbers must be finite, and within the bounds of :func:`live_param`
    (a tick at least :data:`MIN_TICK_S`). Raises :class:`SpecError` naming the parameter.
    """
    for info in params_of(type(model)):
        value = getattr(model, info.field)
        if not isinstance(value, float):
            continue
        if not math.isfinite(value):
            kind = "duration" if info.type is DURATION else "number"
            raise SpecError(f"model {model.name!r}: {info.key}: got {value}, expected a finite {kind}")
        floor = live_param(info).at_least
        if floor is not None and floor != info.at_least and value < floor:
            least = info.type.bound_text(floor)
            raise SpecError(
                f"model {model.name!r}: {info.key}: got {info.type.to_text(value)}, "
                f"expected at least {least} on a live server"
            )
