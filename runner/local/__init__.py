"""The local backend: fresh processes on 127.0.0.1 per strategy (no Docker).

A ``retrystorm target`` process (:mod:`runner.local.target`), a headless Locust process
(:mod:`runner.local.locust`), and readings scraped from both ``/metrics`` endpoints
(:mod:`runner.local.scrape`). It never imports the compose backend, nor the Docker SDK.
"""

from __future__ import annotations

from pathlib import Path

from experiment.scenario.service import ServiceTarget
from runner import server_metrics
from runner.local.locust import LocustDriver
from runner.local.scrape import HttpMetricsSource
from runner.local.service import OwnServiceTargets
from runner.local.target import LocalTargets
from runner.orchestrate import Stack

#: The stack ``retrystorm run`` uses by default: no Docker.
LOCAL_STACK = "local processes (retrystorm target + headless Locust, SIGSTOP/SIGCONT)"
OWN_SERVICE_STACK = "local processes (your service + headless Locust)"


def local_stack(log_dir: Path, service: ServiceTarget | None = None, folder: Path | None = None) -> Stack:
    """Local processes: a fresh ``retrystorm target`` (or ``service``, a scenario's own) and a headless Locust.

    ``folder`` is where a service's command runs (the scenario's folder; default: the current one).
    """
    if service is None:
        return Stack(LOCAL_STACK, LocalTargets(log_dir), LocustDriver(log_dir), HttpMetricsSource())
    found = server_metrics.endpoint(service.metrics)
    source = HttpMetricsSource(found[1]) if found is not None else HttpMetricsSource()
    targets = OwnServiceTargets(service, log_dir, folder or Path.cwd())
    return Stack(OWN_SERVICE_STACK, targets, LocustDriver(log_dir), source)
