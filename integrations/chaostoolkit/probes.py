"""Chaos Toolkit probes: a load's verdict and its figures.

``verdict`` returns a JSON object whose ``verdict`` is one of ``not started``, ``steady``, ``pending``,
``recovered``, ``not recovered`` and ``no verdict`` (:mod:`.verdict` defines each), with ``reason`` (one line) and
the figures of the runner's analysis: recovery times after each pause (``figures.server_recovery_s``,
``figures.client_recovery_s``), ``figures.amplification``, ``goodput_per_s`` (steady, last 5 s), and
``figures.validity`` (whether the load generator kept up). A steady-state hypothesis checks it with a ``regex``
tolerance on ``verdict``.
"""

from __future__ import annotations

import time
from typing import Any

from retrystorm.integrations.chaostoolkit.session import SESSIONS
from retrystorm.integrations.chaostoolkit.verdict import NO_VERDICT, NOT_STARTED

__all__ = ["verdict"]


def verdict(name: str = "retrystorm", wait_s: float = 0.0) -> dict[str, Any]:
    """The verdict of the load called ``name`` as it stands, or after waiting up to ``wait_s`` for it to be known.

    Before a load of that name started in this experiment (the hypothesis before the method): ``not started``; a
    load whose start failed (a wrong argument, Locust that did not spawn): ``no verdict``, with the reason.
    """
    session = SESSIONS.get(name)
    failure = SESSIONS.failure(name)
    if failure is not None:
        return {"verdict": NO_VERDICT, "reason": f"its load did not start: {failure}", "session": name}
    if session is None:
        return {"verdict": NOT_STARTED, "reason": f"no load named {name!r} has started yet", "session": name}
    if wait_s > 0 and session.running and not session.judgement().known:
        _wait_until_known(session, float(wait_s))
    return session.report()


def _wait_until_known(session: Any, wait_s: float) -> None:
    """Poll once a second, as the readings come, until the verdict is known or ``wait_s`` passed."""
    deadline = time.monotonic() + wait_s
    while session.running and time.monotonic() < deadline and not session.judgement().known:
        session.wait(min(1.0, max(0.0, deadline - time.monotonic())))
