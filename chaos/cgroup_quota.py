"""A CPU capacity cut of a whole cgroup *in place*: its own CFS quota lowered, then put back exactly.

Standard library only: the dead-man watchdog imports it to restore a cut at its deadline.

Where the target is a cgroup (a pod's container as the kubelet lays it out, a systemd unit, the cgroup the runner
starts a command in), its processes stay where they are and the cgroup's own quota is lowered: v1
``cpu.cfs_quota_us`` (the period kept), v2 ``cpu.max`` ``"QUOTA PERIOD"``. Nothing else about the cgroup changes,
so its accounting and its other limits (memory) stay as its owner set them. The quota is capacity x the cgroup's
allowance (:mod:`retrystorm.chaos.cpu_quota`: its tightest quota up the tree, else the CPUs its members may use).
The undo holds the quota and period it had (``-1``: none), and restoring writes exactly those back.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from retrystorm.chaos.cgroupfs import CgroupPathError, Mount, read_control, real_cgroup, write_control
from retrystorm.chaos.cgroups import undo_number
from retrystorm.chaos.cpu_quota import CfsLimit, throttled_quota_us, v2_cpu_max, v2_cpu_max_text


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class QuotaCut:
    """The cut of the cgroup at ``directory`` to ``quota_us`` per ``period_us``, and the setting it had."""

    version: int
    directory: Path
    quota_us: int
    period_us: int
    original_quota_us: int  # -1: no quota
    original_period_us: int

    @classmethod
    def plan(cls, version: int, directory: Path, capacity: float, allowance_cpus: float) -> QuotaCut:
        """The cut of ``directory`` to ``capacity`` of ``allowance_cpus`` (reads its setting, writes nothing)."""
        own = read_limit(directory, version)
        quota = throttled_quota_us(capacity, allowance_cpus, own.period_us)
        original = own.quota_us if own.quota_us is not None and own.quota_us > 0 else -1
        return cls(version=version, directory=directory, quota_us=quota, period_us=own.period_us,
                   original_quota_us=original, original_period_us=own.period_us)  # fmt: skip

    @property
    def cpus(self) -> float:
        """The CPUs the cut leaves the cgroup."""
        return self.quota_us / self.period_us

    def apply(self) -> None:
        """Write the lowered quota (raises ``OSError``)."""
        self._write(self.quota_us, self.period_us)

    def restore(self) -> str:
        """Write the original setting back: ``"restored"``, or ``"gone"`` once the cgroup is."""
        if not self.directory.is_dir():
            return "gone"
        try:
            self._write(self.original_quota_us, self.original_period_us)
        except FileNotFoundError:
            return "gone"
        return "restored"

    def undo(self) -> dict[str, Any]:
        """What restores it without this process (journal record, watchdog order)."""
        return {"kind": "cgroup-quota", "version": self.version, "directory": str(self.directory),
                "quota_us": self.original_quota_us, "period_us": self.original_period_us}  # fmt: skip

    @classmethod
    def from_undo(cls, undo: dict[str, Any], known: list[Mount] | None = None) -> QuotaCut:
        """The restore of a journaled cut, only for a real cgroup with a CPU quota file (``ValueError``)."""
        directory = undo.get("directory")
        if undo.get("kind") != "cgroup-quota" or not isinstance(directory, str):
            raise CgroupPathError(f"undo {str(undo)[:120]}: expected kind cgroup-quota and a directory")
        version, quota, period = (undo_number(undo, name) for name in ("version", "quota_us", "period_us"))
        path, mount = real_cgroup(directory, known)
        if mount.version != version or not (path / _control(version)).is_file():
            raise CgroupPathError(f"{directory[:200]!r}: no cgroup v{version} CPU quota there")
        if period <= 0:
            raise CgroupPathError(f"undo period_us {period}: expected a period > 0")
        return cls(version=version, directory=path, quota_us=quota, period_us=period,
                   original_quota_us=quota, original_period_us=period)  # fmt: skip

    def _write(self, quota_us: int, period_us: int) -> None:
        if self.version == 2:
            text = v2_cpu_max_text(quota_us, period_us) if quota_us > 0 else f"max {period_us}"
            write_control(self.directory / "cpu.max", text)
        else:
            write_control(self.directory / "cpu.cfs_quota_us", str(quota_us if quota_us > 0 else -1))


def _control(version: int) -> str:
    return "cpu.max" if version == 2 else "cpu.cfs_quota_us"


def read_limit(directory: Path, version: int) -> CfsLimit:
    """The CFS setting of the cgroup at ``directory`` (raises ``OSError``/``ValueError`` where there is none)."""
    if version == 2:
        return v2_cpu_max(read_control(directory / "cpu.max"))
    quota = int(read_control(directory / "cpu.cfs_quota_us"))
    return CfsLimit(quota, int(read_control(directory / "cpu.cfs_period_us")))
