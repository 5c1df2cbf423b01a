"""A run's service in cgroups of its own: a pause freezes exactly it, a cut lowers its own quota, and it ends with
its runner, even a runner that was SIGKILLed.

A service the runner starts (a scenario's ``target.command``) may leave its process group in every way a server
does: ``setsid()``, ``su nobody -c ...`` to drop root, a daemon's double fork, a ``bash -c`` wrapper. None of
these leaves a cgroup: the kernel keeps a child in its parent's. So :meth:`Containment.create` makes
``retrystorm-svc-<PID>-<STARTTICKS>-<N>`` (the runner's identity in the name) at the root of the hierarchy that
can freeze (cgroup v2, else the v1 ``freezer``) and of the v1 ``cpu`` hierarchy where CPU is accounted there, and
:meth:`Containment.joiner` has the command join them between ``fork`` and ``exec``. Then:

- a pause freezes the cgroup (:class:`retrystorm.chaos.backends.cgroup.CgroupBackend`), every member at once;
- a CPU cut lowers the cgroup's own quota in place;
- :meth:`Containment.end` stops the service: thawed, SIGTERM to every member, SIGKILL (v2 ``cgroup.kill``) to
  what is left after the grace, the cgroups removed. A member that ignores SIGTERM is killed;
- :func:`retrystorm.chaos.deadman.guard_service` arms a watchdog order *owned* by the runner: the moment the
  runner dies, however, the watchdog supervisor ends the service the same way
  (:class:`retrystorm.chaos.watchdog.guards.ReapGuard`);
- :func:`sweep`, at a controller's start, ends what a dead runner left (the owner is in the name).

The undo a watchdog order carries names the cgroups; it is accepted only for real cgroups named as above, at the
root of their hierarchy (:meth:`Containment.from_undo`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import itertools
import os
import re
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrystorm.chaos.cgroupfs import CgroupPathError, Mount, members, mounts, real_cgroup
from retrystorm.chaos.freezer import Freezer

PREFIX = "retrystorm-svc-"
_NAME = re.compile(r"retrystorm-svc-([0-9]{1,10})-([0-9]{1,20})-[0-9]{1,6}")
#: How long a service has between SIGTERM and SIGKILL.
STOP_GRACE_S = 5.0
_numbers = itertools.count(1)


@dataclasses.dataclass(frozen=True, slots=True)
class Containment:
    """The cgroups of one service: the freezer's first, then the v1 cpu one if CPU is accounted apart."""

    directories: tuple[Path, ...]

    @classmethod
    def create(cls, known: list[Mount] | None = None) -> Containment:
        """Make the cgroups of a new service of this runner (``OSError`` / ``CgroupPathError`` where it cannot)."""
        from retrystorm.chaos.backends.procfs import process_start_ticks  # noqa: PLC0415 - only the runner's side

        known = known if known is not None else mounts()
        freezing = [m for m in known if m.version == 2] or [m for m in known if "freezer" in m.controllers]
        if not freezing:
            raise CgroupPathError("no cgroup hierarchy that can freeze is mounted (cgroup v2, or the v1 freezer)")
        cpu = [m for m in known if m.version == 1 and "cpu" in m.controllers and m not in freezing[:1]]
        name = f"{PREFIX}{os.getpid()}-{process_start_ticks(os.getpid())}-{next(_numbers)}"
        made: list[Path] = []
        try:
            for mount in [freezing[0], *cpu[:1]]:
                (mount.path / name).mkdir(mode=0o755)
                made.append(mount.path / name)
        except OSError:
            for directory in made:
                directory.rmdir()
            raise
        return cls(tuple(made))

    @property
    def relative(self) -> str:
        """The cgroups' path in their hierarchies (the same in each)."""
        return "/" + self.directories[0].name

    def joiner(self) -> Callable[[], None]:
        """A ``preexec_fn`` that moves the child into every cgroup before it ``exec``\\ s (``0``: the writer).

        The files are opened here, in the parent; the child only writes to them, so no Python that could wait on
        a lock runs between ``fork`` and ``exec``. Call :meth:`close_joiner` with the result once the child exists.
        """
        descriptors = [os.open(d / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC) for d in self.directories]

        def join() -> None:
            for descriptor in descriptors:
                os.write(descriptor, b"0")

        join.descriptors = descriptors  # type: ignore[attr-defined]
        return join

    @staticmethod
    def close_joiner(join: Callable[[], None]) -> None:
        """Close what :meth:`joiner` opened."""
        for descriptor in getattr(join, "descriptors", []):
            with contextlib.suppress(OSError):
                os.close(descriptor)

    def members(self) -> list[int]:
        """Every process of the service."""
        return members(self.directories[0]) if self.directories[0].is_dir() else []

    def gone(self) -> bool:
        """Whether the service's cgroups are gone (it was ended)."""
        return not any(directory.is_dir() for directory in self.directories)

    def end(self, grace_s: float = STOP_GRACE_S) -> str:
        """Stop every member (thawed, SIGTERM, SIGKILL after ``grace_s``), remove the cgroups: ``ended`` or ``gone``."""
        if self.gone():
            return "gone"
        freezer = Freezer.at(self.directories[0])
        freezer.thaw()
        for pid in self.members():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        give_up = time.monotonic() + grace_s
        while self.members() and time.monotonic() < give_up:
            time.sleep(0.02)
        freezer.kill()
        for directory in self.directories:
            _remove(directory)
        return "ended"

    def undo(self) -> dict[str, Any]:
        """What a watchdog needs to end the service without its runner."""
        return {"kind": "service", "directories": [str(directory) for directory in self.directories]}

    @classmethod
    def from_undo(cls, undo: dict[str, Any], known: list[Mount] | None = None) -> Containment:
        """The inverse of :meth:`undo`, only for real cgroups named and placed as :meth:`create` does."""
        directories = undo.get("directories")
        if undo.get("kind") != "service" or not isinstance(directories, list) or not 1 <= len(directories) <= 4:
            raise CgroupPathError(f"undo {str(undo)[:120]}: expected kind service and its directories")
        known = known if known is not None else mounts()
        checked = []
        for directory in directories:
            path = Path(str(directory))
            if not _NAME.fullmatch(path.name) or not any(path.parent == m.path for m in known):
                raise CgroupPathError(f"{str(directory)[:200]!r}: not a service cgroup at a hierarchy's root")
            if path.exists() or path.is_symlink():
                real_cgroup(path, known)
            checked.append(path)
        return cls(tuple(checked))


def _remove(directory: Path) -> None:
    for _ in range(50):
        try:
            directory.rmdir()
        except FileNotFoundError:
            return
        except OSError as error:
            if error.errno != errno.EBUSY:
                raise
            time.sleep(0.02)  # the last member's exit is still being accounted
        else:
            return


def sweep(known: list[Mount] | None = None) -> list[Path]:
    """End the services whose runner is gone (its ``PID-STARTTICKS`` in the name names no live process)."""
    from retrystorm.chaos.backends.procfs import process_start_ticks  # noqa: PLC0415 - only recovery

    known = known if known is not None else mounts()
    ended = []
    for mount in known:
        if mount.version == 1 and not mount.controllers & {"freezer", "cpu"}:
            continue
        for directory in sorted(mount.path.glob(f"{PREFIX}*")):
            named = _NAME.fullmatch(directory.name)
            if named is None or str(process_start_ticks(int(named[1]))) == named[2]:
                continue  # not ours, or its runner is alive
            with contextlib.suppress(OSError, CgroupPathError):
                if mount.version == 2 or "freezer" in mount.controllers:
                    Containment((directory,)).end(grace_s=1.0)
                else:
                    _remove(directory)
                ended.append(directory)
    return ended
