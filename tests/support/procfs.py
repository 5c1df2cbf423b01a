"""The kernel's own view of a process, read from ``/proc`` independently of the code under test."""

from __future__ import annotations

from pathlib import Path


def process_state_letter(pid: int) -> str | None:
    """The state letter of ``/proc/PID/stat`` (``T`` stopped, ``Z`` zombie...), or ``None`` without a process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def is_alive(pid: int) -> bool:
    """Whether ``pid`` is a process that has not ended (neither gone nor a zombie)."""
    return process_state_letter(pid) not in (None, "Z")


def is_stopped(pid: int) -> bool:
    """Whether ``pid`` is stopped (``T``) or stopped by a tracer (``t``)."""
    return process_state_letter(pid) in ("T", "t")


def processes_with(text: str) -> list[int]:
    """Pids whose command line (arguments joined by spaces) contains ``text``: to see that nothing was left running."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found
