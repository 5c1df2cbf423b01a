"""A service of one's own as the local backend's target (a scenario's ``target:``).

For each strategy, :class:`OwnServiceTargets` starts ``target.command`` fresh when there
is one (no shell: the command line split as a shell would; cwd the scenario's folder; a
session, hence a process group, of its own; output in ``logs/``), waits until the
service is ready (:mod:`retrystorm.runner.readiness`), and stops the whole group afterwards. The
command finds the tools installed beside retrystorm (this interpreter's folder is put
first on its PATH), so ``gunicorn`` in the same virtual environment needs no activation. A
command that exits, or a URL that does not answer within 60 s, fails the run before any
load starts (exit 3), with the command's last lines; a service the runner does not start
must answer within 5 s.

What a pause freezes (:meth:`retrystorm.experiment.scenario.service.ServiceTarget.pause_kind`):

* ``command``: everything the command starts. The runner starts it in cgroups of its own
  (:class:`retrystorm.chaos.containment.Containment`), registered as a cgroup target
  (:class:`retrystorm.chaos.backends.cgroup.CgroupBackend`): a pause freezes every process at once,
  whatever session or user it moved to, and the command's end (or the runner's death: a watchdog order
  owned by the runner, :func:`retrystorm.chaos.deadman.guard_service`) ends every one of them. Where no cgroup can
  be made (not root, no cgroup hierarchy that can freeze), its process group, as a group target of the process
  backend, and the plan says so;
* ``pid`` / ``tree``: that process (and every descendant), registered when the provider is made (the process
  backend's refusals, exit 2, also on ``--dry-run``);
* ``cgroup`` / ``unit``: that cgroup whole, registered when the provider is made;
* ``container`` / ``service``: through the docker backend (label ``retrystorm.chaos=allow``),
  made when the run starts, never for a dry run.

A ``slow`` cuts what a pause freezes through the chaos controller's CPU throttle
(:mod:`retrystorm.runner.throttle_controls`): the group or the pid through a throttle cgroup, a
container through ``docker update``; :func:`retrystorm.runner.local.throttle.slow_refusal` says when
it cannot.

A gRPC service (``url: grpc://HOST:PORT`` with the scenario's ``grpc:`` section) is ready when its port accepts a
connection; the load then calls it (:class:`~retrystorm.runner.interfaces.GrpcEndpoint`). A JSON request is encoded
once (:mod:`retrystorm.runner.grpc_call`): with ``grpc.descriptor_set`` (read from the scenario's folder) before
anything starts, else with the proto from the service's server reflection, asked once it is ready. Any problem with
them is one line and exit 2, the service stopped first.

Nothing is reset between strategies but what the runner starts: a service it does not
start keeps its state from one strategy to the next, and the plan says so.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from pathlib import Path

from retrystorm.chaos.backends import FaultBackend, ProcessBackend
from retrystorm.chaos.backends.cgroup import CgroupBackend
from retrystorm.chaos.cgroupfs import CgroupPathError
from retrystorm.chaos.containment import Containment
from retrystorm.chaos.deadman import guard_service
from retrystorm.chaos.targets import FaultTarget
from retrystorm.chaos.watchdog import Watchdog
from retrystorm.experiment.scenario.grpc import GrpcSection
from retrystorm.experiment.scenario.service import ServiceTarget
from retrystorm.runner import grpc_call, server_metrics
from retrystorm.runner.interfaces import GrpcEndpoint
from retrystorm.runner.lazy import LazyBackend, docker_backend
from retrystorm.runner.live_triggers import foreign_refusal
from retrystorm.runner.local.processes import ManagedProcess
from retrystorm.runner.local.throttle import slow_refusal
from retrystorm.runner.paths import slug
from retrystorm.runner.readiness import READY_TIMEOUT_S, wait_ready
from retrystorm.target.models import OverloadModel

log = logging.getLogger(__name__)

FAULT_TARGET = "target"
#: A service the runner does not start must be answering already: it gets this long.
RUNNING_READY_TIMEOUT_S = 5.0


class OwnService:
    """The service during one strategy's run (a :class:`~retrystorm.runner.interfaces.TargetHandle`)."""

    def __init__(
        self,
        spec: ServiceTarget,
        backend: FaultBackend | None,
        process: ManagedProcess | None,
        grpc: GrpcEndpoint | None = None,
        reaper: Watchdog | None = None,
    ) -> None:
        self.spec = spec
        #: The watchdog order that ends the service if the runner dies (a contained command).
        self.reaper = reaper
        self.base_url = spec.url
        found = server_metrics.endpoint(spec.metrics)
        self.metrics_url = found[0] if found is not None else None
        self.process = process
        self.grpc = grpc
        #: No admin API: errors are refused before the run.
        self.controls = None
        self.faults: Mapping[str, FaultTarget] = (
            {FAULT_TARGET: FaultTarget(FAULT_TARGET, backend)} if backend is not None else {}
        )
        #: A slow cuts what a pause freezes, through the controller's CPU throttle
        #: (retrystorm.runner.throttle_controls).
        self.cpu_target = self.faults.get(FAULT_TARGET)

    def describe(self) -> str:
        started = f", started as pid {self.process.pid}" if self.process is not None else ""
        return f"your service at {self.base_url}{started}; a pause freezes {self.spec.pause_describe()}"

    def check(self) -> None:
        if self.process is not None and not self.process.running:
            raise self.process.failure("exited during the run")

    async def stop(self) -> None:
        if self.process is not None:
            await self.process.stop_group()
        if self.reaper is not None:
            await asyncio.to_thread(self.reaper.disarm)


