"""Freeze local processes with SIGSTOP / SIGCONT, as the seed experiment does (``^Z``, ``fg``).

Only processes *registered* under a name can be paused, and registration refuses what
must never be frozen (:func:`check_pausable`): pid 1, kernel threads, the controller
itself and its ancestors (freezing them would freeze the one thing that resumes), and
processes of another user. A registered process is identified by its pid *and* its
start time (``PID@STARTTICKS``), so a pid the kernel recycled for another process is
never signalled.

Identity is the start time in clock ticks (:mod:`retrystorm.chaos.backends.procfs`, which says why
not psutil's ``create_time()``); state, owner and ancestors come from psutil.

A *group target* (:meth:`ProcessBackend.register_group`) is a whole process group, named
by its leader (``PGID@STARTTICKS``): a pre-fork server's master and workers freeze
together. It resolves to every member as it is then, each ``PID@STARTTICKS`` and each
checked as a single process is; the controller arms a watchdog per member, then
:meth:`ProcessBackend.pause_all` checks the leader, sends ``killpg(SIGSTOP)``, waits
for every member to stop and reads the group again, returning the members forked in
between for the controller to journal and guard. A resume of any member sends
``killpg(SIGCONT)`` (after checking the leader's identity) and then SIGCONT to that member
by its identity, as its watchdog would.

A *tree target* (:meth:`ProcessBackend.register_tree`) is a process and every descendant (read from ``/proc``
at each pause: the backends of a database that ``setsid()`` stay its children); a pause stops them top down,
reading the tree again until no member runs.

A *CPU cut* (:meth:`ProcessBackend.plan_cpu_cut`) moves the target's processes (a group's members) into
a cgroup with a CFS quota of capacity x their allowance (:mod:`retrystorm.chaos.cgroups`), one throttle group per
cgroup they came from; a group's members forked between planning and applying are moved in too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import functools
import os
import signal
from collections.abc import Callable, Mapping
from typing import Any

import psutil

from retrystorm.chaos.backends.base import (
    BackendError,
    CpuCut,
    FaultBackend,
    TargetRef,
    TargetRefusedError,
    TargetState,
    UnknownTargetError,
)
from retrystorm.chaos.backends.procfs import descendants, group_members, is_watchdog, process_start_ticks
from retrystorm.chaos.cgroups import CgroupCut, CgroupUnavailableError, Place, cpus_available, locate
from retrystorm.chaos.cpu_quota import allowance_cpus
from retrystorm.polling import poll_until_sync

#: How many times a tree is read again while stopping it (each round stops what the one before found).
TREE_ROUNDS = 20
#: Where a refused registration points the user.
REGISTER_HINT = "register a process when the controller starts: retrystorm chaos serve --target NAME=PID"


def process_ident(pid: int) -> str:
    """``PID@STARTTICKS`` for a running process; raises :class:`UnknownTargetError` if there is none."""
    start = process_start_ticks(pid)
    if start is None:
        raise UnknownTargetError(f"no process with pid {pid}")
    return f"{pid}@{start}"


def live_pid(ident: str) -> int | None:
    """The pid of ``ident`` (``PID@STARTTICKS``) if that very process still exists, else ``None``.

    A malformed ident (a journal line written by something else) is ``None`` too.
    """
    pid_text, _, start_text = ident.partition("@")
    if not pid_text.isdigit() or not start_text.isdigit():
        return None
    pid = int(pid_text)
    start = process_start_ticks(pid)
    return pid if start is not None and start == int(start_text) else None


def process_state(pid: int) -> TargetState:
    """Running, paused (stopped or traced) or gone (no such process, or a zombie)."""
    try:
        status = psutil.Process(pid).status()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return TargetState.GONE
    if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
        return TargetState.GONE
    return TargetState.PAUSED if status in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP) else TargetState.RUNNING


def check_pausable(pid: int) -> None:
    """Raise :class:`TargetRefusedError` (or :class:`UnknownTargetError`) unless ``pid`` may be frozen.

    Refused: pid 1 and below, kernel threads (children of ``kthreadd``, pid 2), this
    process and its ancestors, a retrystorm watchdog, and a process whose real user is not this
    process's real user (as root too: run the controller as the target's user to pause it).
    """
    if pid <= 1:
        raise TargetRefusedError(f"refusing pid {pid}: init and the kernel are never paused; {REGISTER_HINT}")
    try:
        process = psutil.Process(pid)
        ancestors = {parent.pid for parent in psutil.Process(os.getpid()).parents()}
        owner, parent = process.uids().real, process.ppid()
    except psutil.NoSuchProcess:
        raise UnknownTargetError(f"no process with pid {pid}") from None
    except psutil.AccessDenied as error:
        raise TargetRefusedError(f"refusing pid {pid}: cannot inspect it ({error})") from None
    if pid == 2 or parent == 2:
        raise TargetRefusedError(f"refusing pid {pid}: a kernel thread cannot be paused")
    if pid == os.getpid():
        raise TargetRefusedError(f"refusing pid {pid}: that is this controller itself; it would never resume")
    if is_watchdog(pid):
        raise TargetRefusedError(f"refusing pid {pid}: it is a retrystorm watchdog, which resumes what is paused")
    if pid in ancestors:
        raise TargetRefusedError(f"refusing pid {pid}: it is an ancestor of this controller, which it would freeze")
    if owner != os.getuid():
        raise TargetRefusedError(
            f"refusing pid {pid}: it belongs to uid {owner}, not to this controller's uid {os.getuid()}; "
            "run the controller as the process's user"
        )


class ProcessBackend(FaultBackend):
    """Registered local processes (``{"target": 1234}``); nothing else can be paused."""

    name = "process"

    #: How long pause/resume wait for the kernel to report the new state.
    settle_s = 5.0

    def __init__(self, targets: Mapping[str, int] | None = None) -> None:
        self._idents: dict[str, str] = {}
        self._groups: dict[str, str] = {}  # target -> its leader's PGID@STARTTICKS
        self._trees: dict[str, str] = {}  # target -> its root's PID@STARTTICKS
        for target, pid in (targets or {}).items():
            self.register(target, pid)

    def register_group(self, target: str, leader: int) -> TargetRef:
        """Make ``target`` name the process group led by ``leader`` (its pid is the group id), if it may be paused.

        Refused as :meth:`register` refuses, and when ``leader`` does not lead its group
        or the group holds this controller (its members are checked again at each pause).
        """
        check_pausable(leader)
        if os.getpgid(leader) != leader:
            raise TargetRefusedError(f"refusing pid {leader}: it does not lead a process group of its own")
        if leader == os.getpgrp():
            raise TargetRefusedError(f"refusing group {leader}: this controller belongs to it")
        return self._register(target, leader, self._groups)

    def register_tree(self, target: str, root: int) -> TargetRef:
        """Make ``target`` name the process tree of ``root``: it and every descendant, found again at each pause
        (those that ``setsid()`` included), each checked as a single process is."""
        check_pausable(root)
        return self._register(target, root, self._trees)

    def _register(self, target: str, pid: int, kind: dict[str, str]) -> TargetRef:
        ident = process_ident(pid)
        for registry in (self._idents, self._groups, self._trees):
            registry.pop(target, None)
        kind[target] = ident
        return TargetRef(self.name, target, ident)

    def group_of(self, target: str) -> int | None:
        """The process group id of group target ``target`` while its leader lives; ``None`` otherwise."""
        ident = self._groups.get(target)
        return live_pid(ident) if ident is not None else None

    def register(self, target: str, pid: int) -> TargetRef:
        """Make ``target`` name the process ``pid`` as it is now (pid and start time), if it may be paused."""
        check_pausable(pid)
        return self._register(target, pid, self._idents)

    def targets(self) -> list[str]:
        return sorted([*self._idents, *self._groups, *self._trees])

    def resolve(self, target: str) -> list[TargetRef]:
        if target in self._groups or target in self._trees:
            return self._members(target)
        if target not in self._idents:
            known = ", ".join(self.targets()) or "none"
            raise UnknownTargetError(f"no process target {target!r} (registered: {known}); {REGISTER_HINT}")
        return [TargetRef(self.name, target, self._idents[target])]

    def _members(self, target: str) -> list[TargetRef]:
        """Every member of group or tree target ``target`` now, each checked as a single process is."""
        if target in self._trees:
            root = live_pid(self._trees[target])
            if root is None:
                raise BackendError(f"the process tree of {target!r} ({self._trees[target]}) lost its root")
            found = descendants(root)
        else:
            pgid = self.group_of(target)
            if pgid is None:
                raise BackendError(f"the process group of {target!r} ({self._groups[target]}) lost its leader")
            found = group_members(pgid)
        refs = []
        for pid, ticks in found:
            check_pausable(pid)
            refs.append(TargetRef(self.name, target, f"{pid}@{ticks}"))
        return refs

    def pause_all(self, target: str, refs: list[TargetRef]) -> list[TargetRef]:
        """A group: ``killpg(SIGSTOP)``, every member stopped, the members not in ``refs`` returned; a tree: its
        members stopped top down until a reading finds none running; else each ref."""
        if target in self._trees:
            return self._pause_tree(target, refs)
        if target not in self._groups:
            return super().pause_all(target, refs)
        pgid = self.group_of(target)
        if pgid is None:
            raise BackendError(f"the process group of {target!r} lost its leader; nothing was paused")
        self._killpg(target, pgid, signal.SIGSTOP)
        members = self._members(target)
        for ref in members:
            self._settle(ref, TargetState.PAUSED)
        known = set(refs)
        return [ref for ref in members if ref not in known]

    def _pause_tree(self, target: str, refs: list[TargetRef]) -> list[TargetRef]:
        """Stop every member, parents first, until the tree read again has no member left running.

        A stopped process forks no more, so each round can only find children forked before their parent stopped.
        """
        for _ in range(TREE_ROUNDS):
            members = self._members(target)
            running = [ref for ref in members if self.state(ref) is TargetState.RUNNING]
            if not running:
                known = set(refs)
                return [ref for ref in members if ref not in known]
            for ref in running:
                self.pause(ref)
        raise BackendError(f"the process tree of {target!r} kept forking: not stopped after {TREE_ROUNDS} rounds")

    def pause(self, ref: TargetRef) -> None:
        """SIGSTOP, then wait until the kernel reports the process stopped (signals are asynchronous)."""
        self._signal(ref, signal.SIGSTOP)
        self._settle(ref, TargetState.PAUSED)

    def resume(self, ref: TargetRef) -> None:
        """SIGCONT (to its whole group first, for a group target's member), then wait until it runs again."""
        pgid = self.group_of(ref.target) if ref.target in self._groups else None
        if pgid is not None:
            self._killpg(ref.target, pgid, signal.SIGCONT)
        self._signal(ref, signal.SIGCONT)
        self._settle(ref, TargetState.RUNNING)

    def plan_cpu_cut(self, target: str, refs: list[TargetRef], capacity: float, tag: str) -> list[CpuCut]:
        """Throttle groups for the processes of ``refs`` (:func:`plan_process_cut`)."""
        pids = [pid for ref in refs if (pid := live_pid(ref.ident)) is not None]
        if not pids:
            raise BackendError(f"the processes of {target!r} are gone; nothing to throttle")
        cuts = plan_process_cut(target, pids, capacity, tag)
        if target in self._groups:
            pgid = self.group_of(target)
            for cut in cuts:
                original = cut.cut.original
                cut.latecomers = functools.partial(_members_in, pgid, original)
        return list(cuts)

    def restore_cpu(self, ref: TargetRef, undo: dict[str, Any]) -> str:
        """Undo a journaled cut (:meth:`retrystorm.chaos.cgroups.CgroupCut.restore`)."""
        return restore_cgroup_cut(ref, undo)

    def _settle(self, ref: TargetRef, wanted: TargetState) -> None:
        def settled() -> TargetState | None:
            state = self.state(ref)
            return state if state in (wanted, TargetState.GONE) else None

        def late() -> BackendError:
            return BackendError(f"{ref.describe()} is still {self.state(ref)} {self.settle_s:g} s after the signal")

        poll_until_sync(settled, timeout_s=self.settle_s, every_s=0.001, on_timeout=late)

    def state(self, ref: TargetRef) -> TargetState:
        pid = live_pid(ref.ident)
        return TargetState.GONE if pid is None else process_state(pid)

    @staticmethod
    def _killpg(target: str, pgid: int, signum: signal.Signals) -> None:
        try:
            os.killpg(pgid, signum)
        except ProcessLookupError:
            return
        except OSError as error:
            raise BackendError(f"cannot signal the process group {pgid} of {target!r}: {error}") from error

    def _signal(self, ref: TargetRef, signum: signal.Signals) -> None:
        pid = live_pid(ref.ident)
        if pid is None:
            return
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            return
        except OSError as error:
            if error.errno == errno.EPERM:
                raise BackendError(f"not allowed to signal {ref.describe()}: run as its owner or root") from error
            raise BackendError(f"cannot signal {ref.describe()}: {error}") from error


@dataclasses.dataclass(slots=True)
class ProcessCpuCut:
    """A :class:`~retrystorm.chaos.backends.base.CpuCut` of local processes: one throttle cgroup and the pids it
    takes."""

    ref: TargetRef
    cut: CgroupCut
    pids: list[int]
    cpus_before: float
    #: The pids to move in at apply time (a group's members now), besides ``pids``.
    latecomers: Callable[[], list[int]] = list

    @property
    def cpus_during(self) -> float:
        """The CPUs the throttle group allows."""
        return self.cut.cpus

    def undo(self) -> dict[str, Any]:
        """The group, the original cgroup and the limit (:meth:`retrystorm.chaos.cgroups.CgroupCut.undo`)."""
        return self.cut.undo()

    def prepare(self) -> None:
        """Create the throttle group with its limit, empty (what the watchdog guards)."""
        try:
            self.cut.create()
        except OSError as error:
            raise BackendError(f"cannot create the throttle group {self.cut.group}: {error}") from error

    def apply(self) -> None:
        """Move the pids in, then any group member forked since the plan."""
        try:
            self.cut.move_in(self.pids)
            self.cut.move_in([pid for pid in self.latecomers() if pid not in self.pids])
        except OSError as error:
            raise BackendError(f"cannot throttle {self.ref.target!r} in {self.cut.group}: {error}") from error

    def restore(self) -> str:
        """Every member back to its original cgroup; the group removed."""
        try:
            return self.cut.restore()
        except OSError as error:
            raise BackendError(f"cannot restore {self.ref.target!r} from {self.cut.group}: {error}") from error


def plan_process_cut(
    target: str, pids: list[int], capacity: float, tag: str, *, place_of: Callable[[int], Place] = locate
) -> list[ProcessCpuCut]:
    """One cut per cgroup ``pids`` sit in (usually one); :class:`TargetRefusedError` without a writable cpu cgroup."""
    places: dict[Place, list[int]] = {}
    for pid in pids:
        try:
            places.setdefault(place_of(pid), []).append(pid)
        except CgroupUnavailableError as error:
            raise TargetRefusedError(f"cannot throttle {target!r}: {error}") from None
    cuts = []
    for number, (place, members) in enumerate(places.items()):
        cpus = cpus_available(members[0])
        cut = CgroupCut.plan(place, capacity, f"{tag}-{number}", cpus)
        ref = TargetRef("cgroup", target, str(cut.group))
        cuts.append(ProcessCpuCut(ref, cut, members, cpus_before=allowance_cpus(place.limits(), cpus)))
    return cuts


def _members_in(pgid: int | None, original: Any) -> list[int]:
    """The members of group ``pgid`` that still sit in cgroup ``original`` (forked since the plan)."""
    if pgid is None:
        return []
    found = []
    for pid, _ in group_members(pgid):
        with contextlib.suppress(CgroupUnavailableError, TargetRefusedError, UnknownTargetError):
            check_pausable(pid)  # as every member is checked at resolve
            if locate(pid).directory == original:
                found.append(pid)
    return found


def restore_cgroup_cut(ref: TargetRef, undo: dict[str, Any]) -> str:
    """Undo a journaled cgroup cut: ``"restored"`` or ``"gone"`` (raises :class:`BackendError`)."""
    try:
        return CgroupCut.from_undo(undo).restore()
    except (KeyError, TypeError, ValueError) as error:
        raise BackendError(f"cannot restore {ref.describe()}: the journaled undo is not one: {error}") from error
    except OSError as error:
        raise BackendError(f"cannot restore {ref.describe()}: {error}") from error
