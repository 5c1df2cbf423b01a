"""A Chaos Toolkit control: end each retrystorm load once its verdict is known; the verdicts in the journal.

Declared at the experiment's level (``"controls": [{"name": "retrystorm", "provider": {"type": "python",
"module": "retrystorm.integrations.chaostoolkit.control"}}]``), it makes every load started afterwards stop as soon
as its verdict is known (``recovered``, ``not recovered`` or ``no verdict``, which more readings cannot change):
a ``run_load`` in the background then returns, the method ends, and the steady-state hypothesis is checked at once
instead of after the load's whole duration. When the experiment ends it adds each load's final verdict and figures
to the journal (``extensions``, name ``retrystorm``) and stops any load still running.
"""

from __future__ import annotations

from typing import Any

from retrystorm.integrations.chaostoolkit.session import SESSIONS

__all__ = ["after_experiment_control", "cleanup_control", "configure_control"]


def configure_control(stop_when_known: bool = True, **_ignored: Any) -> None:
    """Loads started from now on end when their verdict is known (``stop_when_known``)."""
    SESSIONS.stop_when_known = bool(stop_when_known)


def after_experiment_control(state: Any = None, **_ignored: Any) -> None:
    """Stop every load and add their verdicts to the journal (``state``) as an extension named ``retrystorm``."""
    SESSIONS.stop_all()
    if not isinstance(state, dict):
        return
    with SESSIONS.lock:
        sessions = list(SESSIONS.by_name.values())
    reports = [session.report() for session in sessions]
    state.setdefault("extensions", []).append({"name": "retrystorm", "loads": reports})


def cleanup_control() -> None:
    """Leave nothing running; later experiments in this process start without the control."""
    SESSIONS.stop_all()
    SESSIONS.stop_when_known = False
