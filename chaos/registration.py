"""What a user may name as a target on the command line, and its registration in the backend that faults it.

``KIND:VALUE``, each registered with its backend's refusals when the command starts (nothing from the network
names a raw pid or path):

- ``pid:PID`` (or a bare ``PID`` in ``chaos serve --target NAME=PID``): one process, SIGSTOP/SIGCONT;
- ``tree:PID``: that process and every descendant, found again at each pause (those that ``setsid()`` too);
- ``cgroup:PATH``: a whole cgroup, frozen by the cgroup freezer and cut in place
  (:mod:`retrystorm.chaos.backends.cgroup`); PATH as ``/proc/PID/cgroup`` writes it, or its directory;
- ``unit:UNIT``: a systemd unit's cgroup (``systemctl show -p ControlGroup``).
"""

from __future__ import annotations

import dataclasses

from retrystorm.chaos.backends.base import FaultBackend
from retrystorm.chaos.backends.cgroup import CgroupBackend
from retrystorm.chaos.backends.process import ProcessBackend
from retrystorm.errors import UserError

KINDS = ("pid", "tree", "cgroup", "unit")
ACCEPTED = "pid:NUMBER, tree:NUMBER, cgroup:PATH or unit:UNIT"
MAX_NAME_CHARS = 200
MAX_VALUE_CHARS = 4096


@dataclasses.dataclass(frozen=True, slots=True)
class TargetSpec:
    """A target as typed: its kind and what names it."""

    kind: str
    value: str

    @classmethod
    def parse(cls, text: str, *, bare_pid: bool = False) -> TargetSpec:
        """``KIND:VALUE`` (a bare number is ``pid:`` when ``bare_pid``); a one-line :class:`UserError` otherwise."""
        kind, sep, value = text.partition(":")
        if bare_pid and not sep and text.isdigit():
            kind, value = "pid", text
        if kind not in KINDS or not value or len(value) > MAX_VALUE_CHARS:
            raise UserError(f"target: got {text[:60]!r}, expected {ACCEPTED}")
        if kind in ("pid", "tree") and (not value.isdigit() or len(value) > 10):
            raise UserError(f"target: got {text[:60]!r}, expected {kind}:NUMBER")
        return cls(kind, value)

    @property
    def backend_name(self) -> str:
        """The backend that faults this kind."""
        return "process" if self.kind in ("pid", "tree") else "cgroup"

    def register(self, name: str, backends: dict[str, FaultBackend]) -> None:
        """Register this target as ``name`` in its backend (made if missing), with that backend's refusals."""
        backend = backends.setdefault(self.backend_name, _make(self.backend_name))
        if isinstance(backend, ProcessBackend):
            if self.kind == "tree":
                backend.register_tree(name, int(self.value))
            else:
                backend.register(name, int(self.value))
        elif isinstance(backend, CgroupBackend):
            if self.kind == "unit":
                backend.register_unit(name, self.value)
            else:
                backend.register(name, self.value)


def _make(name: str) -> FaultBackend:
    return ProcessBackend() if name == "process" else CgroupBackend()


def parse_named(value: str) -> tuple[str, TargetSpec]:
    """``NAME=PID`` or ``NAME=KIND:VALUE`` (``chaos serve --target``)."""
    name, eq, spec = value.partition("=")
    refusal = UserError(f"--target: got {value[:60]!r}, expected NAME=PID or NAME={ACCEPTED}, e.g. target=1234")
    if not eq or not name or len(name) > MAX_NAME_CHARS:
        raise refusal
    try:
        return name, TargetSpec.parse(spec, bare_pid=True)
    except UserError:
        raise refusal from None
