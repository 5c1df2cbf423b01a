"""The arithmetic of a CPU capacity cut (a *throttle*): pure, no I/O, no clock.

``capacity`` is the fraction of its CPU *allowance* a target keeps during the cut, in
``(0, 1]``. The allowance is what the target could use before the cut, in CPUs:

- its existing CPU limit, if it has one: for a process, the tightest CFS quota on its
  cgroup path (``quota / period`` of its own cgroup and of every ancestor that sets one);
  for a container, its ``NanoCpus`` / 1e9, else ``CpuQuota / CpuPeriod``;
- else every CPU it may run on (a process's affinity mask, a container's cpuset or the
  engine's CPU count).

So ``capacity 0.4`` means 40 % of what the target had: a process limited to 2 CPUs gets
0.8 CPU; an unlimited process on a 2-core machine gets 0.8 CPU too (0.4 x 2), which a
single-threaded process, able to use only 1 CPU, feels as a cut to 80 %. The cut is
``quota_us = floor(capacity x allowance x period_us)``, at least the kernel's minimum
(:data:`MIN_QUOTA_US`), with the period of the group the quota is written to.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from retrystorm.errors import UserError

#: The CFS period a new throttle group gets (the kernel's and Docker's default), in microseconds.
DEFAULT_PERIOD_US = 100_000
#: The smallest CFS quota the kernel accepts, in microseconds.
MIN_QUOTA_US = 1_000
#: The smallest capacity accepted: below it the quota would round to the kernel's minimum anyway.
MIN_CAPACITY = 0.001


def check_capacity(capacity: float) -> float:
    """``capacity`` if it is a fraction in ``(0, 1]`` (at least :data:`MIN_CAPACITY`), else a one-line user error."""
    if (
        isinstance(capacity, bool)
        or not isinstance(capacity, int | float)
        or not math.isfinite(capacity)
        or not MIN_CAPACITY <= capacity <= 1
    ):
        raise UserError(
            f"capacity: got {capacity!r:.40}, expected a fraction of the target's CPU in (0, 1] "
            f"(at least {MIN_CAPACITY}), e.g. 0.4 for 40 %"
        )
    return float(capacity)


@dataclasses.dataclass(frozen=True, slots=True)
class CfsLimit:
    """One CFS setting: ``quota_us`` (``None`` or negative: no quota) per ``period_us``."""

    quota_us: int | None
    period_us: int

    @property
    def cpus(self) -> float | None:
        """The CPUs this setting allows, ``None`` when it sets no quota."""
        if self.quota_us is None or self.quota_us <= 0 or self.period_us <= 0:
            return None
        return self.quota_us / self.period_us


def allowance_cpus(limits: Iterable[CfsLimit], cpus_available: int) -> float:
    """The CPUs a target may use: the tightest quota among ``limits``, at most ``cpus_available``."""
    if cpus_available < 1:
        raise ValueError(f"cpus_available: got {cpus_available}, expected at least 1")
    set_limits = [cpus for limit in limits if (cpus := limit.cpus) is not None]
    return min([float(cpus_available), *set_limits])


def throttled_quota_us(capacity: float, allowance: float, period_us: int = DEFAULT_PERIOD_US) -> int:
    """``floor(capacity x allowance x period_us)``, at least :data:`MIN_QUOTA_US`: the cut's CFS quota."""
    check_capacity(capacity)
    if not allowance > 0 or period_us <= 0:
        raise ValueError(f"allowance {allowance} and period {period_us} µs must be > 0")
    # Rounded down (past float noise): a v1 child's quota may not exceed its parent's at capacity 1.
    return max(MIN_QUOTA_US, math.floor(capacity * allowance * period_us + 1e-6))


def v2_cpu_max(text: str) -> CfsLimit:
    """Parse cgroup v2 ``cpu.max`` (``"max 100000"`` or ``"40000 100000"``)."""
    quota, _, period = text.strip().partition(" ")
    return CfsLimit(None if quota == "max" else int(quota), int(period or DEFAULT_PERIOD_US))


def v2_cpu_max_text(quota_us: int, period_us: int) -> str:
    """What cgroup v2 ``cpu.max`` takes for a quota of ``quota_us`` per ``period_us``."""
    return f"{quota_us} {period_us}"


# --- containers (docker update) ----------------------------------------------------------

NANO = 1_000_000_000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class ContainerCpu:
    """A container's own CPU settings as its ``HostConfig`` holds them (``0``: not set)."""

    nano_cpus: int
    cpu_quota: int
    cpu_period: int

    def limit(self) -> CfsLimit | None:
        """The CPU limit these settings impose, ``None`` for none."""
        if self.nano_cpus > 0:
            return CfsLimit(round(self.nano_cpus * DEFAULT_PERIOD_US / NANO), DEFAULT_PERIOD_US)
        if self.cpu_quota > 0:
            return CfsLimit(self.cpu_quota, self.cpu_period or DEFAULT_PERIOD_US)
        return None


def container_cut(before: ContainerCpu, capacity: float, cpus_available: int) -> dict[str, int]:
    """The ``docker update`` body of a cut of ``before`` to ``capacity`` (the engine's field names).

    A container limited by ``NanoCpus`` (``--cpus``) keeps that mechanism: the engine refuses to mix
    ``NanoCpus`` with ``CpuQuota``. Any other container is cut through ``CpuQuota`` with its own period,
    because ``NanoCpus``, once set, can never be unset (0 is ignored), while ``CpuQuota`` can (-1).
    """
    limit = before.limit()
    allowance = allowance_cpus([limit] if limit else [], cpus_available)
    if before.nano_cpus > 0:
        return {"NanoCpus": max(NANO // 100, round(capacity * allowance * NANO))}  # the engine's floor: 0.01 CPU
    period = before.cpu_period or DEFAULT_PERIOD_US
    return {"CpuQuota": throttled_quota_us(capacity, allowance, period)}


def container_restore(before: ContainerCpu) -> dict[str, int]:
    """The ``docker update`` body that puts ``before`` back after :func:`container_cut`.

    Exact for a container that had ``NanoCpus`` or a positive ``CpuQuota``. One without a quota
    (``CpuQuota`` 0) gets -1: the engine ignores 0 in an update, and -1 means "no quota" too.
    """
    if before.nano_cpus > 0:
        return {"NanoCpus": before.nano_cpus}
    return {"CpuQuota": before.cpu_quota if before.cpu_quota != 0 else -1}
