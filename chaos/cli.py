"""``retrystorm chaos``: one-shot outages and throttles, the chaos API, and recovery of what was left behind."""

from __future__ import annotations

import asyncio
import errno
import logging
from pathlib import Path
from typing import Any, Protocol

import click

from retrystorm.addresses import is_loopback_host, listen_sockets, url_host
from retrystorm.chaos.annotations import annotations_from_env
from retrystorm.chaos.backends import FaultBackend, ProcessBackend
from retrystorm.chaos.controller import (
    DEFAULT_MAX_OUTAGE_S,
    MAX_OUTAGE_CEILING_S,
    OutageController,
    OutageListener,
    check_max_outage,
)
from retrystorm.chaos.cpu_quota import check_capacity
from retrystorm.chaos.deadman import WatchdogSwitch
from retrystorm.chaos.journal import Journal, default_journal_path
from retrystorm.chaos.journal_file import JournalError
from retrystorm.chaos.kubernetes.options import kubernetes_options, make_kubernetes_backend
from retrystorm.chaos.network.cli import proxy as network_proxy
from retrystorm.chaos.registration import TargetSpec, parse_named
from retrystorm.chaos.targets import FaultTarget, TargetRegistry
from retrystorm.cli_types import DURATION, otel_endpoint_option
from retrystorm.console import out
from retrystorm.durations import format_duration
from retrystorm.errors import UserError
from retrystorm.otel import start as start_otel

log = logging.getLogger(__name__)

JOURNAL_OPTION = click.option(
    "--journal",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"Pause journal (default {default_journal_path()}, or $RETRYSTORM_CHAOS_JOURNAL).",
)

BACKENDS_OPTION = click.option(
    "--backend",
    "backend_names",
    type=click.Choice(["process", "docker"]),
    multiple=True,
    default=("process",),
    show_default=True,
    help="Fault backends to use (repeatable).",
)
#: The backend a one-shot command (pause, throttle) acts through.
ONE_SHOT_BACKEND_OPTION = click.option(
    "--backend", "backend_name", type=click.Choice(["process", "docker"]), default="process", show_default=True
)
PROJECT_OPTION = click.option("--project", default=None, help="Only this compose project (docker).")
MAX_OUTAGE_OPTION = click.option(
    "--max-outage",
    type=DURATION,
    default=format_duration(DEFAULT_MAX_OUTAGE_S),
    show_default=True,
    help=f"No outage lasts longer than this, whatever was asked; at most {format_duration(MAX_OUTAGE_CEILING_S)}.",
)


def make_backends(names: tuple[str, ...], project: str | None = None) -> dict[str, FaultBackend]:
    """The named backends; ``docker`` connects to the engine now and fails clearly if it cannot.

    Without the Docker SDK, ``docker`` is a user error naming ``pip install 'retrystorm[docker]'``.
    """
    backends: dict[str, FaultBackend] = {}
    for name in names:
        if name == "process":
            backends[name] = ProcessBackend()
        else:
            from retrystorm.chaos.backends.docker_sdk import require_docker_sdk

            require_docker_sdk("--backend docker")
            from retrystorm.chaos.backends.docker import DockerBackend

            backends[name] = DockerBackend(project=project)
    return backends


def make_controller(
    backends: dict[str, FaultBackend],
    journal: Path | None,
    max_outage_s: float = DEFAULT_MAX_OUTAGE_S,
    *,
    tracer: Any = None,
) -> OutageController:
    """A controller over ``backends`` whose every pause arms a watchdog, writing to ``journal``; with ``tracer``
    (an OpenTelemetry tracer), every fault that ends is a span (:mod:`retrystorm.chaos.otel_spans`)."""
    book = Journal(journal)
    listener: OutageListener | None = annotations_from_env()  # GRAFANA_URL set: one Grafana annotation per outage
    if tracer is not None:
        from retrystorm.chaos.otel_spans import FaultSpans

        listener = FaultSpans(tracer, listener)
    return OutageController(
        book,
        dead_man=WatchdogSwitch(book.path),
        recovery_backends=list(backends.values()),
        max_outage_s=check_max_outage(max_outage_s),
        listener=listener,
    )


