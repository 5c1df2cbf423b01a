"""CPU quotas through cgroups: the live ``slow`` trigger of a process group the runner started.

A :class:`CpuGroup` is a cgroup of its own (``retrystorm-...``) under the hierarchy that
has the ``cpu`` controller, detected by :func:`find_hierarchy`:

* **v2** (unified, most machines now): ``/sys/fs/cgroup/cgroup.controllers`` lists ``cpu``;
  the quota is ``cpu.max``, ``"QUOTA PERIOD"`` or ``"max PERIOD"`` (no limit);
* **v1**: the ``cpu`` controller mounted at ``/sys/fs/cgroup/cpu`` (or ``cpu,cpuacct``);
  the quota is ``cpu.cfs_quota_us`` (``-1``: no limit) per ``cpu.cfs_period_us``.

A cut to ``capacity`` of what the group had (:func:`cut_quota`): of its quota, or, with
none, of every CPU this machine lets it use. :meth:`CpuGroup.quota` reads the quota
before the cut so that it is put back exactly. A group's *ident*, ``v1:/sys/fs/cgroup/cpu/
retrystorm-123-1``, is what a watchdog (:mod:`chaos.watchdog`, backend ``cgroup``) is
given, with the quota to restore, so that a cut ends at its deadline even if the runner
was killed; only such groups are accepted (:data:`IDENT`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
from pathlib import Path

from chaos.backends.base import BackendError

#: Where cgroup hierarchies are mounted.
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Every group made here is named so: a watchdog acts on no other.
PREFIX = "retrystorm-"
#: ``VERSION:PATH`` of a group made here.
IDENT = re.compile(r"(v1|v2):(/sys/fs/cgroup(?:/[A-Za-z0-9_,.-]+)*/retrystorm-[A-Za-z0-9_-]+)")
#: The shortest quota the kernel takes (v1 and v2: 1 ms per period).
MIN_QUOTA_US = 1000


@dataclasses.dataclass(frozen=True, slots=True)
class Quota:
    """``quota_us`` of CPU time per ``period_us`` (``None``: no limit)."""

    quota_us: int | None
    period_us: int

    def text(self) -> str:
        """``"40000/100000"`` or ``"max/100000"``: how a watchdog order carries it."""
        return f"{'max' if self.quota_us is None else self.quota_us}/{self.period_us}"

    @classmethod
    def parse(cls, text: str) -> Quota:
        """What :meth:`text` wrote (``ValueError`` otherwise)."""
        quota, period = text.split("/")
        value = None if quota == "max" else int(quota)
        if (value is not None and value < MIN_QUOTA_US) or int(period) < MIN_QUOTA_US:
            raise ValueError(f"quota {text!r}: expected QUOTA/PERIOD in microseconds, at least {MIN_QUOTA_US}")
        return cls(value, int(period))


def cut_quota(before: Quota, capacity: float, cpus: int) -> Quota:
    """``capacity`` (0 < capacity <= 1) of ``before``; with no limit before, of ``cpus`` CPUs."""
    if not 0 < capacity <= 1:
        raise ValueError(f"capacity must be in (0, 1], got {capacity}")
    whole = before.quota_us if before.quota_us is not None else cpus * before.period_us
    return Quota(max(MIN_QUOTA_US, round(capacity * whole)), before.period_us)


def usable_cpus() -> int:
    """The CPUs this process may run on (what an unlimited group of its children gets)."""
    return len(os.sched_getaffinity(0))


def find_hierarchy(root: Path = CGROUP_ROOT) -> tuple[str, Path]:
    """``("v2", root)`` or ``("v1", the cpu hierarchy)``; :class:`BackendError` saying what is missing."""
    controllers = root / "cgroup.controllers"
    if controllers.exists() and "cpu" in controllers.read_text().split():
        return "v2", root
    for name in ("cpu", "cpu,cpuacct"):
        if (root / name / "cpu.cfs_quota_us").exists():
            return "v1", root / name
    raise BackendError(f"no cgroup cpu controller under {root} (neither cgroup v2's cpu.max nor v1's cpu.cfs_quota_us)")


class CpuGroup:
    """A cgroup made here for one target, and its CPU quota."""

    def __init__(self, version: str, path: Path) -> None:
        if version not in ("v1", "v2"):
            raise ValueError(f"cgroup version {version!r}: expected v1 or v2")
        self.version = version
        self.path = path

    @property
    def ident(self) -> str:
        """``VERSION:PATH``, as a watchdog order carries it."""
        return f"{self.version}:{self.path}"

    @classmethod
    def of(cls, ident: str) -> CpuGroup:
        """The group an ident names; only groups made here (:data:`IDENT`)."""
        found = IDENT.fullmatch(ident)
        if found is None or ".." in ident:
            raise ValueError(f"cgroup {ident!r}: expected VERSION:/sys/fs/cgroup/.../{PREFIX}NAME")
        return cls(found.group(1), Path(found.group(2)))

    @classmethod
    def create(cls, name: str, root: Path = CGROUP_ROOT) -> CpuGroup:
        """A new group ``retrystorm-NAME`` under the cpu hierarchy (:class:`BackendError`: why not)."""
        if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            raise ValueError(f"cgroup name {name!r}: letters, digits, - and _ only")
        version, base = find_hierarchy(root)
        try:
            if version == "v2":
                control = base / "cgroup.subtree_control"
                if "cpu" not in control.read_text().split():
                    control.write_text("+cpu")
            path = base / f"{PREFIX}{name}"
            path.mkdir()
        except OSError as error:
            raise BackendError(f"cannot make a cgroup under {base}: {error.strerror or error}") from error
        return cls(version, path)

    def add(self, pid: int) -> None:
        """Move process ``pid`` into the group (its children forked later are born in it)."""
        try:
            (self.path / "cgroup.procs").write_text(str(pid))
        except ProcessLookupError:
            return  # it exited meanwhile: nothing to throttle
        except OSError as error:
            raise BackendError(f"cannot move pid {pid} into {self.path}: {error.strerror or error}") from error

    def quota(self) -> Quota:
        """The group's quota now."""
        if self.version == "v2":
            quota, period = (self.path / "cpu.max").read_text().split()
            return Quota(None if quota == "max" else int(quota), int(period))
        quota_us = int((self.path / "cpu.cfs_quota_us").read_text())
        period_us = int((self.path / "cpu.cfs_period_us").read_text())
        return Quota(None if quota_us < 0 else quota_us, period_us)

    def set_quota(self, quota: Quota) -> None:
        """Set the group's quota (:class:`BackendError` if the kernel refuses)."""
        try:
            if self.version == "v2":
                (self.path / "cpu.max").write_text(f"{'max' if quota.quota_us is None else quota.quota_us} "
                                                   f"{quota.period_us}")  # fmt: skip
            else:
                # v1 refuses a period below the quota's current period ratio in some orders: quota off first.
                (self.path / "cpu.cfs_quota_us").write_text("-1")
                (self.path / "cpu.cfs_period_us").write_text(str(quota.period_us))
                (self.path / "cpu.cfs_quota_us").write_text(str(-1 if quota.quota_us is None else quota.quota_us))
        except OSError as error:
            raise BackendError(f"cannot set the CPU quota of {self.path}: {error.strerror or error}") from error

    def members(self) -> list[int]:
        """The processes in the group."""
        try:
            return [int(line) for line in (self.path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def remove(self) -> None:
        """Move what is left to the parent group and remove this one (gone already: nothing to do)."""
        if not self.path.exists():
            return
        for pid in self.members():
            with contextlib.suppress(OSError):  # exited meanwhile
                (self.path.parent / "cgroup.procs").write_text(str(pid))
        try:
            self.path.rmdir()
        except FileNotFoundError:
            pass
        except OSError as error:
            raise BackendError(f"cannot remove the cgroup {self.path}: {error.strerror or error}") from error
