"""The compose backend: a running compose stack's services, reset per strategy.

Where the services answer (:mod:`runner.compose.endpoints`), the target service reset
through its admin API (:mod:`runner.compose.service`), the Locust master driven over its
HTTP API (:mod:`runner.compose.master`), readings from Prometheus
(:mod:`runner.compose.prometheus`). It never imports the local backend.
"""

from __future__ import annotations

from chaos.backends.base import FaultBackend
from runner.compose.endpoints import ComposeEndpoints
from runner.compose.master import LocustMaster
from runner.compose.prometheus import PrometheusMetricsSource
from runner.compose.service import ServiceTargets
from runner.orchestrate import Stack


def compose_stack(
    endpoints: ComposeEndpoints, *, longest_outage_s: float = 0.0, backend: FaultBackend | None = None
) -> Stack:
    """The :class:`Stack` over a running compose stack.

    ``backend`` pauses the target (default: :meth:`ComposeEndpoints.fault_backend`,
    connected when the run starts, never for a dry run).
    """
    targets = ServiceTargets(
        endpoints.target_url,
        load_target_url=endpoints.load_target_url,
        backend=backend or endpoints.fault_backend(longest_outage_s),
        admin_token=endpoints.admin_token,
    )
    return Stack(
        endpoints.describe(),
        targets,
        LocustMaster(endpoints.locust_url),
        PrometheusMetricsSource(endpoints.prometheus_url),
    )
