"""Pause targets through a chaos API (``retrystorm chaos serve``) instead of directly.

In a compose stack one chaos service owns the Docker socket: it pauses containers with
its docker backend, journals them, exports ``retrystorm_chaos_outage_active``, posts
Grafana annotations and feeds the Locust web UI's Chaos tab. A scenario run against
that stack pauses through it, so all of that sees the scenario's outages too.

Each pause asks the chaos API for an outage of ``hold_s`` seconds (the runner passes
its longest outage plus a margin) and :meth:`ChaosApiBackend.resume` ends it early, on
time. So the target is resumed by whichever comes first: this process on schedule,
the chaos service when ``hold_s`` is up (even if this process was SIGKILLed), or the
chaos service's own shutdown and restart recovery.
"""

from __future__ import annotations

import logging

from chaos.backends.base import BackendError, FaultBackend, TargetRef, TargetState, UnknownTargetError
from chaos.client import ChaosApiError, ChaosClient
from retrystorm.durations import format_duration

log = logging.getLogger(__name__)


class ChaosApiBackend(FaultBackend):
    """Targets of the chaos API at ``client.base_url``; a pause is an outage of ``hold_s`` there."""

    name = "chaos-api"

    def __init__(self, client: ChaosClient, *, hold_s: float) -> None:
        if not hold_s > 0:
            raise ValueError(f"hold_s must be > 0, got {hold_s}")
        self.client = client
        self.hold_s = hold_s

    def _targets(self) -> dict[str, str]:
        """Target name -> state, as ``GET /targets`` lists them."""
        try:
            return {row["target"]: row["state"] for row in self.client.overview()}
        except ChaosApiError as error:
            raise BackendError(error.message) from error

    def targets(self) -> list[str]:
        return sorted(self._targets())

    def resolve(self, target: str) -> list[TargetRef]:
        known = self._targets()
        if target not in known:
            raise UnknownTargetError(
                f"the chaos API at {self.client.base_url} has no target {target!r}; "
                f"it can pause: {', '.join(sorted(known)) or 'nothing'}"
            )
        return [TargetRef(self.name, target, target)]

    def pause(self, ref: TargetRef) -> None:
        try:
            outage = self.client.pause(ref.target, format_duration(self.hold_s))
        except ChaosApiError as error:
            raise BackendError(f"the chaos API did not pause {ref.target!r}: {error.message}") from error
        if outage.get("clamped"):
            log.warning(
                "the chaos API clamps outages of %r to %.0f s, shorter than the %.0f s asked",
                ref.target,
                outage["duration_s"],
                self.hold_s,
            )

    def resume(self, ref: TargetRef) -> None:
        try:
            self.client.resume(ref.target)
        except ChaosApiError as error:
            if error.status == 409:  # no active outage: already resumed (its hold ran out, or a restart)
                return
            raise BackendError(f"the chaos API did not resume {ref.target!r}: {error.message}") from error

    def state(self, ref: TargetRef) -> TargetState:
        state = self._targets().get(ref.target)
        return TargetState(state) if state in set(TargetState) else TargetState.GONE
