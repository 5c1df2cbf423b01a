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

A CPU cut goes the same way: ``POST /throttles`` for ``hold_s``, ended on time by this
process, else restored by the chaos service (its own dead-man watchdog and journal).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from retrystorm.chaos.backends.base import (
    BackendError,
    CpuCut,
    FaultBackend,
    TargetRef,
    TargetState,
    UnknownTargetError,
)
from retrystorm.chaos.client import ChaosApiError, ChaosClient
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

    def plan_cpu_cut(self, target: str, refs: list[TargetRef], capacity: float, tag: str) -> list[CpuCut]:
        """One ``POST /throttles`` of ``hold_s`` per target; the chaos API reads and restores the settings."""
        return [ApiCpuCut(ref=ref, backend=self, capacity=capacity) for ref in refs]

    def restore_cpu(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        """End the chaos API's active throttles of ``ref``'s target (its own hold would end them anyway)."""
        try:
            ended = self.client.end_throttles(ref.target)
        except ChaosApiError as error:
            raise BackendError(f"the chaos API did not restore {ref.target!r}: {error.message}") from error
        return "restored" if ended else "gone"


@dataclasses.dataclass(slots=True, kw_only=True)
class ApiCpuCut:
    """A :class:`~retrystorm.chaos.backends.base.CpuCut` made by a chaos API: ``POST /throttles``, ended by
    ``DELETE``."""

    ref: TargetRef
    backend: ChaosApiBackend
    capacity: float
    answer: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def cpus_before(self) -> float:
        """The allowance the chaos API measured (0 before the cut)."""
        return float(sum(self.answer.get("cpus_before", [])))

    @property
    def cpus_during(self) -> float:
        """The CPUs the chaos API's cut leaves (0 before the cut)."""
        return float(sum(self.answer.get("cpus_during", [])))

    def undo(self) -> dict[str, Any]:
        """Where the cut was made: the chaos API restores it by itself at its hold."""
        return {"kind": "chaos-api", "url": self.backend.client.base_url}

    def prepare(self) -> None:
        """Nothing: the chaos API guards its own cut."""

    def apply(self) -> None:
        """``POST /throttles`` for the backend's ``hold_s``."""
        client, hold = self.backend.client, format_duration(self.backend.hold_s)
        try:
            self.answer = client.throttle(self.ref.target, self.capacity, hold)
        except ChaosApiError as error:
            raise BackendError(f"the chaos API did not throttle {self.ref.target!r}: {error.message}") from error

    def restore(self) -> str:
        """``DELETE /throttles/ID`` (``"gone"`` if its hold already ended it)."""
        return self.backend.restore_cpu(self.ref, self.undo())
