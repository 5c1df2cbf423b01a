"""What a watchdog does at its deadline, per backend: resume one target, and tell whether it is gone.

- **process** (``PID@STARTTICKS``): :class:`ProcessGuard` opens a pidfd, *then* checks the start ticks in
  ``/proc/PID/stat`` (in the other order the pid could be recycled between check and open). SIGCONT goes
  through the pidfd, which never reaches a recycled pid (a dead target gives ESRCH: done), and the pidfd
  turns readable when the target exits. Without pidfds (Linux < 5.3, or a sandbox that forbids them) it
  re-checks the start ticks every second and right before ``os.kill``: a window of microseconds remains
  in which a recycled pid could be signalled.
- **docker** (container id): :class:`DockerGuard` unpauses the container through the Docker SDK if it is
  paused; a container that is gone is done. The SDK is imported 2 s before the deadline, not while the
  watchdog idles; an engine that does not answer is retried for 5 minutes.
- **throttles**: :class:`CgroupThrottleGuard` empties a throttle cgroup back into the original one and
  removes it (:meth:`retrystorm.chaos.cgroups.CgroupCut.restore`); gone once the group is. :class:`DockerThrottleGuard`
  writes the container's original CPU settings back (``docker update``), with the docker guard's retries.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
import time
from typing import Any, Protocol

from retrystorm.chaos.backends.procfs import process_start_ticks, process_state_letter

log = logging.getLogger(__name__)

#: A docker watchdog imports the SDK and connects this long before its deadline...
DOCKER_PREPARE_S = 2.0
#: ... and retries an engine that does not answer for this long after it, every DOCKER_RETRY_EVERY_S.
DOCKER_RETRY_S = 300.0
DOCKER_RETRY_EVERY_S = 2.0


class NothingToGuardError(Exception):
    """The target is gone already: nothing to guard."""


class Guard(Protocol):
    """One target's resume, as a watchdog needs it."""

    prepare_s: float  # prepare() runs this long before the deadline
    watch_fd: int | None  # readable once the target is gone; without one, gone() is asked every second

    def close(self) -> None:
        """Let go of what it holds (a pidfd) once it has acted or stood down."""

    def gone(self) -> bool:
        """Whether the target no longer exists."""

    def prepare(self) -> None:
        """Get ready to resume (``prepare_s`` before the deadline)."""

    def resume(self) -> str:
        """``"resumed"``, or what was found instead: ``"gone"``, ``"not paused"``; raises if it failed."""


class ProcessGuard:
    """SIGCONT to one process named by ``PID@STARTTICKS``, through a pidfd unless ``use_pidfd`` is False."""

    prepare_s = 0.0

    def __init__(self, ident: str, *, use_pidfd: bool = True) -> None:
        pid_text, _, ticks_text = ident.partition("@")
        self.pid, self.ticks = int(pid_text), int(ticks_text)
        self.watch_fd: int | None = None
        if use_pidfd and hasattr(os, "pidfd_open"):
            try:
                self.watch_fd = os.pidfd_open(self.pid)
            except ProcessLookupError:
                raise NothingToGuardError(f"no process {self.pid}") from None
            except OSError as error:
                log.warning("no pidfd (%s): checking the start ticks of pid %d instead", error, self.pid)
        if process_start_ticks(self.pid) != self.ticks:  # after the open: so the pidfd names this very process
            self.close()
            raise NothingToGuardError(f"pid {self.pid} no longer names the process started at tick {self.ticks}")

    def close(self) -> None:
        """Close the pidfd (a watchdog process exits instead)."""
        if self.watch_fd is not None:
            os.close(self.watch_fd)
            self.watch_fd = None

    def gone(self) -> bool:
        """Whether the process has exited (a zombie counts), or its pid names another."""
        if self.watch_fd is not None:
            return bool(select.select([self.watch_fd], [], [], 0)[0])
        return process_start_ticks(self.pid) != self.ticks or process_state_letter(self.pid) in (None, "Z", "X")

    def prepare(self) -> None:
        """Nothing to prepare."""

    def resume(self) -> str:
        """SIGCONT, unless the process is gone."""
        if self.gone():
            return "gone"
        try:
            if self.watch_fd is not None:
                signal.pidfd_send_signal(self.watch_fd, signal.SIGCONT)
            else:
                os.kill(self.pid, signal.SIGCONT)
        except ProcessLookupError:
            return "gone"
        return "resumed"


