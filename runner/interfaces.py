"""What the orchestration needs from a stack, as small protocols.

The orchestration (:mod:`retrystorm.runner.orchestrate`) only talks to these, so the same
code runs against local processes (:mod:`retrystorm.runner.local`) and a compose
stack (the Locust master's HTTP API, the docker fault backend, the target's
``POST /admin/reset`` and Prometheus' HTTP API):

* a :class:`TargetProvider` starts a fresh target for each strategy (or resets one);
  the :class:`TargetHandle` it returns carries its fault targets, each with the
  backend that pauses it, and its :class:`TargetControls` for the slow and errors
  triggers (the built-in target's admin API: :mod:`retrystorm.runner.target_controls`), or the
  fault target a slow cuts the CPU of (a service of one's own: :mod:`retrystorm.runner.throttle_controls`);
* a :class:`LoadDriver` starts one strategy's load against a target; its
  :class:`LoadHandle` also says how busy its load-generator processes are (the CPU
  share of each, for the saturation rule of :mod:`retrystorm.experiment.analysis.validity`);
* a :class:`MetricsSource` takes one reading of the target's and the client's
  metrics, within a deadline (a paused target cannot answer: its part is ``None``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Protocol

from retrystorm.chaos.backends.base import FaultBackend
from retrystorm.chaos.targets import FaultTarget
from retrystorm.experiment.scenario import RunSpec, SpikeWindow
from retrystorm.loadgen.readings import ClientReading, TargetReading
from retrystorm.target.models import OverloadModel


class TargetControls(Protocol):
    """What a target lets a run change besides pausing it: the live ``slow`` and ``errors`` triggers."""

    async def set_capacity(self, capacity: float, hold_s: float) -> None:
        """Run at ``capacity`` (0 < capacity <= 1) of its capacity from now on, for ``hold_s`` as planned
        (a dead-man switch may end a cut at that deadline if the runner dies)."""
        ...

    async def set_errors(self, status: int | None, probability: float) -> None:
        """Fail attempts with ``status`` at ``probability`` from now on (``None``: no more errors)."""
        ...

    async def restore(self) -> None:
        """Put back exactly what the target had before the first change."""
        ...


@dataclasses.dataclass(frozen=True, slots=True)
class GrpcEndpoint:
    """Where a gRPC load calls (``HOST:PORT``), and the request bytes it sends when the target encoded them from the
    scenario's JSON (``None``: the run spec's own bytes)."""

    address: str
    request: bytes | None = None


class TargetHandle(Protocol):
    """A running target for one strategy's run."""

    #: Where a gRPC load calls it (``None``: it takes HTTP only).
    grpc: GrpcEndpoint | None

    @property
    def controls(self) -> TargetControls | None:
        """The live slow and errors triggers (``None``: the target takes neither; the provider refuses them first)."""
        ...

    @property
    def cpu_target(self) -> FaultTarget | None:
        """What a ``slow`` cuts through the controller's CPU throttle (:mod:`retrystorm.runner.throttle_controls`);
        ``None``:
        a slow goes through :attr:`controls` (the built-in target's model)."""
        ...

    #: Where the load is sent, e.g. ``http://127.0.0.1:8070``.
    base_url: str

    @property
    def metrics_url(self) -> str | None:
        """The target's Prometheus endpoint; ``None``: a service without server readings (judged from the clients)."""
        ...

    #: Fault target name (as scenarios write ``pause: NAME``) -> the target with the backend that pauses it.
    faults: Mapping[str, FaultTarget]

    def describe(self) -> str:
        """One line for the plan and the report: what runs where."""
        ...

    def check(self) -> None:
        """Raise :class:`~retrystorm.runner.errors.RunFailedError` if the target died."""
        ...

    async def stop(self) -> None:
        """Stop (or release) the target; it must not stay paused."""
        ...


class TargetProvider(Protocol):
    """Starts a fresh target per strategy."""

    def recovery_backends(self) -> list[FaultBackend]:
        """The backends whose journaled pauses a run resumes at its start (made now: may raise ``BackendError``)."""
        ...

    def fault_target_names(self) -> list[str]:
        """Names a scenario may pause, known before anything starts (for validation)."""
        ...

    def describe(self, model: OverloadModel | None) -> str:
        """What :meth:`start` will run, for ``--dry-run``."""
        ...

    def trigger_refusal(self, kind: str) -> str | None:
        """Why a trigger of ``kind`` cannot be played live here, and what would make it possible; ``None``: it can."""
        ...

    async def start(self, label: str, model: OverloadModel | None, seed: int) -> TargetHandle:
        """A fresh target serving ``model`` (``None``: a service of one's own), ready for traffic."""
        ...


class LoadHandle(Protocol):
    """One strategy's load, running."""

    #: The client metrics' Prometheus endpoint.
    metrics_url: str

    @property
    def user_processes(self) -> int | None:
        """How many processes run users (a gRPC load: one channel, hence one retry throttle, each); ``None``:
        not known."""
        ...

    def describe(self) -> str:
        """One line for the report."""
        ...

    def check(self) -> None:
        """Raise :class:`~retrystorm.runner.errors.RunFailedError` if the load generator died."""
        ...

    async def generator_cpu(self) -> Mapping[str, float] | None:
        """Each load-generator process's share of one core since the previous call (1.0: a full core).

        Keyed by a name for the process (``locust (pid 123)``, ``worker 2 (pid 125)``);
        ``None`` when it cannot be read (the first call, or a backend that cannot see it).
        """
        ...

    async def stop(self) -> None:
        """Stop the load."""
        ...


class LoadDriver(Protocol):
    """Starts load against a target."""

    def describe(self, spec: RunSpec) -> str:
        """What :meth:`start` will run, for ``--dry-run``."""
        ...

    def spike_refusal(self) -> str | None:
        """Why a ``spike`` trigger cannot be played live here, and what would; ``None``: it can."""
        ...

    async def start(self, target: TargetHandle, spec: RunSpec, spikes: Sequence[SpikeWindow] = ()) -> LoadHandle:
        """Start the load and return once users are being spawned (time 0 of the timeline); ``spikes``:
        ``users * (factor - 1)`` more users (or open-loop arrival streams) while each lasts."""
        ...


class MetricsSource(Protocol):
    """One reading of the target's and the client's series."""

    async def read(
        self, target: TargetHandle, load: LoadHandle, *, timeout_s: float
    ) -> tuple[TargetReading | None, ClientReading | None]:
        """Read both at once, within ``timeout_s``; a part that does not answer in time is ``None``."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...
