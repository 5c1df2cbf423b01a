"""Fault backends: ``process`` (SIGSTOP/SIGCONT) and ``docker`` (pause/unpause)."""

from chaos.backends.base import (
    BackendError,
    FaultBackend,
    TargetRef,
    TargetRefusedError,
    TargetState,
    UnknownTargetError,
)
from chaos.backends.process import ProcessBackend

__all__ = [
    "BackendError",
    "FaultBackend",
    "ProcessBackend",
    "TargetRef",
    "TargetRefusedError",
    "TargetState",
    "UnknownTargetError",
]
