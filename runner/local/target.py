"""A fresh ``retrystorm target`` process per strategy, paused with SIGSTOP / SIGCONT.

:class:`LocalTargets` starts ``retrystorm target`` on a free loopback port (the target
picks it: ``--port 0``) and registers its pid as fault target ``target`` in a
:class:`~retrystorm.chaos.backends.ProcessBackend`, so outages are ``SIGSTOP`` / ``SIGCONT`` of
that very process (pid and start time). Bound to 127.0.0.1 only; stopped by its pid.
The slow and errors triggers go through its admin API (:mod:`retrystorm.runner.target_controls`).
With a scenario's ``grpc:`` section it also serves the model over gRPC (``--grpc-port 0``): the load calls
that port, with the scenario's JSON request encoded once with the target's own descriptor.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from retrystorm.chaos.backends import FaultBackend, ProcessBackend
from retrystorm.chaos.targets import FaultTarget
from retrystorm.experiment.scenario.grpc import GrpcSection
from retrystorm.runner import grpc_call
from retrystorm.runner.interfaces import GrpcEndpoint
from retrystorm.runner.live_triggers import builtin_refusal
from retrystorm.runner.local.processes import ManagedProcess
from retrystorm.runner.paths import slug
from retrystorm.runner.target_controls import AdminControls
from retrystorm.runner.webapi import WebApi
from retrystorm.target.models import OverloadModel

FAULT_TARGET = "target"
TARGET_START_S = 30.0
#: The target's first line: its HTTP address, and its gRPC one when it serves gRPC.
LISTENING = r"listening on (http://127\.0\.0\.1:\d+)(?: and gRPC on (127\.0\.0\.1:\d+))?"


class LocalTarget:
    """A ``retrystorm target`` child process."""

    def __init__(
        self, process: ManagedProcess, base_url: str, backend: ProcessBackend, grpc: GrpcEndpoint | None = None
    ) -> None:
        self.process = process
        self.base_url = base_url
        self.grpc = grpc
        self.metrics_url = base_url + "/metrics"
        self.api = WebApi(base_url, "the target")
        self.controls = AdminControls(self.api)
        self.cpu_target: FaultTarget | None = None  # a slow scales the model (the admin API)
        self.faults: Mapping[str, FaultTarget] = {FAULT_TARGET: FaultTarget(FAULT_TARGET, backend)}

    def describe(self) -> str:
        grpc = f" and gRPC on {self.grpc.address}" if self.grpc is not None else ""
        return f"retrystorm target on {self.base_url}{grpc} (pid {self.process.pid})"

    def check(self) -> None:
        if not self.process.running:
            raise self.process.failure("died during the run")

    async def stop(self) -> None:
        try:
            await self.api.close()
        finally:
            await self.process.stop()


class LocalTargets:
    """Fresh ``retrystorm target`` processes, paused by the process backend."""

    def __init__(self, log_dir: Path, grpc: GrpcSection | None = None) -> None:
        self.log_dir = log_dir
        self.process_backend = ProcessBackend()
        self.grpc = grpc
        #: The scenario's JSON request, encoded with the target's own descriptor (a problem: exit 2, at once).
        self.grpc_request: bytes | None = None
        if grpc is not None:
            grpc_call.require_grpc()
            if grpc.request is not None:
                self.grpc_request = grpc_call.request_bytes(grpc_call.builtin_protos(), grpc.method, grpc.request)

    def recovery_backends(self) -> list[FaultBackend]:
        return [self.process_backend]

    def fault_target_names(self) -> list[str]:
        return [FAULT_TARGET]

    def trigger_refusal(self, kind: str) -> str | None:
        return builtin_refusal(kind)

    def describe(self, model: OverloadModel | None) -> str:
        model = _required(model)
        grpc = " --grpc-port 0 (the load calls its gRPC front)" if self.grpc is not None else ""
        return f"retrystorm target --model {model.spec()}{grpc}, a fresh process on 127.0.0.1 (SIGSTOP/SIGCONT)"

    async def start(self, label: str, model: OverloadModel | None, seed: int) -> LocalTarget:
        model = _required(model)
        argv = [
            sys.executable, "-m", "retrystorm", "-v", "target", "--model", model.spec(),
            "--host", "127.0.0.1", "--port", "0", "--report-interval", "0", "--seed", str(seed),
        ]  # fmt: skip
        if self.grpc is not None:
            argv += ["--grpc-port", "0"]
        process = ManagedProcess(f"target of {label}", argv, self.log_dir / f"{slug(label)}-target.log")
        try:
            found = await process.wait_for_log(LISTENING, TARGET_START_S)
        except BaseException:
            await process.stop()
            raise
        self.process_backend.register(FAULT_TARGET, process.pid)
        grpc = GrpcEndpoint(found.group(2), self.grpc_request) if found.group(2) else None
        return LocalTarget(process, found.group(1), self.process_backend, grpc)


def _required(model: OverloadModel | None) -> OverloadModel:
    """The model to serve; a scenario without one has its own service (:mod:`retrystorm.runner.local.service`)."""
    if model is None:
        raise ValueError("the built-in target needs the scenario's model: (a scenario with target: runs its own)")
    return model