@click.group()
def chaos() -> None:
    """Pause targets the way SIGSTOP / docker pause does, or cut their CPU; always resume and restore them."""


@chaos.command()
@BACKENDS_OPTION
@PROJECT_OPTION
@JOURNAL_OPTION
def recover(*, backend_names: tuple[str, ...], project: str | None, journal: Path | None) -> None:
    """Resume every target a killed controller left paused, restore every one it left throttled (journal)."""

    async def run() -> list[str]:
        controller = make_controller(make_backends(backend_names, project), journal)
        throttled = {pending.ref for pending in controller.journal.pending_throttles()}
        return [
            f"{'restored the CPU of' if ref in throttled else 'resumed'} {ref.describe()}"
            for ref in await controller.recover()
        ]

    done = asyncio.run(run())
    out.print("\n".join(done) if done else "nothing was left paused or throttled")


def _one_shot_target(target: str, backends: dict[str, FaultBackend], backend_name: str) -> FaultTarget:
    """``KIND:VALUE`` (:mod:`retrystorm.chaos.registration`, registered now with its refusals) for the process
    backend, or a docker backend's target name."""
    if backend_name == "process":
        spec = TargetSpec.parse(target)
        spec.register(target, backends)  # the registration's refusals apply to a target typed here too
        return FaultTarget(target, backends[spec.backend_name])
    return TargetRegistry([backends[backend_name]]).find(target)


def _journal_failed(controller: OutageController) -> None:
    """Exit 3 in one line when a record could not be written after the fault was reverted (a full disk)."""
    if controller.journal.write_failure is not None:
        raise JournalError(f"{controller.journal.write_failure}; the fault itself was reverted")


class _Fault(Protocol):
    @property
    def status(self) -> str: ...


async def _until_ended(fault: _Fault, signalled: asyncio.Event) -> None:
    """Wait until a one-shot command's ``fault`` (an outage or a throttle) is no longer active, or a signal came."""
    waiter = asyncio.create_task(signalled.wait())
    while fault.status == "active" and not signalled.is_set():
        await asyncio.wait([waiter], timeout=0.1)
    waiter.cancel()


@chaos.command()
@click.argument("target")
@click.option("--for", "duration", type=DURATION, required=True, help="Outage length, e.g. 30s.")
@ONE_SHOT_BACKEND_OPTION
@PROJECT_OPTION
@MAX_OUTAGE_OPTION
@JOURNAL_OPTION
def pause(
    *, target: str, duration: float, backend_name: str, project: str | None, max_outage: float, journal: Path | None
) -> None:
    """Pause TARGET for a while, then resume it; Ctrl-C or SIGTERM resume it at once.

    TARGET is pid:NUMBER (not pid 1, this command or its ancestors, a watchdog, nor another
    user's process), tree:NUMBER (it and every descendant), cgroup:PATH (a whole cgroup, frozen
    at once by the cgroup freezer), unit:UNIT (a systemd unit's cgroup), or with --backend docker
    a compose service name.
    """
    backends = make_backends((backend_name,), project)
    fault_target = _one_shot_target(target, backends, backend_name)

    async def run() -> None:
        async with make_controller(backends, journal, max_outage) as controller:
            done = asyncio.Event()
            controller.install_signal_handlers(done.set)
            outage = await controller.pause(fault_target, duration)
            out.print(f"paused {target} for {format_duration(outage.duration_s)} (outage {outage.id})")
            await _until_ended(outage, done)
            out.print(f"resumed {target} ({outage.end_reason})")
        _journal_failed(controller)

    asyncio.run(run())


