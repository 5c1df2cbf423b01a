"""Fault backends: ``process`` (SIGSTOP/SIGCONT) and ``docker`` (pause/unpause).

``ProcessBackend`` is loaded on first use (it needs psutil): the watchdog process, which
starts without site-packages, imports this package for :mod:`retrystorm.chaos.backends.base` and
:mod:`retrystorm.chaos.backends.procfs` only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrystorm.chaos.backends.base import (
    BackendError,
    FaultBackend,
    TargetRef,
    TargetRefusedError,
    TargetState,
    UnknownTargetError,
)

if TYPE_CHECKING:
    from retrystorm.chaos.backends.process import ProcessBackend


def __getattr__(name: str) -> Any:
    if name == "ProcessBackend":
        from retrystorm.chaos.backends.process import ProcessBackend  # noqa: PLC0415 - psutil only when used

        return ProcessBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BackendError",
    "FaultBackend",
    "ProcessBackend",
    "TargetRef",
    "TargetRefusedError",
    "TargetState",
    "UnknownTargetError",
]
