"""A fault proxy in front of each strategy's target, for the live ``delay``, ``loss``, ``hang`` and ``reset``.

When a scenario has such a window, :class:`FaultProxies` starts ``retrystorm chaos proxy``
(:mod:`retrystorm.chaos.network.process`) on a free loopback port in front of the target's address, and the load
is sent through it (:class:`ProxiedTarget`); the runner's own reads (``/healthz``, ``/metrics``, the admin API) go
to the target directly, so the readings are the target's, never delayed. The proxy is a process of its own, in a
session of its own, with a bounded life (the run's length and :data:`LIFE_MARGIN_S`): a runner that is killed
leaves it forwarding, each toxic ending at its own deadline, and the proxy exiting by itself after that. Its
control socket is a Unix socket in a private folder (mode 0700) made for the strategy and removed with the proxy.

Any TCP service works (HTTP, gRPC, a database): the proxy copies bytes. An HTTP client then names the proxy's
address in its ``Host`` header; a service that routes by host name needs its own name for 127.0.0.1.
``partition`` is not played here: it cuts a host off from its peers, and a local run is one host.
"""

from __future__ import annotations

import shutil
import tempfile
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.network.control import RUN_FOLDER_PREFIX
from retrystorm.chaos.network.process import ProxyProcess, start_proxy
from retrystorm.chaos.targets import FaultTarget
from retrystorm.experiment.scenario.network import NETWORK_KINDS, PROXY_KINDS
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.interfaces import GrpcEndpoint, TargetControls, TargetHandle
from retrystorm.runner.network_triggers import Partitions, Toxics
from retrystorm.runner.paths import slug
from retrystorm.runner.runtime import Runtime

#: The name a scenario's network windows give what the load is sent to.
NETWORK_TARGET = "target"
#: A proxy outlives the load it carries by this much, then exits by itself.
LIFE_MARGIN_S = 120.0
PARTITION_REFUSED = (
    "a partition cuts a host off from its peers, and this backend runs everything on one host's loopback; "
    "it is played by routes on hosts (docs/guides/network-faults.md); retrystorm sim run SCENARIO simulates it"
)
GRPC_REFUSED = (
    "the fault proxy is put in front of the target's HTTP address, and a gRPC load calls its gRPC address; "
    "retrystorm sim run SCENARIO simulates it"
)
DEFAULT_PORTS = {"http": 80, "https": 443}


def upstream_of(base_url: str) -> tuple[str, int]:
    """``(host, port)`` the proxy forwards to, from the target's URL (the scheme's port when it names none)."""
    parts = urllib.parse.urlsplit(base_url)
    port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    if parts.hostname is None or port is None:
        raise RunFailedError(f"cannot put a fault proxy in front of {base_url!r}: it names no host and port")
    return parts.hostname, port


def through(base_url: str, proxy: tuple[str, int]) -> str:
    """``base_url`` with the proxy's address in place of the target's."""
    parts = urllib.parse.urlsplit(base_url)
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{proxy[0]}:{proxy[1]}"))


class LoadElsewhere:
    """A target whose load is sent to ``base_url`` (a fault proxy in front of it); everything else is the target's
    own (a :class:`~retrystorm.runner.interfaces.TargetHandle`)."""

    def __init__(self, target: TargetHandle, base_url: str) -> None:
        self.target = target
        self.base_url = base_url
        self.faults: Mapping[str, FaultTarget] = target.faults
        #: None: a gRPC load calls an address the proxy is not in front of, so network faults are refused for it.
        self.grpc: GrpcEndpoint | None = None

    @property
    def controls(self) -> TargetControls | None:
        return self.target.controls

    @property
    def cpu_target(self) -> FaultTarget | None:
        return self.target.cpu_target

    @property
    def metrics_url(self) -> str | None:
        return self.target.metrics_url

    def check(self) -> None:
        self.target.check()

    async def stop(self) -> None:
        await self.target.stop()


class ProxiedTarget(LoadElsewhere):
    """A target whose load goes through a fault proxy this run started; :meth:`stop` stops the proxy, then the
    target."""

    def __init__(self, target: TargetHandle, proxy: ProxyProcess, folder: Path) -> None:
        super().__init__(target, through(target.base_url, (proxy.host, proxy.port)))
        self.proxy = proxy
        self.folder = folder
        self.toxics = proxy.control_client()

    def describe(self) -> str:
        return f"{self.target.describe()}; load through the fault proxy on {self.base_url} (pid {self.proxy.pid})"

    def stop_proxy(self) -> None:
        """Stop the proxy (its toxics end with it) and remove its control socket's folder."""
        try:
            self.proxy.stop()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    async def stop(self) -> None:
        try:
            self.stop_proxy()
        finally:
            await self.target.stop()


class FaultProxies:
    """Starts a fault proxy per strategy in front of its target, when the run has network windows."""

    def __init__(self, log_dir: Path, *, grpc: bool = False) -> None:
        self.log_dir = log_dir
        #: The load calls gRPC, at an address of its own that the proxy is not in front of: refused.
        self.grpc = grpc

    def refusal(self, kind: str) -> str | None:
        """Why a network window of ``kind`` cannot be played here (``None``: it can)."""
        if kind in NETWORK_KINDS - PROXY_KINDS:
            return PARTITION_REFUSED
        return GRPC_REFUSED if self.grpc and kind in PROXY_KINDS else None

    def target_names(self) -> list[str]:
        """What a scenario's network windows may name."""
        return [NETWORK_TARGET]

    async def wrap(
        self, target: TargetHandle, label: str, *, life_s: float, seed: int, runtime: Runtime
    ) -> ProxiedTarget:
        """A proxy in front of ``target``, listening; :class:`RunFailedError` if it does not start."""
        upstream = upstream_of(target.base_url)
        folder = Path(tempfile.mkdtemp(prefix=RUN_FOLDER_PREFIX))  # mode 0700; short: a socket path's limit
        try:
            proxy = await runtime.run_blocking(
                lambda: start_proxy(
                    ("127.0.0.1", 0), upstream, folder / "control.sock",
                    log_path=self.log_dir / f"{slug(label)}-proxy.log",
                    exit_after_s=life_s + LIFE_MARGIN_S, seed=seed,
                )
            )  # fmt: skip
        except BackendError as error:
            shutil.rmtree(folder, ignore_errors=True)
            raise RunFailedError(str(error)) from error
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return ProxiedTarget(target, proxy, folder)


class NetworkFaultsProvider(Protocol):
    """What plays a stack's network windows: :class:`FaultProxies` here, the chaos agents' proxies and partitions
    across hosts (:mod:`retrystorm.runner.hosts.network`)."""

    def refusal(self, kind: str) -> str | None:
        """Why a network window of ``kind`` cannot be played (``None``: it can)."""
        ...

    def target_names(self) -> list[str]:
        """What a scenario's proxied network windows may name."""
        ...

    async def wrap(
        self, target: TargetHandle, label: str, *, life_s: float, seed: int, runtime: Runtime
    ) -> TargetHandle:
        """``target`` with its load sent where the network windows are played (a ``toxics`` and, where partitions
        are played, a ``partitions`` attribute)."""
        ...


def control_of(target: TargetHandle) -> Toxics | None:
    """Where the toxics of the proxy in front of ``target`` are set, if a proxy is."""
    toxics: Toxics | None = getattr(target, "toxics", None)
    return toxics


def partitions_of(target: TargetHandle) -> Partitions | None:
    """Where ``target``'s partitions are played, if anywhere (across hosts: the chaos agent of the host cut off)."""
    partitions: Partitions | None = getattr(target, "partitions", None)
    return partitions
