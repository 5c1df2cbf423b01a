"""The kernel's own view of a process, read from ``/proc`` with the standard library only.

A process is identified by its pid *and* its start time in clock ticks since boot
(``/proc/PID/stat`` field 22): a pid the kernel recycles belongs to a process with a
later start time. The start ticks are an exact integer; psutil's ``create_time()`` is
derived from them through the boot time, which the kernel reports rounded to the second
and which moves when the clock is slewed, so it is no stable key for a journal that
outlives processes. The watchdog process (:mod:`retrystorm.chaos.watchdog`) starts without
site-packages to arm in tens of milliseconds, so what it reads of a process is here, not
in psutil.
"""

from __future__ import annotations

from pathlib import Path


def _stat_fields(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # The command name (field 2) is in parentheses and may contain spaces and parentheses.
    return stat.rsplit(")", 1)[1].split()


def process_start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``/proc/PID/stat`` field 22), ``None`` if gone."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None else None


def process_state_letter(pid: int) -> str | None:
    """The state letter of ``/proc/PID/stat`` (``T`` stopped, ``Z`` zombie...), ``None`` if gone."""
    fields = _stat_fields(pid)
    return fields[0] if fields is not None else None


def process_group(pid: int) -> int | None:
    """The process group id of ``pid`` (``/proc/PID/stat`` field 5), ``None`` if gone."""
    fields = _stat_fields(pid)
    return int(fields[2]) if fields is not None else None


def group_members(pgid: int) -> list[tuple[int, int]]:
    """Every live process of group ``pgid`` as ``(pid, start ticks)``, ascending by pid; zombies left out.

    Read from ``/proc/*/stat`` (one pass; a process that exits meanwhile is skipped).
    """
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append((int(entry.name), int(fields[19])))
    return sorted(members)


def descendants(root: int) -> list[tuple[int, int]]:
    """``root`` and every live process below it (children, theirs...) as ``(pid, start ticks)``, ascending.

    Read from ``/proc/*/stat`` in one pass (parent links); a process that calls ``setsid()`` stays its parent's child,
    one whose parent exited (a double fork) is reparented away and is no longer found.
    """
    children: dict[int, list[tuple[int, int]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and fields[0] not in ("Z", "X"):
            children.setdefault(int(fields[1]), []).append((int(entry.name), int(fields[19])))
    own = process_start_ticks(root)
    if own is None:
        return []
    found, frontier = [(root, own)], [root]
    while frontier:
        below = children.get(frontier.pop(), [])
        found += below
        frontier += [pid for pid, _ in below]
    return sorted(found)


#: The module every watchdog runs (``python -m retrystorm.chaos.watchdog``): what marks a process as one.
WATCHDOG_MODULE = "retrystorm.chaos.watchdog"


def is_watchdog(pid: int) -> bool:
    """Whether ``pid`` is a retrystorm watchdog (its command line runs :data:`WATCHDOG_MODULE`): never a target."""
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return WATCHDOG_MODULE.encode() in arguments