class DockerGuard:
    """``unpause`` of one container by id; the SDK is imported by :meth:`prepare`, near the deadline."""

    prepare_s = DOCKER_PREPARE_S
    watch_fd: int | None = None  # not watched while idle (that would hold the SDK): looked at at the deadline

    def __init__(self, ident: str) -> None:
        import importlib.util  # noqa: PLC0415 - only a docker watchdog needs it

        if importlib.util.find_spec("docker") is None:
            raise RuntimeError(f"the Docker SDK is not importable by {sys.executable}")
        self.ident = ident
        self._client: Any = None

    def close(self) -> None:
        """Nothing held."""

    def gone(self) -> bool:
        """Not known before the deadline."""
        return False

    def prepare(self) -> None:
        """Import the SDK and connect; a failure is retried by :meth:`resume`."""
        try:
            import docker  # noqa: PLC0415 - the Docker SDK is heavy: only a docker watchdog, near its deadline

            self._client = docker.from_env(timeout=30)
        except Exception as error:  # the SDK raises requests and docker errors alike
            log.warning("cannot reach the Docker engine yet (%s); will retry at the deadline", error)

    def resume(self) -> str:
        """Unpause the container if it is paused; retry an engine that does not answer for ``DOCKER_RETRY_S``."""
        import docker.errors  # noqa: PLC0415 - as in prepare()

        give_up = time.monotonic() + DOCKER_RETRY_S
        while True:
            try:
                if self._client is None:
                    self.prepare()
                outcome = self._act()
                if outcome is not None:
                    return outcome
            except docker.errors.NotFound:
                return "gone"
            except Exception as error:
                if time.monotonic() > give_up:
                    raise
                log.warning("cannot unpause %s yet (%s); retrying", self.ident, error)
                time.sleep(DOCKER_RETRY_EVERY_S)
            else:
                return "resumed"

    def _act(self) -> str | None:
        """Unpause; what was found instead (``"not paused"``), or ``None`` when done."""
        container = self._client.containers.get(self.ident)
        if container.status != "paused":
            return "not paused"
        container.unpause()
        return None


class DockerThrottleGuard(DockerGuard):
    """Writes a container's original CPU settings back (the ``restore`` body of its throttle's undo)."""

    def __init__(self, ident: str, restore: dict[str, int]) -> None:
        super().__init__(ident)
        self.restore_body = dict(restore)

    def _act(self) -> str | None:
        from retrystorm.chaos.backends.docker_cpu import update_cpu  # noqa: PLC0415 - near the deadline, as the SDK

        update_cpu(self._client, self.ident, self.restore_body)
        return None


class CgroupThrottleGuard:
    """Undoes a cgroup throttle group: members back to their original cgroup, the group removed."""

    prepare_s = 0.0
    watch_fd: int | None = None

    def __init__(self, undo: dict[str, Any]) -> None:
        from retrystorm.chaos.cgroups import CgroupCut  # noqa: PLC0415 - only a throttle's watchdog

        self.cut = CgroupCut.from_undo(undo)
        if not self.cut.group.is_dir():
            raise NothingToGuardError(f"no throttle group {self.cut.group}")

    def close(self) -> None:
        """Nothing held."""

    def gone(self) -> bool:
        """The group is gone: restored already."""
        return not self.cut.group.is_dir()

    def prepare(self) -> None:
        """Nothing to prepare."""

    def resume(self) -> str:
        """Restore: ``"resumed"`` (the members moved back and the group removed) or ``"gone"``."""
        return "resumed" if self.cut.restore() == "restored" else "gone"


class FreezerGuard:
    """Thaws one frozen cgroup (:class:`retrystorm.chaos.freezer.Freezer`); gone once its directory is."""

    prepare_s = 0.0
    watch_fd: int | None = None

    def __init__(self, directory: str) -> None:
        from retrystorm.chaos.freezer import Freezer  # noqa: PLC0415 - only a cgroup's watchdog

        self.freezer = Freezer.at(directory)

    def close(self) -> None:
        """Nothing held."""

    def gone(self) -> bool:
        """The cgroup is gone."""
        return self.freezer.state() == "gone"

    def prepare(self) -> None:
        """Nothing to prepare."""

    def resume(self) -> str:
        """Thaw: ``"resumed"`` or ``"gone"``."""
        return "resumed" if self.freezer.thaw() == "thawed" else "gone"


class QuotaGuard:
    """Writes a cgroup's original CPU quota back (:class:`retrystorm.chaos.cgroup_quota.QuotaCut`)."""

    prepare_s = 0.0
    watch_fd: int | None = None

    def __init__(self, undo: dict[str, Any]) -> None:
        from retrystorm.chaos.cgroup_quota import QuotaCut  # noqa: PLC0415 - only a throttle's watchdog

        self.cut = QuotaCut.from_undo(undo)

    def close(self) -> None:
        """Nothing held."""

    def gone(self) -> bool:
        """The cgroup is gone."""
        return not self.cut.directory.is_dir()

    def prepare(self) -> None:
        """Nothing to prepare."""

    def resume(self) -> str:
        """Restore: ``"resumed"`` or ``"gone"``."""
        return "resumed" if self.cut.restore() == "restored" else "gone"


class ReapGuard:
    """Ends a run's service when its owner (the runner) dies: every process of its cgroups SIGTERMed, killed after a
    grace, the cgroups removed (:meth:`retrystorm.chaos.containment.Containment.end`)."""

    prepare_s = 0.0
    watch_fd: int | None = None

    def __init__(self, undo: dict[str, Any]) -> None:
        from retrystorm.chaos.containment import Containment  # noqa: PLC0415 - only a reap order

        self.containment = Containment.from_undo(undo)

    def close(self) -> None:
        """Nothing held."""

    def gone(self) -> bool:
        """Its cgroups are gone: the runner ended the service itself."""
        return self.containment.gone()

    def prepare(self) -> None:
        """Nothing to prepare."""

    def resume(self) -> str:
        """End the service: ``"resumed"`` (it was ended) or ``"gone"``."""
        return "resumed" if self.containment.end() == "ended" else "gone"
