"""The local backend: fresh processes on 127.0.0.1 per strategy (no Docker).

A ``retrystorm target`` process (:mod:`retrystorm.runner.local.target`), a headless Locust process
(:mod:`retrystorm.runner.local.locust`), and readings scraped from both ``/metrics`` endpoints
(:mod:`retrystorm.runner.scrape`); for a run with ``delay``, ``loss``, ``hang`` or ``reset`` windows, a fault proxy
in front of the target that the load goes through (:mod:`retrystorm.runner.fault_proxy`). It never imports the
compose backend, nor the Docker SDK.
"""

from __future__ import annotations

from pathlib import Path

from retrystorm.experiment.scenario.grpc import GrpcSection
from retrystorm.experiment.scenario.service import ServiceTarget
from retrystorm.runner import server_metrics
from retrystorm.runner.fault_proxy import FaultProxies
from retrystorm.runner.local.locust import LocustDriver
from retrystorm.runner.local.service import OwnServiceTargets
from retrystorm.runner.local.target import LocalTargets
from retrystorm.runner.orchestrate import Stack
from retrystorm.runner.scrape import HttpMetricsSource

#: The stack ``retrystorm run`` uses by default: no Docker.
LOCAL_STACK = "local processes (retrystorm target + headless Locust, SIGSTOP/SIGCONT)"
OWN_SERVICE_STACK = "local processes (your service + headless Locust)"


def local_stack(
    log_dir: Path,
    service: ServiceTarget | None = None,
    folder: Path | None = None,
    workers: int | None = None,
    grpc: GrpcSection | None = None,
    *,
    journal: Path | None = None,
) -> Stack:
    """Local processes: a fresh ``retrystorm target`` (or ``service``, a scenario's own) and headless Locust.

    ``folder`` is where a service's command runs (the scenario's folder; default: the current one).
    ``workers``: Locust processes per strategy (1: one process; more: a master and that
    many workers); ``None`` chooses from the cores and the load
    (:func:`~retrystorm.runner.local.locust.default_workers`). ``grpc``: the scenario's ``grpc:`` section (the
    built-in target then serves gRPC too, and the load calls it). ``journal``: the run's chaos journal,
    beside which the watchdog that ends a service's command with a killed runner lives.
    """
    driver = LocustDriver(log_dir, workers)
    proxies = FaultProxies(log_dir, grpc=grpc is not None)
    if service is None:
        return Stack(
            LOCAL_STACK, LocalTargets(log_dir, grpc), driver, HttpMetricsSource(), proxies, fresh_requests=True
        )
    found = server_metrics.endpoint(service.metrics)
    source = HttpMetricsSource(found[1]) if found is not None else HttpMetricsSource()
    targets = OwnServiceTargets(service, log_dir, folder or Path.cwd(), grpc, journal=journal)
    return Stack(OWN_SERVICE_STACK, targets, driver, source, proxies, fresh_requests=True)
