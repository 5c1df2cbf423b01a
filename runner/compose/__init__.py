"""The compose backend: a running compose stack's services, reset per strategy.

Where the services answer (:mod:`retrystorm.runner.compose.endpoints`), the target service reset
through its admin API (:mod:`retrystorm.runner.service_target`), the Locust master driven over its
HTTP API (:mod:`retrystorm.runner.locust_master`), readings from Prometheus
(:mod:`retrystorm.runner.compose.prometheus`). It never imports the local backend.
"""

from __future__ import annotations

import urllib.parse

from retrystorm.chaos.backends.base import FaultBackend
from retrystorm.errors import UserError
from retrystorm.experiment.scenario.service import ServiceTarget as OwnService
from retrystorm.runner import server_metrics
from retrystorm.runner.compose.endpoints import ComposeEndpoints
from retrystorm.runner.compose.prometheus import PrometheusMetricsSource
from retrystorm.runner.locust_master import LocustMaster
from retrystorm.runner.orchestrate import Stack
from retrystorm.runner.service_target import ServiceTargets


def compose_stack(
    endpoints: ComposeEndpoints,
    *,
    longest_outage_s: float = 0.0,
    backend: FaultBackend | None = None,
    service: OwnService | None = None,
) -> Stack:
    """The :class:`Stack` over a running compose stack.

    ``backend`` pauses the target (default: :meth:`ComposeEndpoints.fault_backend`,
    connected when the run starts, never for a dry run). ``service`` is a scenario's own
    service (``target:``) running as the stack's target: no admin calls, its ``ready``
    path, its own in-flight gauge if it has one (:func:`foreign_target`).
    """
    if service is not None:
        check_foreign(service)
    alias = {"container": service.container, "service": service.service} if service is not None else {}
    targets = ServiceTargets(
        endpoints.target_url,
        load_target_url=endpoints.load_target_url,
        backend=backend or endpoints.fault_backend(longest_outage_s, **alias),
        foreign=service,
        admin_token=endpoints.admin_token,
    )
    source = PrometheusMetricsSource(endpoints.prometheus_url)
    if service is not None:
        source.target = foreign_target(service, endpoints.prometheus_url)
    master = LocustMaster(endpoints.locust_url, token=endpoints.master_token)
    # fresh requests go to the target's URL as the runner reaches it (the same server the load reaches by its
    # service name)
    return Stack(endpoints.describe(), targets, master, source, fresh_requests=True)


def check_foreign(service: OwnService) -> None:
    """A compose stack runs its own services: a command or a pid to pause is a local matter (exit 2)."""
    for key in ("command", "pid"):
        if getattr(service, key) is not None:
            raise UserError(
                f"target.{key}: --backend compose pauses the stack's containers; put your service in the stack "
                "(examples/gunicorn/docker-compose.own-service.yml shows how) or run with --backend local"
            )


def foreign_target(service: OwnService, prometheus_url: str) -> tuple[str, server_metrics.Parse] | None:
    """Where the service's in-flight gauge is read: its own Prometheus query, or the stack's Prometheus (job target).

    ``None`` without ``metrics:``: the server is then judged from the clients.
    """
    metrics = service.metrics
    if metrics is None or (metrics.in_flight is None and metrics.prometheus is None):
        return None
    if metrics.prometheus is not None:
        return server_metrics.endpoint(metrics)
    query = urllib.parse.urlencode({"query": f'sum({metrics.in_flight}{{job="target"}})'})
    return f"{prometheus_url.rstrip('/')}/api/v1/query?{query}", server_metrics.query_parser