@chaos.command()
@click.argument("target")
@click.option(
    "--capacity",
    type=float,
    required=True,
    help="The fraction of its CPU allowance the target keeps, in (0, 1]: of its existing CPU limit, else of "
    "every CPU it may run on. 0.4 = 40 %.",
)
@click.option("--for", "duration", type=DURATION, required=True, help="How long, e.g. 10s.")
@ONE_SHOT_BACKEND_OPTION
@PROJECT_OPTION
@MAX_OUTAGE_OPTION
@JOURNAL_OPTION
def throttle(
    *,
    target: str,
    capacity: float,
    duration: float,
    backend_name: str,
    project: str | None,
    max_outage: float,
    journal: Path | None,
) -> None:
    """Cut TARGET's CPU to a fraction of what it had for a while, then restore it exactly; Ctrl-C restores at once.

    TARGET is pid:NUMBER or tree:NUMBER (moved into a throttle cgroup with a cgroup v1 cpu or v2 cpu.max
    quota: root, or a delegated cgroup), cgroup:PATH or unit:UNIT (the cgroup's own quota lowered in place),
    or with --backend docker a labelled compose service name (docker update --cpus). A dead-man
    watchdog restores it at the deadline even if this command is killed; `retrystorm chaos recover`
    restores what the journal shows left throttled.
    """
    check_capacity(capacity)
    backends = make_backends((backend_name,), project)
    fault_target = _one_shot_target(target, backends, backend_name)

    async def run() -> None:
        async with make_controller(backends, journal, max_outage) as controller:
            done = asyncio.Event()
            controller.install_signal_handlers(done.set)
            cut = await controller.throttle(fault_target, capacity, duration)
            cpus = ", ".join(f"{c.cpus_before:g} -> {c.cpus_during:g} CPU" for c in cut.cuts)
            out.print(f"throttled {target} to {capacity:g} for {format_duration(cut.duration_s)} ({cpus}; {cut.id})")
            await _until_ended(cut, done)
            out.print(f"restored {target} ({cut.end_reason})")
        _journal_failed(controller)

    asyncio.run(run())


def _check_bind(host: str, token: str) -> None:
    if not is_loopback_host(host) and not token:
        raise click.BadParameter(
            f"binding to {host} exposes the API beyond this machine: set --token or RETRYSTORM_CHAOS_TOKEN",
            param_hint="--host",
        )


