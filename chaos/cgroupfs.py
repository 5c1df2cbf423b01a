"""cgroupfs, read and written with the standard library only: which hierarchies are mounted, which paths are real
cgroups, who is in them.

The dead-man watchdog (:mod:`retrystorm.chaos.watchdog`, started with ``-S``) and journal recovery act as root on
paths that a journal record or a watchdog order names; they accept a path only through :func:`real_cgroup`:

- absolute and normalised, with no symbolic link anywhere along it (``os.path.realpath`` gives it back unchanged,
  and the directory itself is not a link), so a record cannot steer a write through a user's symlink;
- a mounted cgroup hierarchy (``cgroup`` v1 or ``cgroup2``, from ``/proc/self/mountinfo``) or a directory under
  one, so a plain folder named like a cgroup is never one;
- holding a regular ``cgroup.procs`` file, which only the kernel makes in a cgroup.

Control files are opened with ``O_NOFOLLOW``. Tests point ``mountinfo`` at a directory laid out like cgroupfs
(a cgroup v2 ``cpu`` controller where the kernel has none mounted).
"""

from __future__ import annotations

import dataclasses
import os
import stat
from collections.abc import Iterator
from pathlib import Path

#: How a v1 hierarchy's controller may be named in mountinfo's super options.
V1_CONTROLLERS = ("cpu", "freezer", "pids", "memory", "cpuset", "cpuacct", "blkio", "devices")


class CgroupPathError(ValueError):
    """A path that is not a real cgroup directory (the message says which rule it broke)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Mount:
    """A mounted cgroup hierarchy: ``version`` 1 or 2, at ``path``, from ``root`` (its root inside the hierarchy)."""

    version: int
    path: Path
    root: str
    controllers: frozenset[str]

    def has(self, controller: str) -> bool:
        """Whether this hierarchy offers ``controller`` (v2: listed in the root's ``cgroup.controllers``)."""
        if self.version == 1:
            return controller in self.controllers
        if controller == "freezer":  # cgroup.freeze is part of every v2 cgroup (Linux 5.2+)
            return True
        return controller in read_words(self.path / "cgroup.controllers")

    def directory(self, relative: str) -> Path:
        """The directory of the cgroup at ``relative`` (as ``/proc/PID/cgroup`` names it) in this hierarchy."""
        inside = relative.strip("/")
        root = self.root.strip("/")
        if root and (inside == root or inside.startswith(root + "/")):
            inside = inside[len(root) :].strip("/")
        return self.path / inside if inside else self.path


def mounts(mountinfo: str | None = None) -> list[Mount]:
    """Every cgroup hierarchy of a ``/proc/self/mountinfo`` text (the live one by default), v2 first."""
    if mountinfo is None:
        mountinfo = Path("/proc/self/mountinfo").read_text()
    found = []
    for line in mountinfo.splitlines():
        head, sep, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not sep or len(fields) < 5 or len(rest) < 3:
            continue
        fstype, options = rest[0], set(rest[2].split(","))
        path = Path(fields[4].replace("\\040", " "))
        if fstype == "cgroup2":
            found.append(Mount(2, path, fields[3], frozenset()))
        elif fstype == "cgroup":
            found.append(Mount(1, path, fields[3], frozenset(options & set(V1_CONTROLLERS))))
    return sorted(found, key=lambda mount: mount.version, reverse=True)


def mount_of(path: Path, known: list[Mount]) -> Mount | None:
    """The hierarchy ``path`` is the root of or lies under, if any."""
    for mount in known:
        if mount.path == path or mount.path in path.parents:
            return mount
    return None


def real_cgroup(path: Path | str, known: list[Mount] | None = None) -> tuple[Path, Mount]:
    """``path`` and its hierarchy if it is a real cgroup directory (module docstring); :class:`CgroupPathError`."""
    text = str(path)
    if not text.startswith("/") or "\x00" in text or len(text) > 4096:
        raise CgroupPathError(f"{text[:200]!r}: expected an absolute path")
    candidate = Path(text)
    if os.path.normpath(text) != text or os.path.realpath(text) != text:
        raise CgroupPathError(f"{text[:200]!r}: not a plain path (a symbolic link, '..' or '//' in it)")
    mount = mount_of(candidate, known if known is not None else mounts())
    if mount is None:
        raise CgroupPathError(f"{text[:200]!r}: not under a mounted cgroup hierarchy")
    try:
        own = os.lstat(candidate)
        procs = os.lstat(candidate / "cgroup.procs")
    except OSError as error:
        raise CgroupPathError(f"{text[:200]!r}: not a cgroup ({error.strerror})") from None
    if not stat.S_ISDIR(own.st_mode) or not stat.S_ISREG(procs.st_mode):
        raise CgroupPathError(f"{text[:200]!r}: not a cgroup directory (no cgroup.procs in it)")
    return candidate, mount


def read_words(path: Path) -> list[str]:
    """The words of a control file; [] when it cannot be read."""
    try:
        return read_control(path).split()
    except OSError:
        return []


def read_control(path: Path) -> str:
    """A control file's text, opened without following a symbolic link."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(descriptor, "rb") as handle:
        return handle.read(1 << 20).decode(errors="replace")


def write_control(path: Path, text: str) -> None:
    """Write ``text`` to a control file that exists, without following a symbolic link (raises ``OSError``).

    ``O_TRUNC`` as a shell's ``>`` does: the kernel ignores it on cgroupfs, and a file of a fake cgroupfs is replaced.
    """
    descriptor = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        os.write(descriptor, text.encode())
    finally:
        os.close(descriptor)


def tree(directory: Path) -> Iterator[Path]:
    """``directory`` and every cgroup below it, parents first (symbolic links never followed)."""
    yield directory
    try:
        children = sorted(entry for entry in directory.iterdir() if entry.is_dir() and not entry.is_symlink())
    except OSError:
        return
    for child in children:
        yield from tree(child)


def members(directory: Path) -> list[int]:
    """Every process in the cgroup at ``directory`` and below it, ascending."""
    pids: set[int] = set()
    for group in tree(directory):
        pids.update(int(word) for word in read_words(group / "cgroup.procs") if word.isdigit())
    return sorted(pids)


def cgroup_path(proc_cgroup: str, mount: Mount) -> str | None:
    """The path in ``mount``'s hierarchy of a ``/proc/PID/cgroup`` text (``None`` if it names none there)."""
    for line in proc_cgroup.splitlines():
        number, _, rest = line.partition(":")
        controllers, _, relative = rest.partition(":")
        if mount.version == 2 and number == "0" and controllers == "":
            return relative
        if mount.version == 1 and set(controllers.split(",")) & mount.controllers:
            return relative
    return None


def own_cgroup(pid: int | str, mount: Mount, proc: Path = Path("/proc")) -> Path | None:
    """The directory of ``pid``'s cgroup in ``mount``'s hierarchy (``None`` if it cannot be read)."""
    try:
        text = (proc / str(pid) / "cgroup").read_text()
    except OSError:
        return None
    relative = cgroup_path(text, mount)
    return mount.directory(relative) if relative is not None else None
