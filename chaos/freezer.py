"""Freeze a whole cgroup at once, as ``docker pause`` does: v2 ``cgroup.freeze``, v1 ``freezer.state``.

Standard library only: the dead-man watchdog imports it to thaw a cgroup at its deadline.

A :class:`Freezer` is one cgroup directory in a hierarchy that can freeze (every cgroup v2 hierarchy, Linux 5.2+;
a v1 hierarchy with the ``freezer`` controller). Freezing it freezes every process in it and in every cgroup
below it, at once, whatever they do (``setsid()``, fork, a change of user): the kernel keeps a forked child in
its parent's cgroup, so nothing escapes the way a process group or a process tree can be escaped.

- :meth:`Freezer.freeze` writes ``1`` / ``FROZEN`` and waits until the kernel reports the whole cgroup frozen
  (``cgroup.events`` ``frozen 1``, ``freezer.state`` ``FROZEN``); :meth:`Freezer.thaw` writes ``0`` / ``THAWED``.
- :meth:`Freezer.state`: ``frozen``, ``thawed`` or ``gone``, from the kernel's own report.
- :meth:`Freezer.kill`: every member SIGKILLed, frozen or not (v2 ``cgroup.kill``, Linux 5.14+; else thawed and
  each pid killed until none is left).
- :meth:`Freezer.undo` / :meth:`Freezer.from_undo`: what a journal record and a watchdog order carry; a record is
  accepted only for a real cgroup directory (:func:`retrystorm.chaos.cgroupfs.real_cgroup`).

**The kubelet's layout** (for the Kubernetes agent). :func:`kubelet_cgroup` gives the cgroup of a pod, or of one
of its containers, as the kubelet lays it out (``pkg/kubelet/cm/cgroup_manager_linux.go``,
``CgroupName.ToCgroupfs`` / ``ToSystemd``; container scopes as containerd and CRI-O name them). With the
``cgroupfs`` driver a Burstable pod's container is ``/kubepods/burstable/pod<UID>/<ID>``; with ``systemd`` it is
``/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<UID, - as _>.slice/cri-containerd-<ID>.scope``.
:meth:`Freezer.of` finds that path in a hierarchy that can freeze (v2 first), and
:class:`retrystorm.chaos.backends.cgroup.CgroupBackend` registers it, freezes it and cuts its CPU in place::

    path = kubelet_cgroup(pod_uid, "burstable", driver="systemd", container_id=cid)
    backend = CgroupBackend()
    backend.register("web-0", path)             # refused: root, this controller's own cgroup, a watchdog's, pid 1
    # then controller.pause(FaultTarget("web-0", backend), 10) and controller.throttle(..., 0.4, 10)
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import time
from pathlib import Path
from typing import Any

from retrystorm.chaos.cgroupfs import (
    CgroupPathError,
    Mount,
    members,
    mounts,
    read_control,
    real_cgroup,
    write_control,
)

#: How long a freeze may take to be complete before it is an error (a task stuck in the kernel).
SETTLE_S = 5.0
#: v1 kill: how many rounds of SIGKILL before giving up on a cgroup that keeps forking.
KILL_ROUNDS = 50
#: A pod's UID and a container's ID as the kubelet and the runtimes write them.
_UID = re.compile(r"[0-9a-fA-F-]{8,64}")
_CONTAINER_ID = re.compile(r"[0-9a-fA-F]{12,64}")
QOS_CLASSES = ("guaranteed", "burstable", "besteffort")
#: The systemd scope prefix of each container runtime (``SystemdPathPrefixOfRuntime``).
RUNTIME_PREFIXES = {"containerd": "cri-containerd", "cri-o": "crio", "docker": "docker"}


class FreezeError(Exception):
    """A freeze or thaw the kernel did not carry out (the message says what it saw)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Freezer:
    """One cgroup that can be frozen: its ``version`` (1, 2) and ``directory``."""

    version: int
    directory: Path

    @classmethod
    def at(cls, directory: Path | str, known: list[Mount] | None = None) -> Freezer:
        """The freezer of a real cgroup directory (``CgroupPathError`` otherwise, or where it cannot freeze)."""
        path, mount = real_cgroup(directory, known)
        control = "cgroup.freeze" if mount.version == 2 else "freezer.state"
        if not (path / control).is_file():
            raise CgroupPathError(f"{str(path)[:200]!r}: no {control} (this hierarchy cannot freeze)")
        return cls(mount.version, path)

    @classmethod
    def of(cls, relative: str, known: list[Mount] | None = None) -> Freezer:
        """The freezer of the cgroup at ``relative`` (``/proc/PID/cgroup``'s path): v2 if it is there, else v1."""
        known = known if known is not None else mounts()
        tried = []
        for mount in known:
            if mount.has("freezer"):
                directory = mount.directory(relative)
                try:
                    return cls.at(directory, known)
                except CgroupPathError as error:
                    tried.append(str(error))
        raise CgroupPathError(f"cgroup {relative[:200]!r}: not found where it could be frozen ({'; '.join(tried)})")

    def freeze(self, settle_s: float = SETTLE_S) -> None:
        """Freeze every process in the cgroup and below; return once the kernel reports it frozen."""
        self._write("1" if self.version == 2 else "FROZEN")
        give_up = time.monotonic() + settle_s
        while self.state() != "frozen":
            if time.monotonic() > give_up:
                raise FreezeError(f"{self.directory} is not frozen {settle_s:g} s after the freeze ({self.state()})")
            if self.version == 1:
                self._write("FROZEN")  # v1 retries a freeze that met a task it could not stop yet
            time.sleep(0.002)

    def thaw(self) -> str:
        """Thaw the cgroup: ``"thawed"``, or ``"gone"`` when it no longer exists."""
        try:
            self._write("0" if self.version == 2 else "THAWED")
        except FileNotFoundError:
            return "gone"
        return "thawed"

    def state(self) -> str:
        """``frozen`` (the kernel reports every member frozen), ``thawed`` (or freezing), or ``gone``."""
        try:
            if self.version == 2:
                return "frozen" if "frozen 1" in read_control(self.directory / "cgroup.events") else "thawed"
            return "frozen" if read_control(self.directory / "freezer.state").strip() == "FROZEN" else "thawed"
        except FileNotFoundError:
            return "gone"

    def members(self) -> list[int]:
        """Every process in the cgroup and below it."""
        return members(self.directory)

    def kill(self) -> None:
        """SIGKILL every member, frozen or not; return once none is left (``FreezeError`` if they keep coming)."""
        if self.version == 2 and (self.directory / "cgroup.kill").is_file():
            write_control(self.directory / "cgroup.kill", "1")
        else:
            self.thaw()  # a v1-frozen task only dies once thawed
        for _ in range(KILL_ROUNDS):
            left = self.members()
            if not left:
                return
            for pid in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    continue
            time.sleep(0.02)
        raise FreezeError(f"{self.directory} still holds {len(self.members())} processes after {KILL_ROUNDS} kills")

    def undo(self) -> dict[str, Any]:
        """What thaws it without this process (journal record, watchdog order)."""
        return {"kind": "freeze", "version": self.version, "directory": str(self.directory)}

    @classmethod
    def from_undo(cls, undo: dict[str, Any], known: list[Mount] | None = None) -> Freezer:
        """The inverse of :meth:`undo`, only for a real cgroup that can freeze (``CgroupPathError``)."""
        directory = undo.get("directory")
        if undo.get("kind") != "freeze" or not isinstance(directory, str):
            raise CgroupPathError(f"undo {str(undo)[:120]}: expected kind freeze and a directory")
        freezer = cls.at(directory, known)
        if undo.get("version") != freezer.version:
            raise CgroupPathError(f"undo {str(undo)[:120]}: version is not the hierarchy's ({freezer.version})")
        return freezer

    def _write(self, value: str) -> None:
        write_control(self.directory / ("cgroup.freeze" if self.version == 2 else "freezer.state"), value)


