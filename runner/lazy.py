"""A fault backend made on first use, so that a dry run connects to nothing (no Docker engine needed)."""

from __future__ import annotations

from collections.abc import Callable

from retrystorm.chaos.backends.base import FaultBackend
from retrystorm.chaos.backends.docker_sdk import require_docker_sdk


class LazyBackend:
    """One fault backend, made on first use (when a run starts, never for a dry run).

    ``what`` says which, for the plan: ``the docker backend``, ``the chaos API at ...``.
    """

    def __init__(self, name: str, make: Callable[[], FaultBackend], what: str | None = None) -> None:
        self.name = name
        self.what = what or f"the {name} backend"
        self._make = make
        self._backend: FaultBackend | None = None

    @classmethod
    def of(cls, backend: FaultBackend) -> LazyBackend:
        """A backend already made."""
        return cls(backend.name, lambda: backend)

    def backend(self) -> FaultBackend:
        """The backend, made now if it was not yet (``BackendError`` if it cannot be)."""
        if self._backend is None:
            self._backend = self._make()
        return self._backend


def docker_backend(
    project: str | None,
    containers: dict[str, str] | None = None,
    services: dict[str, str] | None = None,
    *,
    needed_by: str | None = None,
) -> LazyBackend:
    """The docker backend for compose project ``project`` (any project: ``None``), connected on first use.

    ``containers`` and ``services`` name a single container or a compose service as a target
    (a scenario's ``target: {container: NAME}`` or ``{service: NAME}``).
    The Docker SDK (the ``docker`` extra) is checked for now, not imported: without it, a user error.
    """
    require_docker_sdk(needed_by or "--backend compose without --chaos-url (the docker backend)")
    scope = f" (compose project {project!r})" if project else ""
    return LazyBackend("docker", _docker_maker(project, containers, services), f"the docker backend{scope}")


def _docker_maker(
    project: str | None, containers: dict[str, str] | None, services: dict[str, str] | None
) -> Callable[[], FaultBackend]:
    def make() -> FaultBackend:
        from retrystorm.chaos.backends.docker import DockerBackend  # noqa: PLC0415 - the Docker SDK only when used

        return DockerBackend(project=project, containers=containers, services=services)

    return make
