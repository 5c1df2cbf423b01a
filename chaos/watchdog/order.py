"""What a watchdog guards (:class:`WatchdogOrder`), every field checked before anything acts on it.

The guard that acts on an order is chosen in the supervisor (:func:`retrystorm.chaos.watchdog.supervisor.guard_for`),
which alone imports the guards (and, near a docker order's deadline, the Docker SDK)."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrystorm.chaos.backends.base import TargetRef
from retrystorm.chaos.journal import PROCESS_IDENT

#: Ceiling on how far ahead a deadline may be: further is a bug (a wall-clock time passed as monotonic).
MAX_AHEAD_S = 24 * 3600.0
#: The kinds of order: undo a pause, undo a CPU cut, end a run's service when its owner dies, heal a partition's cut.
FAULTS = ("pause", "throttle", "reap", "partition")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class WatchdogOrder:
    """What one watchdog order guards, and the CLOCK_MONOTONIC time at which it acts."""

    backend: str  # "process", "docker" or "cgroup"; a partition's "route" or "link"
    ident: str  # process: "PID@STARTTICKS" (as TargetRef.ident); docker: the container id; cgroup: its directory;
    # route: the peer's address; link: the interface
    target: str  # the target's name, for logs and the journal record
    outage: str  # the fault's id, for the journal record
    deadline_monotonic: float  # time.monotonic() value at which to act
    journal: Path | None  # append the record of what it did there
    fault: str = "pause"  # pause (resume it), throttle (restore what undo holds), reap (end a run's service),
    # partition (remove the route, set the link up)
    undo: dict[str, Any] | None = None  # throttle: what restores the settings (CpuCut.undo()); partition: its netns
    owner: str | None = None  # PID@STARTTICKS: act as soon as that process dies, too (reap)

    def ref(self) -> TargetRef:
        """The guarded target as the backends and the journal name it."""
        return TargetRef(self.backend, self.target, self.ident)

    def problem(self) -> str | None:
        """Why this order cannot be guarded, or ``None`` (every field checked before anything acts on it)."""
        if self.fault not in FAULTS:
            return f"fault {str(self.fault)[:40]!r}: expected {', '.join(FAULTS[:-1])} or {FAULTS[-1]}"
        if self.fault == "throttle" and not isinstance(self.undo, dict):
            return "a throttle order without undo"
        if self.owner is not None and not PROCESS_IDENT.fullmatch(str(self.owner)):
            return f"owner {str(self.owner)[:40]!r}: expected PID@STARTTICKS"
        check = _CHECKS[self.fault].get(self.backend)
        if check is None:
            return f"backend {str(self.backend)[:40]!r}: expected {' or '.join(_CHECKS[self.fault])} for a {self.fault}"
        try:
            check(self)
        except (KeyError, TypeError, ValueError) as error:
            return f"{self.backend} {self.fault}: {error}"
        ahead_s = self.deadline_monotonic - time.monotonic()
        if not math.isfinite(ahead_s) or ahead_s > MAX_AHEAD_S:
            return f"deadline {ahead_s:.0f} s ahead: expected at most {MAX_AHEAD_S:.0f} s (a wall-clock time?)"
        return None

    def to_dict(self) -> dict[str, Any]:
        """The order as JSON carries it (the journal as an absolute path: the supervisor runs in ``/``)."""
        journal = str(self.journal.absolute()) if self.journal else None
        return dataclasses.asdict(self) | {"journal": journal}

    @classmethod
    def from_dict(cls, fields: Any) -> WatchdogOrder:
        """The inverse of :meth:`to_dict`; ``TypeError``/``ValueError`` for anything else."""
        if not isinstance(fields, dict) or not set(fields) <= {f.name for f in dataclasses.fields(cls)}:
            raise ValueError("an order: expected the fields of WatchdogOrder")
        texts = ("backend", "ident", "target", "outage")
        if not all(isinstance(fields.get(name), str) for name in texts):
            raise TypeError(f"an order's {', '.join(texts)}: expected text")
        journal = fields.get("journal")
        return cls(**fields | {
            "deadline_monotonic": float(fields["deadline_monotonic"]),
            "journal": Path(journal) if isinstance(journal, str) and journal.startswith("/") else None,
        })  # fmt: skip


def _process_ident(order: WatchdogOrder) -> None:
    if not PROCESS_IDENT.fullmatch(order.ident):
        raise ValueError(f"process ident {order.ident[:80]!r}: expected PID@STARTTICKS")


def _container_id(order: WatchdogOrder) -> None:
    if not (order.ident.isascii() and order.ident.isalnum() and len(order.ident) <= 128):
        raise ValueError(f"container id {order.ident[:80]!r}: expected letters and digits")


def _frozen_cgroup(order: WatchdogOrder) -> None:
    from retrystorm.chaos.freezer import Freezer  # noqa: PLC0415 - only a cgroup's order

    Freezer.at(order.ident)  # a real cgroup that can freeze: CgroupPathError, a ValueError


def _cgroup_cut(order: WatchdogOrder) -> None:
    undo = order.undo or {}
    if undo.get("kind") == "cgroup-quota":
        from retrystorm.chaos.cgroup_quota import QuotaCut  # noqa: PLC0415 - only a throttle's order

        directory = str(QuotaCut.from_undo(undo).directory)
    else:
        from retrystorm.chaos.cgroups import CgroupCut  # noqa: PLC0415 - only a throttle's order

        directory = str(CgroupCut.from_undo(undo).group)
    if directory != order.ident:
        raise ValueError(f"ident {order.ident[:200]!r}: not the undo's cgroup")


def _docker_cut(order: WatchdogOrder) -> None:
    _container_id(order)
    body = (order.undo or {}).get("restore")
    if not isinstance(body, dict) or not body or not set(body) <= {"NanoCpus", "CpuQuota", "CpuPeriod"}:
        raise ValueError(f"undo {str(order.undo)[:80]}: expected a restore body of NanoCpus, CpuQuota, CpuPeriod")
    if not all(type(value) is int and -1 <= value <= 2**40 for value in body.values()):
        raise ValueError(f"undo {str(body)[:80]}: expected whole numbers from -1 to 2**40")


def _service(order: WatchdogOrder) -> None:
    from retrystorm.chaos.containment import Containment  # noqa: PLC0415 - only a reap order

    Containment.from_undo(order.undo or {})
    if order.owner is None:
        raise ValueError("a reap order without its owner")


def _cut(order: WatchdogOrder) -> None:
    from retrystorm.chaos.watchdog.network_guards import check_cut  # noqa: PLC0415 - only a partition's order

    check_cut(order.backend, order.ident, order.undo)


#: Per kind of order and backend, the check of its ident and undo.
_CHECKS: dict[str, dict[str, Callable[[WatchdogOrder], None]]] = {
    "pause": {"process": _process_ident, "docker": _container_id, "cgroup": _frozen_cgroup},
    "throttle": {"cgroup": _cgroup_cut, "docker": _docker_cut},
    "reap": {"cgroup": _service},
    "partition": {"route": _cut, "link": _cut},
}