def kubelet_cgroup(
    pod_uid: str,
    qos: str,
    *,
    driver: str,
    container_id: str | None = None,
    runtime: str = "containerd",
    cgroup_root: str = "/",
) -> str:
    """The cgroup path of a pod (or of its container) as the kubelet lays it out (module docstring).

    ``qos``: guaranteed, burstable or besteffort; ``driver``: cgroupfs or systemd; ``cgroup_root``: the kubelet's
    ``--cgroup-root`` (or a folder that holds such a layout). Raises ``ValueError`` naming a bad argument.
    """
    if not _UID.fullmatch(pod_uid):
        raise ValueError(f"pod uid {pod_uid[:80]!r}: expected the pod's UID (hex digits and -)")
    if qos not in QOS_CLASSES:
        raise ValueError(f"qos {qos!r}: expected one of {', '.join(QOS_CLASSES)}")
    if container_id is not None and not _CONTAINER_ID.fullmatch(container_id):
        raise ValueError(f"container id {container_id[:80]!r}: expected 12 to 64 hex digits")
    names = ["kubepods", *([] if qos == "guaranteed" else [qos]), f"pod{pod_uid}"]
    if driver == "cgroupfs":
        parts = names + ([container_id] if container_id else [])
    elif driver == "systemd":
        if runtime not in RUNTIME_PREFIXES:
            raise ValueError(f"runtime {runtime!r}: expected one of {', '.join(RUNTIME_PREFIXES)}")
        escaped = [name.replace("-", "_") for name in names]
        parts = ["-".join(escaped[: depth + 1]) + ".slice" for depth in range(len(escaped))]
        if container_id:
            parts.append(f"{RUNTIME_PREFIXES[runtime]}-{container_id}.scope")
    else:
        raise ValueError(f"driver {driver!r}: expected cgroupfs or systemd")
    return "/" + "/".join([*filter(None, cgroup_root.strip("/").split("/")), *parts])
