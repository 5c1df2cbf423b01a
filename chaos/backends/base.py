"""The fault-backend interface: pause, resume and inspect targets.

A *target* is what a user names (``target``, a compose service, a registered local
process); a backend resolves it to one or more :class:`TargetRef` — concrete things it
can freeze (a process identified by pid *and* start time, so a recycled pid is never
signalled; a container by id). Backends are synchronous and small; the outage
controller (:mod:`retrystorm.chaos.controller`) owns timing, journaling and guaranteed resume.
"""

from __future__ import annotations

import dataclasses
import enum
from abc import ABC, abstractmethod
from typing import Any, ClassVar, Protocol

from retrystorm.errors import EnvironmentFailureError, UserError


class TargetState(enum.StrEnum):
    """What a backend sees of a target right now."""

    RUNNING = "running"
    PAUSED = "paused"
    GONE = "gone"


@dataclasses.dataclass(frozen=True, slots=True)
class TargetRef:
    """One concrete frozen-able thing: ``backend`` name, user-facing ``target``, ``ident``."""

    backend: str
    target: str
    ident: str

    def describe(self) -> str:
        """``process target (pid 123)`` style text for messages."""
        return f"{self.backend} {self.target!r} ({self.ident})"


class TargetRefusedError(UserError):
    """The target exists but may not be paused (e.g. a container without the opt-in label)."""


class UnknownTargetError(UserError):
    """No target of that name."""


class BackendError(EnvironmentFailureError):
    """The backend failed to act (engine unreachable, permission denied...)."""


class FaultHadNoEffectError(BackendError):
    """A fault was injected but changed nothing (a pause that froze no process): reverted, never counted."""


class CpuCut(Protocol):
    """One CPU capacity cut a backend planned (:meth:`FaultBackend.plan_cpu_cut`); nothing changes until :meth:`apply`.

    ``ref`` names what the journal and the dead-man watchdog guard: backend ``cgroup`` (ident: the
    throttle group's directory) or ``docker`` (ident: the container id). :meth:`undo` is everything a
    restore needs, the original settings included, as JSON; it is journaled before :meth:`apply`.
    """

    ref: TargetRef

    @property
    def cpus_before(self) -> float:
        """The target's CPU allowance before the cut, in CPUs."""
        ...

    @property
    def cpus_during(self) -> float:
        """The CPUs the cut leaves it."""
        ...

    def undo(self) -> dict[str, Any]:
        """What restores the original settings, as JSON (journal, watchdog order)."""
        ...

    def prepare(self) -> None:
        """Make what the dead-man switch will guard, changing nothing yet (a cgroup: the empty throttle group)."""
        ...

    def apply(self) -> None:
        """Cut now (raises :class:`BackendError`)."""
        ...

    def restore(self) -> str:
        """Put the original settings back: ``"restored"`` or ``"gone"``; idempotent (raises :class:`BackendError`)."""
        ...


class FaultBackend(ABC):
    """Pauses and resumes targets the way SIGSTOP / ``docker pause`` does."""

    name: ClassVar[str]

    @abstractmethod
    def resolve(self, target: str) -> list[TargetRef]:
        """The concrete refs behind ``target``; raises :class:`UnknownTargetError` / :class:`TargetRefusedError`."""

    @abstractmethod
    def targets(self) -> list[str]:
        """Names of the targets this backend may pause."""

    @abstractmethod
    def pause(self, ref: TargetRef) -> None:
        """Freeze ``ref``; idempotent."""

    def pause_all(self, target: str, refs: list[TargetRef]) -> list[TargetRef]:
        """Freeze every ref of ``target`` (each already journaled and guarded); return refs frozen besides them.

        The controller calls this once per pause, after arming a dead-man switch for every
        ref, and journals and guards what it returns. The default pauses each ref in turn
        and freezes nothing more; a process group is frozen at once and read again, so the
        members forked since :meth:`resolve` come back here
        (:class:`~retrystorm.chaos.backends.process.ProcessBackend`).
        """
        for ref in refs:
            self.pause(ref)
        return []

    def confirm_paused(self, target: str, refs: list[TargetRef]) -> None:
        """Raise :class:`FaultHadNoEffectError` unless the pause froze ``target``: every ref paused or gone, one paused.

        The controller calls this after :meth:`pause_all`, so that a pause which froze nothing (every process
        gone, a signal that did not take) is an error, not an outage.
        """
        states = {ref: self.state(ref) for ref in refs}
        running = [ref.ident for ref, state in states.items() if state is TargetState.RUNNING]
        if running:
            raise FaultHadNoEffectError(
                f"the pause of {target!r} did not freeze {len(running)} of its {len(refs)} instances "
                f"({', '.join(running[:5])}); nothing counts as an outage"
            )
        if TargetState.PAUSED not in states.values():
            raise FaultHadNoEffectError(f"the pause of {target!r} froze nothing: every instance is gone")

    @abstractmethod
    def resume(self, ref: TargetRef) -> None:
        """Unfreeze ``ref``; idempotent; a ref that is gone is not an error."""

    @abstractmethod
    def state(self, ref: TargetRef) -> TargetState:
        """Whether ``ref`` runs, is paused, or is gone."""

    def plan_cpu_cut(self, target: str, refs: list[TargetRef], capacity: float, tag: str) -> list[CpuCut]:
        """The cuts that take ``target``'s CPU to ``capacity`` of its allowance (:mod:`retrystorm.chaos.cpu_quota`).

        Reads the current settings only; raises :class:`TargetRefusedError` when the target cannot be
        throttled, naming what would make it possible. ``tag`` makes names unique (a cgroup's).
        """
        raise TargetRefusedError(f"target {target!r}: the {self.name} backend cannot cut CPU capacity")

    def restore_cpu(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        """Undo a cut from its journaled ``undo`` (recovery); ``"restored"`` or ``"gone"``."""
        raise BackendError(f"the {self.name} backend cannot restore the CPU of {ref.describe()}")

    def stray_paused(self) -> list[TargetRef]:
        """Targets found paused that this backend may resume at start-up (docker: labelled ones)."""
        return []
