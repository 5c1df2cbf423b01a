"""The live ``slow`` trigger as a CPU capacity cut through the chaos controller (both backends may use it).

For a service of one's own, a slow cuts what a pause freezes (the handle's ``cpu_target``:
the command's process group, a registered pid, a labelled container or compose service)
through :meth:`retrystorm.chaos.controller.OutageController.throttle`, the one CPU cut retrystorm has
(:mod:`retrystorm.chaos.throttles`): journaled first, a dead-man watchdog armed before the cut that
restores the target's own settings at the deadline even if the runner is SIGKILLed, restored
by ``retrystorm chaos recover`` and by the next run's start otherwise. A process keeps its own
cgroup untouched: it is moved into a throttle group of its own for the cut and back out at
its end; a container gets its own ``NanoCpus``/``CpuQuota`` back.

:class:`ThrottleControls` plays each level of the timeline as one throttle: a change of level
ends the throttle in force and starts the next (capacity 1: none), for the level's planned
hold plus :data:`LEVEL_MARGIN_S` (the runner's next change ends it first; the controller's own
timer, then the watchdog, only if the runner could not). :meth:`ThrottleControls.restore` ends
the one in force; the controller's ``resume_all`` on every exit path ends it too.
"""

from __future__ import annotations

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.targets import FaultTarget
from retrystorm.chaos.throttles import Throttle
from retrystorm.errors import UserError
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.interfaces import TargetControls

#: A level's throttle lasts its planned hold plus this: the next change, not the timer, ends it.
LEVEL_MARGIN_S = 1.0


class ThrottleControls:
    """The slow trigger on ``target`` through ``controller`` (a :class:`~retrystorm.runner.interfaces.TargetControls`).

    ``errors``: the target's own controls, which take the error bursts (``None``: refused before the run).
    """

    def __init__(self, controller: OutageController, target: FaultTarget, errors: TargetControls | None = None) -> None:
        self.controller = controller
        self.target = target
        self.errors = errors
        #: The throttle of the level in force (``None``: full capacity).
        self.current: Throttle | None = None
        #: Every throttle started, oldest first.
        self.started: list[Throttle] = []

    async def set_capacity(self, capacity: float, hold_s: float) -> None:
        """End the level in force; below full capacity, cut ``capacity`` of the target's allowance for ``hold_s``."""
        await self._end("level change")
        if capacity >= 1:
            return
        try:
            self.current = await self.controller.throttle(self.target, capacity, max(0.0, hold_s) + LEVEL_MARGIN_S)
        except (BackendError, UserError) as error:
            raise RunFailedError(f"cannot cut the CPU of {self.target.name!r}: {error}") from error
        self.started.append(self.current)

    async def set_errors(self, status: int | None, probability: float) -> None:
        if self.errors is None:
            raise RunFailedError("errors: a service of your own takes no error burst (refused before the run)")
        await self.errors.set_errors(status, probability)

    async def restore(self) -> None:
        """The target's own CPU settings back (the throttle in force ended), then what ``errors`` changed."""
        try:
            await self._end("restored")
        finally:
            if self.errors is not None:
                await self.errors.restore()

    async def _end(self, reason: str) -> None:
        throttle, self.current = self.current, None
        if throttle is None:
            return
        try:
            await throttle.end(reason=reason)
        except (BackendError, UserError) as error:
            raise RunFailedError(f"cannot restore the CPU of {self.target.name!r}: {error}") from error
        if throttle.status == "failed":
            raise RunFailedError(
                f"cannot restore the CPU of {self.target.name!r}: {throttle.error}; its watchdog restores it at the "
                "cut's deadline, or `retrystorm chaos recover`"
            )
