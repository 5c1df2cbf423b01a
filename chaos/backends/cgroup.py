"""Targets that are whole cgroups: frozen whole by the cgroup freezer, cut in place by their own CPU quota.

A cgroup target covers a whole service, whatever its processes do: a systemd unit (its ``ControlGroup``), a pod's
container laid out by the kubelet (:func:`retrystorm.chaos.freezer.kubelet_cgroup`), the cgroup the runner starts
a command in (:mod:`retrystorm.chaos.containment`), or any cgroup path. A pause freezes it at once and atomically
(:class:`~retrystorm.chaos.freezer.Freezer`: v2 ``cgroup.freeze``, v1 ``freezer.state``), as ``docker pause``
does; a CPU cut lowers its own quota (:class:`~retrystorm.chaos.cgroup_quota.QuotaCut`).

Registration (:meth:`CgroupBackend.register`) takes the cgroup's path as ``/proc/PID/cgroup`` writes it
(``/system.slice/postgresql.service``) or its directory under a cgroup mount, and refuses, at registration and
again at every pause: the root cgroup; a cgroup that holds, at any depth, pid 1, this controller or one of its
ancestors, or a retrystorm watchdog; and a cgroup that lies above this controller's own. Refs are ``cgroup``
refs whose ident is the freezer directory (the journal, the watchdog and recovery thaw it from that path alone,
after checking it is a real cgroup: :func:`retrystorm.chaos.cgroupfs.real_cgroup`).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

from retrystorm.chaos.backends.base import (
    BackendError,
    CpuCut,
    FaultBackend,
    FaultHadNoEffectError,
    TargetRef,
    TargetRefusedError,
    TargetState,
    UnknownTargetError,
)
from retrystorm.chaos.backends.procfs import is_watchdog
from retrystorm.chaos.cgroup_quota import QuotaCut
from retrystorm.chaos.cgroupfs import CgroupPathError, Mount, mount_of, mounts, own_cgroup
from retrystorm.chaos.cgroups import Place, cpus_available
from retrystorm.chaos.cpu_quota import allowance_cpus
from retrystorm.chaos.freezer import FreezeError, Freezer

#: A systemd unit name (``systemd.unit(5)``): letters, digits, ``:-_.\\@``, a known suffix.
_UNIT = re.compile(r"[A-Za-z0-9:_.\\@-]{1,240}\.(service|scope|slice)")
#: What a refused cgroup registration points to.
CGROUP_TARGET_HINT = "register a cgroup when the controller starts: retrystorm chaos serve --target NAME=cgroup:PATH"


def unit_cgroup(unit: str) -> str:
    """The cgroup of systemd unit ``unit`` (``systemctl show -p ControlGroup``); a one-line refusal without one."""
    if not _UNIT.fullmatch(unit):
        raise TargetRefusedError(f"unit {unit[:80]!r}: expected a systemd unit name like postgresql.service")
    systemctl = shutil.which("systemctl")
    if systemctl is None or not Path("/run/systemd/system").is_dir():
        raise TargetRefusedError(f"unit {unit!r}: systemd is not running on this machine; name its cgroup instead")
    found = subprocess.run(  # noqa: S603 - a fixed program, a validated unit name, no shell
        [systemctl, "show", "--property", "ControlGroup", "--value", unit],
        capture_output=True, text=True, timeout=10, check=False,
    )  # fmt: skip
    path = found.stdout.strip()
    if found.returncode != 0 or not path.startswith("/"):
        raise TargetRefusedError(f"unit {unit!r}: systemd gives it no cgroup (is it running?)")
    return path


@dataclasses.dataclass(frozen=True, slots=True)
class CgroupTarget:
    """A registered cgroup: its path in the hierarchy and the freezer that freezes it."""

    relative: str
    freezer: Freezer


class CgroupBackend(FaultBackend):
    """Registered cgroups (``--target NAME=cgroup:PATH``, ``NAME=unit:UNIT``); nothing else can be frozen."""

    name = "cgroup"

    def __init__(self, known: list[Mount] | None = None) -> None:
        self.known = known
        self._targets: dict[str, CgroupTarget] = {}

    def _mounts(self) -> list[Mount]:
        return self.known if self.known is not None else mounts()

    def register(self, target: str, path: str) -> TargetRef:
        """Make ``target`` name the cgroup at ``path`` (a hierarchy path or a directory under a mount), if it may be
        frozen (module docstring)."""
        known = self._mounts()
        relative = _relative(path, known)
        if relative.strip("/") == "":
            raise TargetRefusedError(f"refusing cgroup {path[:200]!r}: the root cgroup holds the whole machine")
        try:
            freezer = Freezer.of(relative, known)
        except CgroupPathError as error:
            raise UnknownTargetError(f"no cgroup to freeze at {path[:200]!r}: {error}") from None
        _check_freezable(freezer, known)
        self._targets[target] = CgroupTarget(relative, freezer)
        return TargetRef(self.name, target, str(freezer.directory))

    def register_unit(self, target: str, unit: str) -> TargetRef:
        """Make ``target`` name systemd unit ``unit``'s cgroup (:func:`unit_cgroup`)."""
        return self.register(target, unit_cgroup(unit))

    def targets(self) -> list[str]:
        return sorted(self._targets)

    def resolve(self, target: str) -> list[TargetRef]:
        found = self._targets.get(target)
        if found is None:
            known = ", ".join(self.targets()) or "none"
            raise UnknownTargetError(f"no cgroup target {target!r} (registered: {known}); {CGROUP_TARGET_HINT}")
        if found.freezer.state() == "gone":
            raise BackendError(f"the cgroup of {target!r} ({found.freezer.directory}) is gone")
        _check_freezable(found.freezer, self._mounts())
        return [TargetRef(self.name, target, str(found.freezer.directory))]

    def pause(self, ref: TargetRef) -> None:
        """Freeze the cgroup; return once the kernel reports it frozen."""
        try:
            self._freezer(ref).freeze()
        except (OSError, FreezeError) as error:
            raise BackendError(f"cannot freeze {ref.describe()}: {error}") from error

    def confirm_paused(self, target: str, refs: list[TargetRef]) -> None:
        """Every cgroup frozen by the kernel's own report, and at least one process frozen in them."""
        frozen = 0
        for ref in refs:
            freezer = self._freezer(ref)
            if freezer.state() != "frozen":
                raise FaultHadNoEffectError(f"the pause of {target!r}: {freezer.directory} is {freezer.state()}")
            frozen += len(freezer.members())
        if not frozen:
            raise FaultHadNoEffectError(f"the pause of {target!r} froze nothing: its cgroup holds no process")

    def resume(self, ref: TargetRef) -> None:
        """Thaw the cgroup (a cgroup that is gone is no error)."""
        try:
            self._freezer(ref).thaw()
        except OSError as error:
            raise BackendError(f"cannot thaw {ref.describe()}: {error}") from error

    def state(self, ref: TargetRef) -> TargetState:
        state = self._freezer(ref).state()
        return {"frozen": TargetState.PAUSED, "gone": TargetState.GONE}.get(state, TargetState.RUNNING)

    def plan_cpu_cut(self, target: str, refs: list[TargetRef], capacity: float, tag: str) -> list[CpuCut]:
        """The in-place cut of the cgroup's own quota (:mod:`retrystorm.chaos.cgroup_quota`)."""
        found = self._targets[target]
        mount, directory = _cpu_directory(found.relative, self._mounts(), target)
        members = found.freezer.members()
        cpus = cpus_available(members[0]) if members else max(1, os.cpu_count() or 1)
        allowance = allowance_cpus(Place(mount, directory).limits(), cpus)
        try:
            cut = QuotaCut.plan(mount.version, directory, capacity, allowance)
        except (OSError, ValueError) as error:
            raise TargetRefusedError(f"cannot throttle {target!r}: cannot read its CPU quota ({error})") from None
        return [InPlaceCut(TargetRef(self.name, target, str(directory)), cut, cpus_before=allowance)]

    def restore_cpu(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        """Write a journaled cut's original quota back."""
        return restore_quota(ref, undo, self.known)

    def _freezer(self, ref: TargetRef) -> Freezer:
        for found in self._targets.values():
            if str(found.freezer.directory) == ref.ident:
                return found.freezer
        return thawable(ref, self.known)


def thawable(ref: TargetRef, known: list[Mount] | None = None) -> Freezer:
    """The freezer a journaled ``cgroup`` pause names, once checked to be a real cgroup (recovery, watchdog)."""
    try:
        return Freezer.at(ref.ident, known)
    except CgroupPathError as error:
        raise BackendError(f"the journal's {ref.describe()} is not a cgroup to thaw: {error}") from None


def restore_quota(ref: TargetRef, undo: dict[str, Any], known: list[Mount] | None = None) -> str:
    """Restore a journaled in-place cut: ``"restored"`` or ``"gone"`` (raises :class:`BackendError`)."""
    try:
        return QuotaCut.from_undo(undo, known).restore()
    except ValueError as error:
        raise BackendError(f"cannot restore {ref.describe()}: the journaled undo is not one: {error}") from None
    except OSError as error:
        raise BackendError(f"cannot restore {ref.describe()}: {error}") from error


@dataclasses.dataclass(slots=True)
class InPlaceCut:
    """A :class:`~retrystorm.chaos.backends.base.CpuCut` of a cgroup's own quota."""

    ref: TargetRef
    cut: QuotaCut
    cpus_before: float

    @property
    def cpus_during(self) -> float:
        """The CPUs the cut leaves."""
        return self.cut.cpus

    def undo(self) -> dict[str, Any]:
        """The original setting (:meth:`QuotaCut.undo`)."""
        return self.cut.undo()

    def prepare(self) -> None:
        """Nothing to make: the cgroup exists."""

    def apply(self) -> None:
        """Lower the quota."""
        try:
            self.cut.apply()
        except OSError as error:
            raise BackendError(f"cannot cut the CPU of {self.ref.describe()}: {error}") from error

    def restore(self) -> str:
        """The original quota back."""
        try:
            return self.cut.restore()
        except OSError as error:
            raise BackendError(f"cannot restore the CPU of {self.ref.describe()}: {error}") from error


def _relative(path: str, known: list[Mount]) -> str:
    """A hierarchy path from ``path``: a directory under a cgroup mount loses the mount, anything else stays."""
    if not path.startswith("/") or "\x00" in path or ".." in path.split("/") or len(path) > 4096:
        raise TargetRefusedError(f"cgroup {path[:200]!r}: expected an absolute path such as /system.slice/x.service")
    mount = mount_of(Path(path), known)
    if mount is None:
        return path
    return "/" + str(Path(path).relative_to(mount.path))


def _check_freezable(freezer: Freezer, known: list[Mount]) -> None:
    """Refuse a cgroup that holds what must never freeze, or that lies above this controller's own."""
    mount = mount_of(freezer.directory, known)
    mine = own_cgroup(os.getpid(), mount) if mount is not None else None
    if mine is not None and (mine == freezer.directory or freezer.directory in mine.parents):
        raise TargetRefusedError(f"refusing cgroup {freezer.directory}: it holds this controller, which resumes it")
    ancestors = _ancestors(os.getpid())
    for pid in freezer.members():
        if pid == 1 or pid in ancestors:
            raise TargetRefusedError(f"refusing cgroup {freezer.directory}: it holds pid {pid}, init or an ancestor")
        if is_watchdog(pid):
            raise TargetRefusedError(f"refusing cgroup {freezer.directory}: it holds a retrystorm watchdog ({pid})")


def _ancestors(pid: int) -> set[int]:
    """``pid`` and every process above it."""
    found = set()
    while pid > 0 and pid not in found:
        found.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return found


def _cpu_directory(relative: str, known: list[Mount], target: str) -> tuple[Mount, Path]:
    """Where the cgroup's CPU quota lives: its v2 directory with ``cpu.max``, else its v1 ``cpu`` directory."""
    for mount in known:
        directory = mount.directory(relative)
        control = "cpu.max" if mount.version == 2 else "cpu.cfs_quota_us"
        if (mount.version == 2 or "cpu" in mount.controllers) and (directory / control).is_file():
            return mount, directory
    raise TargetRefusedError(
        f"cannot throttle {target!r}: its cgroup {relative[:200]} has no CPU quota (no v1 cpu directory of that "
        "path, no cpu.max in v2: enable cpu in its parent's cgroup.subtree_control)"
    )
