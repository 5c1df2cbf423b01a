"""The pause journal: every pause is written (and fsynced) before it happens.

A JSON-lines file shared by every controller on a host. Each record is one step:
``{"op": "pause"|"resume", "utc": ..., "backend", "target", "ident", "outage",
"controller": "PID@START", "status", "error"}``. A pause without a later resume of the
same ``(backend, ident)`` is *pending*; a pending pause whose controller process no
longer exists was left behind by a controller that was killed, and the next controller
resumes it at start-up (:meth:`retrystorm.chaos.controller.OutageController.recover`).

CPU capacity cuts (throttles) are journaled the same way, as ``"throttle"`` before the cut and
``"restore"`` after it, with ``backend`` ``cgroup`` (ident: the throttle group's directory) or
``docker`` (ident: the container id) and an ``undo`` object holding the original settings; a
pending throttle of a dead controller is restored from that ``undo``
(:meth:`Journal.pending_throttles`).

The file is private and opened as one an attacker could have planted would be
(:mod:`retrystorm.chaos.journal_file`: no symlink followed, this user's regular file, 0600 in a 0700 folder
whatever the umask, refused when full or read-only before any fault), and its content is distrusted: reading
never fails on a damaged file, and a line that is not UTF-8, not JSON, not an object, has an unknown ``op``, lacks
what names its target, holds a number that is not finite or beyond 2**53 (``1e999``, ``NaN``), or names a
backend, an ident, a target or an outage in a form retrystorm never writes, is skipped with one warning naming
the file and line; recovery goes on with the others. What an ``undo`` names is checked again where it is acted
on (a path must be a real cgroup: :func:`retrystorm.chaos.cgroupfs.real_cgroup`).

A pause whose bookkeeping (``outage``, ``controller``, ``utc``) is
missing or malformed is kept, and a controller it cannot name counts as not running, so
recovery resumes its target: resuming too much is safe, leaving a target frozen is not.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import fcntl
import json
import logging
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from retrystorm.chaos.backends.base import TargetRef
from retrystorm.chaos.backends.procfs import process_start_ticks
from retrystorm.chaos.journal_file import JournalError, JournalRefusedError, check_writable, open_private

log = logging.getLogger(__name__)

JOURNAL_ENV = "RETRYSTORM_CHAOS_JOURNAL"
#: At most this much of a journal is read (millions of records; a larger file is another file).
MAX_JOURNAL_BYTES = 64 * 1024 * 1024

#: ``PID@STARTTICKS``: how the journal names a process (a controller, a process target).
PROCESS_IDENT = re.compile(r"([0-9]{1,10})@([0-9]{1,20})")
#: No number in a record is larger (a deadline, a quota in µs, a pid all are far below it).
MAX_NUMBER = 2.0**53
MAX_UNDO_CHARS = 8192
_BACKEND = re.compile(r"[a-z][a-z0-9-]{0,19}")
#: A target's or an outage's name: printable, no control character, at most 256 characters.
_NAME = re.compile(r"[^\x00-\x1f\x7f]{1,256}")
_IDENTS = {
    "process": PROCESS_IDENT,
    "docker": re.compile(r"[A-Za-z0-9]{1,128}"),
    "cgroup": re.compile(r"/[^\x00-\x1f\x7f]{1,4095}"),
}
_IDENT_WORDS = {"process": "PID@STARTTICKS", "docker": "a container id", "cgroup": "an absolute cgroup path"}
#: Per op, the string fields without which a record names nothing to resume.
_REQUIRED = {
    "pause": ("backend", "target", "ident"),
    "resume": ("backend", "ident"),
    "throttle": ("backend", "target", "ident"),
    "restore": ("backend", "ident"),
}
#: Each op that starts a fault, and the op that ends it.
_ENDS = {"pause": "resume", "throttle": "restore"}


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
    """Whether the controller process named by ``PID@STARTTICKS`` still runs; other text names none that does."""
    match = PROCESS_IDENT.fullmatch(controller)
    if match is None:
        return False
    start = process_start_ticks(int(match[1]))
    return start is not None and str(start) == match[2]


@dataclasses.dataclass(frozen=True, slots=True)
class PendingFault:
    """A fault the journal shows started (``pause``, ``throttle``...) with no later successful end, and its undo."""

    ref: TargetRef
    fault: str
    controller: str
    utc: str
    undo: dict[str, Any]


def register_fault_ops(start: str, end: str) -> None:
    """Make ``start`` (written before a fault) and ``end`` (after its revert) journal ops of a new kind of fault."""
    _REQUIRED[start] = ("backend", "target", "ident")
    _REQUIRED[end] = ("backend", "ident")
    _ENDS[start] = end


class Journal:
    """Append-only, lock-protected, fsynced JSON-lines journal of pauses and resumes."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_journal_path()
        self.controller = this_controller()
        #: The last record that could not be written after a revert (:meth:`append_quietly`), for the exit line.
        self.write_failure: str | None = None

    @contextlib.contextmanager
    def _locked(self, *, create: bool) -> Iterator[Any]:
        """The file, locked, opened privately (:func:`retrystorm.chaos.journal_file.open_private`); ``None`` when
        it does not exist and ``create`` is False."""
        descriptor = open_private(self.path, create=create)
        if descriptor is None:
            yield None
            return
        with os.fdopen(descriptor, "r+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield handle
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def check_writable(self) -> None:
        """Refuse a journal that is not private, or whose file system is full or read-only, before any fault
        (:class:`~retrystorm.chaos.journal_file.JournalRefusedError`)."""
        with self._locked(create=True) as handle:
            check_writable(handle.fileno(), self.path)

    def append(self, op: str, ref: TargetRef, outage: str, **extra: Any) -> None:
        """Write one record and fsync it before returning.

        A torn last line (a writer killed mid-write) is first closed with a newline, so the
        new record gets a line of its own instead of being glued to the torn one and lost.
        """
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
        line = json.dumps(record, sort_keys=True).encode() + b"\n"
        with self._locked(create=True) as handle:
            try:
                if handle.seek(0, os.SEEK_END) > 0:
                    handle.seek(-1, os.SEEK_END)
                    if handle.read(1) != b"\n":
                        line = b"\n" + line
                handle.seek(0, os.SEEK_END)
                handle.write(line)
                handle.flush()
                os.fsync(handle.fileno())
            except OSError as error:
                raise JournalError(f"journal {self.path}: cannot record a {op}: {error.strerror or error}") from None

    def append_quietly(self, op: str, ref: TargetRef, outage: str, **extra: Any) -> None:
        """:meth:`append` for a record written after the fact (a revert): a failure to write is logged in one line
        and kept in :attr:`write_failure`, never raised, so the revert that happened is not undone by it."""
        try:
            self.append(op, ref, outage, **extra)
        except (OSError, JournalError, JournalRefusedError) as error:
            self.write_failure = f"the journal {self.path} could not record a {op} of {ref.describe()}: {error}"
            log.error("%s", self.write_failure)  # noqa: TRY400 - one line: the cause is in it

    def records(self) -> list[dict[str, Any]]:
        """Every usable record, oldest first; each unusable line is skipped with a warning (module docstring)."""
        with self._locked(create=False) as handle:
            return [] if handle is None else _parse(handle.read(MAX_JOURNAL_BYTES), self.path)

    def pending(self, op: str = "pause") -> list[PendingFault]:
        """Faults started by ``op`` (``pause``, ``throttle``...) with no later successful end of the same
        ``(backend, ident)``."""
        return _pending(self.records(), op)

    def pending_throttles(self) -> list[PendingFault]:
        """CPU cuts with no later successful restore (``pending("throttle")``)."""
        return self.pending("throttle")

    def orphaned(self) -> list[PendingFault]:
        """Pending pauses whose controller is no longer running."""
        return [p for p in self.pending() if not controller_alive(p.controller)]

    def compact(self) -> None:
        """Empty the file when nothing is pending, so it does not grow forever (a failure is logged, not raised)."""
        try:
            with self._locked(create=False) as handle:
                if handle is None:
                    return
                records = _parse(handle.read(MAX_JOURNAL_BYTES), None)
                if not any(_open_records(records, start) for start in _ENDS):
                    handle.seek(0)
                    handle.truncate(0)
        except (OSError, JournalError, JournalRefusedError) as error:
            log.error("could not compact the journal %s: %s", self.path, error)  # noqa: TRY400 - one line


def _parse(data: bytes, path: Path | None) -> list[dict[str, Any]]:
    """The usable records of ``data``; with a ``path``, one warning per line skipped or repaired."""
    parsed = []
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record, problem = _record(line)
        if problem and path is not None:
            torn = " (torn last line: a write cut short)" if number == len(lines) else ""
            log.warning("%s:%d: %s%s", path, number, problem, torn)
        if record is not None:
            parsed.append(record)
    return parsed


def _record(line: bytes) -> tuple[dict[str, Any] | None, str | None]:
    """``(record, None)``, ``(record, what was repaired)`` or ``(None, why it is skipped)``."""
    try:
        record = json.loads(line.decode("utf-8"), parse_constant=_no_constant, parse_float=_finite)
    except UnicodeDecodeError:
        return None, "skipped: not UTF-8 text"
    except (ValueError, RecursionError) as error:
        return None, f"skipped: not JSON ({str(error)[:80]})"
    if not isinstance(record, dict):
        return None, f"skipped: a JSON {type(record).__name__}, not an object"
    op = record.get("op")
    if not isinstance(op, str) or op not in _REQUIRED:
        return None, f"skipped: unknown op {op!r:.40}, expected {', '.join(_REQUIRED)}"
    for field in _REQUIRED[op]:
        value = record.get(field)
        if not isinstance(value, str) or not value:
            return None, f"skipped: {op} without a text {field!r} (got {value!r:.40})"
    if problem := _bad_field(record):
        return None, f"skipped: {problem}"
    if op in _ENDS:
        controller = record.get("controller")
        if not isinstance(controller, str) or not PROCESS_IDENT.fullmatch(controller):
            return record, f"controller {controller!r:.40} names no process: counted as not running"
    return record, None


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number a record may hold")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise ValueError(f"{text[:40]} is not a finite number of at most {MAX_NUMBER:g}")
    return value


def _bad_field(record: dict[str, Any]) -> str | None:
    """Why a record's names or numbers are not ones retrystorm writes, or ``None`` (checked before any undo)."""
    backend, ident = record["backend"], record["ident"]
    if not _BACKEND.fullmatch(backend):
        return f"backend {backend!r:.40} is not a backend's name"
    pattern = _IDENTS.get(backend, _NAME)
    if not pattern.fullmatch(ident) or (backend == "cgroup" and ".." in ident.split("/")):
        return f"{backend} ident {ident!r:.60} is not one (expected {_IDENT_WORDS.get(backend, 'a short name')})"
    if not _NAME.fullmatch(str(record.get("target", "-"))) or not _NAME.fullmatch(str(record.get("outage", "-"))):
        return f"target or outage {str(record.get('target'))[:40]!r} is not a name"
    undo = record.get("undo", {})
    if not isinstance(undo, dict) or len(json.dumps(undo)) > MAX_UNDO_CHARS:
        return f"undo {str(undo)[:40]!r} is not an object of at most {MAX_UNDO_CHARS} characters"
    if not _bounded(record):
        return f"a whole number beyond {MAX_NUMBER:g}"
    return None


def _bounded(value: object) -> bool:
    """Every whole number in ``value`` is at most :data:`MAX_NUMBER` in size."""
    if isinstance(value, dict):
        return all(_bounded(item) for item in value.values())
    if isinstance(value, list):
        return all(_bounded(item) for item in value)
    return not isinstance(value, int) or abs(value) <= MAX_NUMBER


def _text(record: dict[str, Any], field: str) -> str:
    value = record.get(field)
    return value if isinstance(value, str) else ""


def _open_records(records: list[dict[str, Any]], start: str) -> list[dict[str, Any]]:
    """The ``start`` records (pause, throttle) with no later successful end of the same ``(backend, ident)``."""
    open_records: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        key = (record["backend"], record["ident"])
        if record["op"] == start:
            open_records[key] = record
        elif record["op"] == _ENDS[start] and record.get("status") != "failed":  # a failed end left it in place
            open_records.pop(key, None)
    return list(open_records.values())


def _pending(records: list[dict[str, Any]], op: str) -> list[PendingFault]:
    pending = []
    for record in _open_records(records, op):
        ref = TargetRef(record["backend"], record["target"], record["ident"])
        undo = record.get("undo")
        fault, controller, utc = _text(record, "outage") or "?", _text(record, "controller"), _text(record, "utc")
        pending.append(PendingFault(ref, fault, controller, utc, undo if isinstance(undo, dict) else {}))
    return pending
