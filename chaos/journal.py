"""The pause journal: every pause is written (and fsynced) before it happens.

A JSON-lines file shared by every controller on a host. Each record is one step:
``{"op": "pause"|"resume", "utc": ..., "backend", "target", "ident", "outage",
"controller": "PID@START", "status", "error"}``. A pause without a later resume of the
same ``(backend, ident)`` is *pending*; a pending pause whose controller process no
longer exists was left behind by a controller that was killed, and the next controller
resumes it at start-up (:meth:`chaos.controller.OutageController.recover`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chaos.backends.base import TargetRef
from chaos.backends.process import process_start_ticks

JOURNAL_ENV = "RETRYSTORM_CHAOS_JOURNAL"


def default_journal_path() -> Path:
    """``$RETRYSTORM_CHAOS_JOURNAL``, else ``$XDG_STATE_HOME/retrystorm/chaos-journal.jsonl``."""
    if os.environ.get(JOURNAL_ENV):
        return Path(os.environ[JOURNAL_ENV])
    state_home = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state_home / "retrystorm" / "chaos-journal.jsonl"


def utc_now() -> str:
    """The current UTC time, ISO 8601 with milliseconds."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def this_controller() -> str:
    """``PID@STARTTICKS`` of this process: survives pid reuse."""
    pid = os.getpid()
    return f"{pid}@{process_start_ticks(pid)}"


def controller_alive(controller: str) -> bool:
    """Whether the controller process named by ``PID@STARTTICKS`` still runs."""
    pid_text, _, start_text = controller.partition("@")
    start = process_start_ticks(int(pid_text))
    return start is not None and str(start) == start_text


@dataclasses.dataclass(frozen=True, slots=True)
class PendingPause:
    """A pause the journal has no resume for."""

    ref: TargetRef
    outage: str
    controller: str
    utc: str


class Journal:
    """Append-only, lock-protected, fsynced JSON-lines journal of pauses and resumes."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_journal_path()
        self.controller = this_controller()

    @contextlib.contextmanager
    def _locked(self, mode: str) -> Iterator[Any]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open(mode, encoding="utf-8") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield handle
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def append(self, op: str, ref: TargetRef, outage: str, **extra: Any) -> None:
        """Write one record and fsync it before returning."""
        record = {
            "op": op,
            "utc": utc_now(),
            "backend": ref.backend,
            "target": ref.target,
            "ident": ref.ident,
            "outage": outage,
            "controller": self.controller,
            **extra,
        }
        with self._locked("a") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def records(self) -> list[dict[str, Any]]:
        """Every record, oldest first; a torn last line (a crash mid-write) is skipped."""
        if not self.path.exists():
            return []
        with self._locked("r") as handle:
            return _parse(handle.read())

    def pending(self) -> list[PendingPause]:
        """Pauses with no later resume of the same ``(backend, ident)``."""
        return _pending(self.records())

    def orphaned(self) -> list[PendingPause]:
        """Pending pauses whose controller is no longer running."""
        return [p for p in self.pending() if not controller_alive(p.controller)]

    def compact(self) -> None:
        """Empty the file when nothing is pending, so it does not grow forever."""
        if not self.path.exists():
            return
        with self._locked("r+") as handle:
            if not _pending(_parse(handle.read())):
                handle.seek(0)
                handle.truncate(0)


def _parse(text: str) -> list[dict[str, Any]]:
    parsed = []
    for line in text.splitlines():
        with contextlib.suppress(json.JSONDecodeError):
            parsed.append(json.loads(line))
    return parsed


def _pending(records: list[dict[str, Any]]) -> list[PendingPause]:
    open_pauses: dict[tuple[str, str], PendingPause] = {}
    for record in records:
        key = (record["backend"], record["ident"])
        if record["op"] == "pause":
            ref = TargetRef(record["backend"], record["target"], record["ident"])
            open_pauses[key] = PendingPause(ref, record["outage"], record["controller"], record["utc"])
        elif record["op"] == "resume" and record.get("status") != "failed":  # a failed resume left it paused
            open_pauses.pop(key, None)
    return list(open_pauses.values())
