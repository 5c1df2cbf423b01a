"""A CPU capacity cut of local processes through cgroupfs (v1 ``cpu`` or v2 ``cpu.max``), and its undo.

Standard library only: the dead-man watchdog (:mod:`retrystorm.chaos.watchdog`, started with ``-S``) imports it
to undo a cut at its deadline.

**Where.** :func:`locate` reads ``/proc/self/mountinfo`` (which hierarchies are mounted where) and
``/proc/PID/cgroup`` (where the process sits in them):

- **v1**, when a ``cgroup`` hierarchy with the ``cpu`` controller is mounted (``/sys/fs/cgroup/cpu``
  here): the cut is a *child* of the process's own cpu cgroup, ``retrystorm-throttle-<tag>``, with
  ``cpu.cfs_period_us`` / ``cpu.cfs_quota_us``. Being a child, it stays under every limit it had.
- **v2** otherwise, when a ``cgroup2`` hierarchy offers ``cpu``: v2 forbids processes in a group whose
  children take controllers, so the cut is a *sibling* of the process's cgroup (a child of the hierarchy's
  root when the process sits at the root), ``cpu.max`` ``"QUOTA PERIOD"``. Its parent must have ``cpu``
  in ``cgroup.subtree_control`` and be writable: root, or a delegated subtree. The sibling leaves the
  process's own group, so the quota already accounts for that group's limit (the allowance below), but
  its other limits (memory...) are its parent's for the duration.

**Quota.** capacity x allowance (:mod:`retrystorm.chaos.cpu_quota`): the tightest quota on the process's cgroup path,
else the CPUs of its affinity mask.

**Apply.** mkdir the group, write the limit, then each pid into its ``cgroup.procs`` (a pid moves its
whole thread group); children forked during the cut are born inside it.

**Undo.** Every pid in the group goes back to the cgroup it came from (``original``), repeated until the
group is empty, then the group is removed. Undo only acts on a directory named ``retrystorm-throttle-*``
under a cgroup mount: a journal or an order naming anything else is refused.

v2 is not mounted with ``cpu`` on the machines this was built on; its path is tested against a
directory laid out like cgroupfs (``root`` and ``mountinfo`` parameters).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import os
import time
from pathlib import Path
from typing import Any

from retrystorm.chaos.cgroupfs import CgroupPathError, Mount, cgroup_path, mounts, read_words, real_cgroup
from retrystorm.chaos.cpu_quota import CfsLimit, allowance_cpus, throttled_quota_us, v2_cpu_max, v2_cpu_max_text

GROUP_PREFIX = "retrystorm-throttle-"
#: What a refusal names as the way to make a cut possible.
CGROUP_HINT = (
    "run as root with a cgroup cpu controller mounted (v1 /sys/fs/cgroup/cpu, or v2 with cpu in "
    "cgroup.subtree_control), or delegate a writable cgroup v2 subtree (systemd-run -p Delegate=yes)"
)
#: How long undo keeps moving pids out of a group before giving up (a process forking without pause).
UNDO_TRIES = 50
#: No number of a journaled undo is larger (a CFS period or quota is at most a second, 1,000,000 µs, per CPU).
MAX_UNDO_NUMBER = 2**40
#: The control files a throttle group gets (what a fake cgroupfs holds as plain files, and nothing else is removed).
CONTROL_FILES = frozenset({"cgroup.procs", "cpu.max", "cpu.cfs_period_us", "cpu.cfs_quota_us"})


class CgroupUnavailableError(Exception):
    """No writable cgroup cpu controller for this process (the message says what would make one)."""


def undo_number(undo: dict[str, Any], name: str) -> int:
    """``undo[name]`` if it is a whole number from -1 to :data:`MAX_UNDO_NUMBER` (a journal's 1e999 is not)."""
    value = undo.get(name)
    if type(value) is not int or not -1 <= value <= MAX_UNDO_NUMBER:
        raise ValueError(f"undo {name}: got {str(value)[:40]}, expected a whole number from -1 to {MAX_UNDO_NUMBER}")
    return value


def cpu_mounts(mountinfo: str) -> list[Mount]:
    """The hierarchies that can cut CPU, v1 ``cpu`` first, then v2 (whose ``cpu`` is checked where it is used)."""
    found = mounts(mountinfo)
    return [m for m in found if m.version == 1 and "cpu" in m.controllers] + [m for m in found if m.version == 2]


@dataclasses.dataclass(frozen=True, slots=True)
class Place:
    """Where a process's CPU is accounted: its cgroup directory in a hierarchy."""

    hierarchy: Mount
    directory: Path

    def base(self) -> Path:
        """Where a throttle group is created: the directory itself (v1), its parent or the root (v2)."""
        if self.hierarchy.version == 1 or self.directory == self.hierarchy.path:
            return self.directory
        return self.directory.parent

    def limits(self) -> list[CfsLimit]:
        """The CFS limit of the directory and of each ancestor up to the mount (unreadable ones skipped)."""
        limits, directory = [], self.directory
        while True:
            limit = _read_limit(directory, self.hierarchy.version)
            if limit is not None:
                limits.append(limit)
            if directory in (self.hierarchy.path, directory.parent):
                return limits
            directory = directory.parent


def _read_limit(directory: Path, version: int) -> CfsLimit | None:
    try:
        if version == 2:
            return v2_cpu_max((directory / "cpu.max").read_text())
        quota = int((directory / "cpu.cfs_quota_us").read_text())
        return CfsLimit(quota, int((directory / "cpu.cfs_period_us").read_text()))
    except (OSError, ValueError):
        return None


def locate(pid: int, *, proc: Path = Path("/proc"), mountinfo: str | None = None) -> Place:
    """The cgroup that accounts ``pid``'s CPU; :class:`CgroupUnavailableError` if none can be cut."""
    try:
        info = mountinfo if mountinfo is not None else (proc / "self" / "mountinfo").read_text()
        own = (proc / str(pid) / "cgroup").read_text()
    except OSError as error:
        raise CgroupUnavailableError(f"cannot read the cgroups of pid {pid}: {error}") from None
    tried = []
    for hierarchy in cpu_mounts(info):
        path = cgroup_path(own, hierarchy)
        if path is None:
            continue
        place = Place(hierarchy, hierarchy.directory(path))
        if hierarchy.version == 2 and "cpu" not in read_words(place.base() / "cgroup.subtree_control"):
            tried.append(f"cgroup v2 at {hierarchy.path} has no cpu controller enabled in {place.base()}")
            continue
        if not os.access(place.base(), os.W_OK):
            tried.append(f"{place.base()} (cgroup v{hierarchy.version}) is not writable")
            continue
        return place
    why = "; ".join(tried) or "no cgroup v1 cpu or cgroup v2 hierarchy is mounted"
    raise CgroupUnavailableError(f"no writable cgroup cpu controller for pid {pid} ({why}); {CGROUP_HINT}")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class CgroupCut:
    """One throttle group: its directory, the cgroup its processes came from, and the limit it sets."""

    version: int
    group: Path
    original: Path
    quota_us: int
    period_us: int

    @classmethod
    def plan(cls, place: Place, capacity: float, tag: str, cpus_available: int) -> CgroupCut:
        """The cut of the processes at ``place`` to ``capacity`` of their allowance (nothing is written)."""
        limits = place.limits()
        allowance = allowance_cpus(limits, cpus_available)
        period = limits[0].period_us if place.hierarchy.version == 1 and limits else 100_000
        return cls(
            version=place.hierarchy.version,
            group=place.base() / f"{GROUP_PREFIX}{tag}",
            original=place.directory,
            quota_us=throttled_quota_us(capacity, allowance, period),
            period_us=period,
        )

    @property
    def cpus(self) -> float:
        """The CPUs the group allows."""
        return self.quota_us / self.period_us

    def undo(self) -> dict[str, Any]:
        """What undo needs, as the journal and the watchdog's order carry it."""
        return {"kind": "cgroup", "version": self.version, "group": str(self.group), "original": str(self.original),
                "quota_us": self.quota_us, "period_us": self.period_us}  # fmt: skip

    @classmethod
    def from_undo(cls, undo: dict[str, Any], known: list[Mount] | None = None) -> CgroupCut:
        """The inverse of :meth:`undo`; ``ValueError`` for one that names anything but a throttle group of a real
        cgroup hierarchy (:func:`retrystorm.chaos.cgroupfs.real_cgroup`: no symbolic link, under a cgroup mount).

        ``known``: the mounted hierarchies (default: this machine's), so a plain folder is never taken for one.
        """
        group, original = undo.get("group"), undo.get("original")
        if not isinstance(group, str) or not isinstance(original, str):
            raise TypeError("undo: expected the group and original cgroup as paths")
        cut = cls(
            version=undo_number(undo, "version"), group=Path(group), original=Path(original),
            quota_us=undo_number(undo, "quota_us"), period_us=undo_number(undo, "period_us"),
        )  # fmt: skip
        if problem := cut.problem():
            raise ValueError(problem)
        known = known if known is not None else mounts()
        real_cgroup(cut.original, known)  # CgroupPathError, a ValueError
        if cut.group.exists() or cut.group.is_symlink():
            real_cgroup(cut.group, known)
        elif real_cgroup(cut.group.parent, known)[1].version != cut.version:
            raise CgroupPathError(f"{group[:200]!r}: not in a cgroup v{cut.version} hierarchy")
        return cut

    def problem(self) -> str | None:
        """Why this cut is not one retrystorm would make (so undo refuses it), or ``None``."""
        if self.version not in (1, 2):
            return f"cgroup version {self.version}: expected 1 or 2"
        if not self.group.is_absolute() or not self.group.name.startswith(GROUP_PREFIX) or ".." in self.group.parts:
            return f"group {str(self.group)[:200]!r}: expected an absolute path to a {GROUP_PREFIX}* directory"
        if not self.original.is_absolute() or ".." in self.original.parts:
            return f"original cgroup {str(self.original)[:200]!r}: expected an absolute path"
        if self.group.parent not in (self.original, self.original.parent):  # v1: its child; v2: its sibling
            return f"original cgroup {str(self.original)[:200]!r}: not the parent or a sibling of {self.group.name}"
        return None

    def apply(self, pids: list[int]) -> list[int]:
        """:meth:`create` and :meth:`move_in`."""
        self.create()
        return self.move_in(pids)

    def create(self) -> None:
        """Create the group with its limit, empty."""
        self.group.mkdir()
        if self.version == 1:
            (self.group / "cpu.cfs_period_us").write_text(str(self.period_us))
            (self.group / "cpu.cfs_quota_us").write_text(str(self.quota_us))
        else:
            (self.group / "cpu.max").write_text(v2_cpu_max_text(self.quota_us, self.period_us))
        if not (self.group / "cgroup.procs").exists():  # the kernel makes it with the group; a fake cgroupfs not
            (self.group / "cgroup.procs").touch()

    def move_in(self, pids: list[int]) -> list[int]:
        """Move ``pids`` into the group; return those moved (a pid that exited is skipped)."""
        return [pid for pid in pids if _move(pid, self.group)]

    def members(self) -> list[int]:
        """The pids in the group now ([] once it is gone)."""
        try:
            return [int(word) for word in (self.group / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def restore(self) -> str:
        """Move every member back to ``original`` and remove the group: ``"restored"``, or ``"gone"`` if it was.

        Raises ``OSError`` when the group cannot be emptied or removed.
        """
        if not self.group.is_dir():
            return "gone"
        # Where the original cgroup went away (a container that stopped), the group's parent takes them.
        target = self.original if (self.original / "cgroup.procs").is_file() else self.group.parent
        moved: list[int] = []
        for _ in range(UNDO_TRIES):
            members = self.members()
            if not members or members == moved:  # empty; or unchanged, as in a fake cgroupfs of plain files
                break
            for pid in members:
                _move(pid, target)
            moved = members
        for attempt in range(UNDO_TRIES):
            try:
                _remove_group(self.group)
            except OSError as error:
                if error.errno != errno.EBUSY or attempt == UNDO_TRIES - 1:
                    raise
                for pid in self.members():  # one forked into it since
                    _move(pid, target)
                time.sleep(0.01)
            else:
                break
        return "restored"


def _move(pid: int, directory: Path) -> bool:
    """Write ``pid`` into ``directory/cgroup.procs`` (never created: only a cgroup has one); False if it is gone."""
    try:
        procs = os.open(directory / "cgroup.procs", os.O_WRONLY | os.O_APPEND)
        try:
            os.write(procs, f"{pid}\n".encode())
        finally:
            os.close(procs)
    except ProcessLookupError:
        return False
    except OSError as error:
        if error.errno == errno.ESRCH:
            return False
        raise
    return True


def _remove_group(group: Path) -> None:
    """rmdir a cgroup (its control files go with it); in a fake cgroupfs of plain files, only the control files a
    throttle group gets are removed first, never anything else."""
    try:
        group.rmdir()
    except OSError as error:
        if error.errno != errno.ENOTEMPTY:
            raise
        for name in CONTROL_FILES:  # only a fake cgroupfs holds them as plain files
            with contextlib.suppress(FileNotFoundError):
                (group / name).unlink()
        group.rmdir()


def cpus_available(pid: int) -> int:
    """The CPUs ``pid`` may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(pid)))
    except OSError:
        return max(1, os.cpu_count() or 1)
