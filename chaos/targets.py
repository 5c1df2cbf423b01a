"""What may be paused: a named target with the backend that pauses it, and the allow-list of them.

A :class:`FaultTarget` is what a scenario's ``pause: NAME`` or the chaos API's
``{"target": NAME}`` comes down to: the name and the backend that freezes it, so
pausing it takes no further lookup. The backend resolves the name to the concrete
things it freezes (:meth:`FaultTarget.refs`) at the moment of the pause, because a
compose service's containers can change between pauses; a registered process is
fixed at registration (pid and start time).

A :class:`TargetRegistry` is the allow-list of a controller that takes names from the
network (``retrystorm chaos serve``): the targets registered when it started (processes
named on its command line) and, for the docker backend, the containers that opted in
with the label ``retrystorm.chaos=allow``. Nothing else can be named: a raw ``pid:N``
is refused with the way to register one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from retrystorm.chaos.backends.base import FaultBackend, TargetRef, TargetRefusedError, UnknownTargetError
from retrystorm.chaos.backends.process import REGISTER_HINT
from retrystorm.errors import UserError


@dataclasses.dataclass(frozen=True, slots=True)
class FaultTarget:
    """A target that may be paused: its name and the backend that pauses it."""

    name: str
    backend: FaultBackend

    def refs(self) -> list[TargetRef]:
        """The concrete things to freeze now (raises :class:`UnknownTargetError` / :class:`TargetRefusedError`)."""
        return self.backend.resolve(self.name)


class TargetRegistry:
    """The targets a controller serving the network may pause, by name (and backend, when names clash)."""

    def __init__(self, backends: Sequence[FaultBackend]) -> None:
        self.backends = list(backends)

    def find(self, name: str, backend: str | None = None) -> FaultTarget:
        """The registered target ``name``; a raw pid or an unknown name is a one-line refusal."""
        if name.startswith("pid:"):
            raise TargetRefusedError(f"target {name!r}: raw pids are not accepted; {REGISTER_HINT}")
        backends = [b for b in self.backends if backend is None or b.name == backend]
        if backend is not None and not backends:
            known = ", ".join(b.name for b in self.backends)
            raise UserError(f"backend: got {backend!r}, expected one of {known}")
        found = [b for b in backends if name in b.targets()]
        if len(found) > 1:
            names = ", ".join(b.name for b in found)
            raise UnknownTargetError(f"target {name!r} exists in backends {names}; say which with backend")
        if not found:
            for candidate in backends:  # a backend's own reason first, e.g. a container without the opt-in label
                try:
                    candidate.resolve(name)
                except TargetRefusedError:
                    raise
                except UnknownTargetError:
                    continue
            known = ", ".join(f"{b.name}:{target}" for b, target in self.listing()) or "none"
            raise UnknownTargetError(f"no target {name!r}; targets: {known}; {REGISTER_HINT}")
        return FaultTarget(name, found[0])

    def listing(self) -> list[tuple[FaultBackend, str]]:
        """Every target, as ``(backend, name)``, sorted by backend then name."""
        return [(backend, target) for backend in self.backends for target in backend.targets()]