class OwnServiceTargets:
    """A service of one's own per strategy (a :class:`~retrystorm.runner.interfaces.TargetProvider`)."""

    def __init__(
        self,
        spec: ServiceTarget,
        log_dir: Path,
        folder: Path,
        grpc: GrpcSection | None = None,
        *,
        journal: Path | None = None,
    ) -> None:
        self.spec = spec
        self.log_dir = log_dir
        self.folder = folder
        self.grpc = grpc
        self.journal = journal
        #: The request bytes every gRPC call sends, once known (``None``: the run spec's own).
        self.grpc_request: bytes | None = None
        if grpc is not None:
            self.grpc_request = _descriptor_request(grpc, folder)  # exit 2 now, on --dry-run too
        self.process_backend = ProcessBackend()
        self.cgroup_backend = CgroupBackend()
        self.docker: LazyBackend | None = None
        #: Whether the command runs in cgroups of its own (``None``: not decided until the first start).
        self.contained: bool | None = None
        kind = spec.pause_kind
        if kind == "pid" and spec.pid is not None:
            self.process_backend.register(FAULT_TARGET, spec.pid)  # refused now: exit 2, on --dry-run too
        elif kind == "tree" and spec.tree is not None:
            self.process_backend.register_tree(FAULT_TARGET, spec.tree)
        elif kind == "cgroup" and spec.cgroup is not None:
            self.cgroup_backend.register(FAULT_TARGET, spec.cgroup)
        elif kind == "unit" and spec.unit is not None:
            self.cgroup_backend.register_unit(FAULT_TARGET, spec.unit)
        elif kind in ("container", "service"):
            containers = {FAULT_TARGET: spec.container} if spec.container is not None else None
            services = {FAULT_TARGET: spec.service} if spec.service is not None else None
            self.docker = docker_backend(None, containers, services, needed_by=f"target: {kind}: (the docker backend)")

    def _backend(self) -> FaultBackend | None:
        kind = self.spec.pause_kind
        if kind is None:
            return None
        if self.docker is not None:
            return self.docker.backend()
        if kind in ("cgroup", "unit") or (kind == "command" and self.contained):
            return self.cgroup_backend
        return self.process_backend

    def recovery_backends(self) -> list[FaultBackend]:
        backend = self._backend() if self.docker is not None else None
        mine: list[FaultBackend] = [self.process_backend, self.cgroup_backend]
        return mine if backend is None else [*mine, backend]

    def fault_target_names(self) -> list[str]:
        return [FAULT_TARGET] if self.spec.pause_kind is not None else []

    def trigger_refusal(self, kind: str) -> str | None:
        return slow_refusal(self.spec) if kind == "slow" else foreign_refusal(kind)

    def describe(self, model: OverloadModel | None) -> str:
        how = (
            f"started fresh per strategy: {self.spec.command} (cwd {self.folder})"
            if self.spec.command
            else ("not started by the runner: it keeps its state from one strategy to the next")
        )
        ready = f"GET {self.spec.ready} answering 2xx" if self.spec.ready else "the URL answering"
        if self.spec.grpc_address is not None:
            ready = "its port accepting a connection"
        return (
            f"your service at {self.spec.url}, {how}; ready: {ready}; a pause freezes {self.spec.pause_describe()}; "
            f"{server_metrics.describe(self.spec.metrics)}"
        )  # fmt: skip

    async def start(self, label: str, model: OverloadModel | None, seed: int) -> OwnService:
        """Start the command (if any, in cgroups of its own), wait until it is ready, register what a pause freezes."""
        process = reaper = None
        containment = self._contain(label) if self.spec.command and self.spec.pause_kind == "command" else None
        backend = self._backend()
        if self.spec.command:
            log_path = self.log_dir / f"{slug(label)}-service.log"
            try:
                process = ManagedProcess(
                    f"the command of target: ({label})", self.spec.argv(), log_path, cwd=self.folder,
                    tools_on_path=True, containment=containment,
                )  # fmt: skip
            except BaseException:
                if containment is not None:
                    await asyncio.to_thread(containment.end)
                raise
        try:
            if containment is not None:
                reaper = await asyncio.to_thread(guard_service, containment, self.journal, label)
                self.cgroup_backend.register(FAULT_TARGET, containment.relative)
            if backend is not None and self.docker is not None:
                backend.resolve(FAULT_TARGET)  # the container exists and opted in: else one line, before any load
            alive = (lambda: _alive(process)) if process is not None else (lambda: None)
            timeout_s = READY_TIMEOUT_S if process is not None else RUNNING_READY_TIMEOUT_S
            await wait_ready(
                self.spec.url, self.spec.ready, alive=alive, timeout_s=timeout_s, what="the service of target:"
            )
            if process is not None and containment is None and self.spec.pause_kind == "command":
                self.process_backend.register_group(FAULT_TARGET, process.pid)
            grpc = await self._grpc_endpoint()
        except BaseException:
            if process is not None:
                await process.stop_group()
            if reaper is not None:
                await asyncio.to_thread(reaper.disarm)
            raise
        return OwnService(self.spec, backend, process, grpc, reaper)

    def _contain(self, label: str) -> Containment | None:
        """New cgroups for the command of ``label``; ``None`` (its process group, said once) where none can be made."""
        try:
            containment = Containment.create()
        except (OSError, CgroupPathError) as error:
            if self.contained is None:
                log.warning("the command of target: runs in its own process group, not in a cgroup (%s)", error)
            self.contained = False
            return None
        self.contained = True
        return containment

    async def _grpc_endpoint(self) -> GrpcEndpoint | None:
        """Where the gRPC load calls, with the request encoded from the proto of server reflection once."""
        address = self.spec.grpc_address
        if address is None or self.grpc is None:
            return None
        section = self.grpc
        if self.grpc_request is None and section.request is not None:
            protos = await asyncio.to_thread(grpc_call.from_reflection, address, _service_of(section.method))
            self.grpc_request = grpc_call.request_bytes(protos, section.method, section.request)
        return GrpcEndpoint(address, self.grpc_request)


def _service_of(method: str) -> str:
    """``package.Service`` of ``/package.Service/Method``."""
    return method.strip("/").partition("/")[0]


def _descriptor_request(section: GrpcSection, folder: Path) -> bytes | None:
    """The JSON request encoded with ``grpc.descriptor_set`` (the method checked too); ``None``: not yet known."""
    grpc_call.require_grpc()
    if section.descriptor_set is None:
        return None
    protos = grpc_call.from_descriptor_set(folder / section.descriptor_set)
    message_type = grpc_call.input_type(protos, section.method)
    return grpc_call.encode(message_type, section.request) if section.request is not None else None


def _alive(process: ManagedProcess) -> None:
    if not process.running:
        raise process.failure("exited before the service was ready")