@chaos.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8071, show_default=True)
@click.option(
    "--backend",
    "backend_names",
    type=click.Choice(["process", "docker", "kubernetes"]),
    multiple=True,
    default=("process",),
    show_default=True,
    help="Fault backends to use (repeatable); kubernetes: the pods on --node that match --pod-selector.",
)
@click.option(
    "--target",
    "process_targets",
    multiple=True,
    metavar="NAME=PID",
    help="A target open to chaos under NAME (repeatable): NAME=PID (a process), NAME=tree:PID (it and every "
    "descendant), NAME=cgroup:PATH (a whole cgroup, frozen by the cgroup freezer), NAME=unit:UNIT (a systemd "
    "unit's cgroup). Nothing else can be paused.",
)
@click.option(
    "--project",
    envvar="COMPOSE_PROJECT_NAME",
    default=None,
    help="Only containers of this compose project (docker) [env COMPOSE_PROJECT_NAME].",
)
@click.option(
    "--token",
    envvar="RETRYSTORM_CHAOS_TOKEN",
    default="",
    help="Bearer token; required when bound to a non-loopback address [env RETRYSTORM_CHAOS_TOKEN].",
)
@click.option(
    "--proxy", "proxies", multiple=True, metavar="NAME=LISTEN,UPSTREAM",
    help="A fault proxy open to network faults under NAME (repeatable): clients connect to LISTEN (HOST:PORT), it "
    "forwards to the service at UPSTREAM (HOST:PORT) and plays POST /network's delay, loss, hang and reset.",
)  # fmt: skip
@click.option(
    "--peer", "peers", multiple=True, metavar="NAME=ADDRESS",
    help="A host a partition may cut this one off from (a blackhole route to ADDRESS; repeatable; needs root).",
)  # fmt: skip
@click.option(
    "--interface", "interfaces", multiple=True, metavar="IFACE",
    help="An interface a partition by link may set down (repeatable; needs root).",
)  # fmt: skip
@kubernetes_options
@MAX_OUTAGE_OPTION
@JOURNAL_OPTION
@otel_endpoint_option("every pause and CPU cut as a span with its real start and end")
def serve(
    *,
    host: str,
    port: int,
    backend_names: tuple[str, ...],
    process_targets: tuple[str, ...],
    project: str | None,
    token: str,
    proxies: tuple[str, ...],
    peers: tuple[str, ...],
    interfaces: tuple[str, ...],
    pod_selector: str | None,
    node: str | None,
    cgroup_driver: str,
    cgroup_root: str,
    kube_api: str | None,
    max_outage: float,
    journal: Path | None,
    otel_endpoint: str | None,
) -> None:
    """Serve the chaos HTTP API: POST /outages, /throttles, /network (delay, loss, hang, reset on a registered
    proxy; partition from registered peers), their GET and DELETE, /targets, /metrics."""
    from aiohttp import web
    from prometheus_client import CollectorRegistry

    from retrystorm.chaos.api import create_app
    from retrystorm.chaos.metrics import register_chaos_metrics
    from retrystorm.chaos.network.agent import NetworkFaults, ProxySpec
    from retrystorm.chaos.network.routes import Peers

    _check_bind(host, token)
    bind_host = host[1:-1] if host.startswith("[") and host.endswith("]") else host  # [::1] as a URL writes it
    proxy_specs = [ProxySpec.parse(value) for value in proxies]
    registered_peers = Peers.parse(peers, interfaces)
    check_max_outage(max_outage)
    targets = dict(parse_named(value) for value in process_targets)
    if targets and "process" not in backend_names:
        raise click.BadParameter("--target needs --backend process", param_hint="--target")
    backends = make_backends(tuple(name for name in backend_names if name != "kubernetes"), project)
    if "kubernetes" in backend_names:
        backends["kubernetes"] = make_kubernetes_backend(pod_selector, node, cgroup_driver, cgroup_root, kube_api)
    elif pod_selector is not None:
        raise click.BadParameter("--pod-selector needs --backend kubernetes", param_hint="--pod-selector")
    for name, spec in targets.items():
        spec.register(name, backends)
    otel = start_otel(otel_endpoint, "retrystorm-chaos")
    tracer = otel.tracers.get_tracer("retrystorm.chaos") if otel is not None else None
    controller = make_controller(backends, journal, max_outage, tracer=tracer)
    registry = CollectorRegistry()
    allowed = TargetRegistry(list(backends.values()))
    register_chaos_metrics(registry, controller, [name for _, name in allowed.listing()])
    try:
        sockets = listen_sockets(bind_host, port)  # bound before the announcement: it names the port served
    except OSError as error:  # a busy port, an address this machine does not have, a name that does not resolve
        if otel is not None:
            otel.shutdown()
        why = "it is in use" if error.errno == errno.EADDRINUSE else (error.strerror or str(error))
        raise UserError(f"cannot listen on {host} port {port}: {why}; choose another --host or --port") from None
    folder = controller.journal.path.with_name(f"{controller.journal.path.stem}.proxies")
    network = NetworkFaults.start(controller, proxy_specs, registered_peers, folder)
    app = create_app(controller, allowed, registry=registry, token=token, network=network)
    bound = sockets[0].getsockname()[1]
    listening = "".join(f", proxy {name} on {p.host}:{p.port}" for name, p in network.proxies.items())
    out.print(f"chaos API on http://{url_host(bind_host)}:{bound} (backends: {', '.join(backends)}{listening})")
    try:
        web.run_app(app, sock=sockets, print=None, access_log=None)
    finally:  # every fault was reverted by the app's shutdown: the proxies stop, its spans go out now
        try:
            network.stop()
        finally:
            if otel is not None:
                otel.shutdown()


chaos.add_command(network_proxy)
