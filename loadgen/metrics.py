"""The load generator's Prometheus metrics: ``retrystorm_client_<what>_<unit>``.

Built by :func:`build_metrics` on a registry passed in (never at import), so two
processes, apps or tests never collide. Every series carries the ``strategy`` label:
the strategy's family name (``fixed``, ``exponential``, ...), never its full spec, so
the cardinality stays small. Attempts and logical requests also carry ``request``: the
name of the request of the mix they belong to (:mod:`loadgen.request_mix`, at most
:data:`~loadgen.request_mix.MAX_REQUESTS` names; ``/api`` for the default ``GET /api``).

Latencies are true histograms in seconds with buckets from 10 ms to 10 min, because
the tail of a retry storm is minutes long; Grafana and the scenario runner take
quantiles with ``histogram_quantile`` over summed buckets.

Attempts are counted twice: ``attempts_started`` when an attempt is sent (the rate
of attempts on the wire, as the simulator counts them; it does not lag by the attempt
timeout when a frozen server answers nothing), ``attempts`` by outcome when it ends
(the outcome is known only then). Their difference is the number of attempts
awaiting an answer.

Counters only ever grow for the life of a process (Prometheus counters must never go
down); a new run is delimited by taking differences, not by resetting. See
:mod:`loadgen.aggregate` for how a Locust master sums its workers' series.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from loadgen.outcomes import AttemptOutcome, RequestOutcome

#: Histogram buckets in seconds: 10 ms to 10 min, about three per decade, and the
#: seed's 2 s attempt timeout as an edge.
LATENCY_BUCKETS_S = (0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)

PREFIX = "retrystorm_client_"
#: The ``request`` label of the default request, ``GET /api``: its path, as Locust's statistics name it.
DEFAULT_REQUEST_LABEL = "/api"


@dataclasses.dataclass(frozen=True, slots=True)
class ClientMetrics:
    """The client metrics of one process, each labelled by ``strategy``."""

    registry: CollectorRegistry
    attempts: Counter
    attempts_started: Counter
    requests: Counter
    requests_started: Counter
    attempt_latency: Histogram
    request_latency: Histogram
    retries: Counter
    budget_refusals: Counter
    users_in_backoff: Gauge
    backoff_delay: Histogram
    active_users: Gauge

    def for_strategy(self, strategy: str, requests: Sequence[str] = (DEFAULT_REQUEST_LABEL,)) -> StrategyMetrics:
        """The children of every metric for one strategy label and the mix's request names, bound once."""
        return StrategyMetrics(self, strategy, requests)


def build_metrics(registry: CollectorRegistry) -> ClientMetrics:
    """Create the client metrics on ``registry``."""
    label = ["strategy"]
    by_request = ["strategy", "request"]
    by_outcome = ["strategy", "request", "outcome"]
    return ClientMetrics(
        registry=registry,
        attempts=Counter(
            PREFIX + "attempts",
            "Attempts (HTTP requests on the wire) counted when they end, by outcome: ok, timeout, "
            "connection_error, server_error (5xx), throttled (429), client_error (other 4xx).",
            by_outcome,
            registry=registry,
        ),
        attempts_started=Counter(
            PREFIX + "attempts_started",
            "Attempts (HTTP requests on the wire) counted when they are sent; started minus ended "
            "(attempts_total) is the number awaiting an answer.",
            by_request,
            registry=registry,
        ),
        requests=Counter(
            PREFIX + "requests",
            "Logical requests by outcome: ok, or gave_up (attempts, deadline or budget exhausted).",
            by_outcome,
            registry=registry,
        ),
        requests_started=Counter(
            PREFIX + "requests_started",
            "Logical requests started; started minus finished (ok, gave_up) is the number still retrying.",
            by_request,
            registry=registry,
        ),
        attempt_latency=Histogram(
            PREFIX + "attempt_latency_seconds",
            "Time from sending an attempt to its response, error or timeout.",
            by_outcome,
            buckets=LATENCY_BUCKETS_S,
            registry=registry,
        ),
        request_latency=Histogram(
            PREFIX + "request_latency_seconds",
            "Time from a logical request's first attempt to its outcome, backoff included.",
            by_outcome,
            buckets=LATENCY_BUCKETS_S,
            registry=registry,
        ),
        retries=Counter(
            PREFIX + "retries", "Retries scheduled (each followed by a backoff).", label, registry=registry
        ),
        budget_refusals=Counter(
            PREFIX + "budget_refusals",
            "Retries or attempts the process's retry budget refused.",
            label,
            registry=registry,
        ),
        users_in_backoff=Gauge(
            PREFIX + "users_in_backoff",
            "Users waiting out a backoff delay (with --arrival open: logical requests waiting).",
            label,
            registry=registry,
        ),
        backoff_delay=Histogram(
            PREFIX + "backoff_delay_seconds",
            "Backoff delays chosen before retries (after Retry-After).",
            label,
            buckets=LATENCY_BUCKETS_S,
            registry=registry,
        ),
        active_users=Gauge(PREFIX + "active_users", "Users running.", label, registry=registry),
    )


class RequestMetrics:
    """Pre-bound children of the per-request metrics for one strategy and one request name."""

    __slots__ = ("attempt_latency", "attempts", "attempts_started", "request_latency", "requests", "requests_started")

    def __init__(self, metrics: ClientMetrics, strategy: str, request: str) -> None:
        self.attempts = {o: metrics.attempts.labels(strategy, request, o.value) for o in AttemptOutcome}
        self.attempts_started = metrics.attempts_started.labels(strategy, request)
        self.attempt_latency = {o: metrics.attempt_latency.labels(strategy, request, o.value) for o in AttemptOutcome}
        self.requests = {o: metrics.requests.labels(strategy, request, o.value) for o in RequestOutcome}
        self.requests_started = metrics.requests_started.labels(strategy, request)
        self.request_latency = {o: metrics.request_latency.labels(strategy, request, o.value) for o in RequestOutcome}

    def attempt(self, outcome: AttemptOutcome, latency_s: float) -> None:
        """Count one attempt that ended and observe its latency (its start: ``attempts_started``)."""
        self.attempts[outcome].inc()
        self.attempt_latency[outcome].observe(latency_s)

    def request(self, outcome: RequestOutcome, latency_s: float) -> None:
        """Count one logical request and observe its latency, backoff included."""
        self.requests[outcome].inc()
        self.request_latency[outcome].observe(latency_s)


class StrategyMetrics:
    """Pre-bound children of :class:`ClientMetrics` for one strategy label and the requests of its mix.

    Looking a child up by labels costs more than updating it; a user binds the
    children once per run and updates them per attempt. The per-request children are
    in :attr:`by_request`; ``attempts``, ``attempt()`` and the like are the first request's.
    """

    __slots__ = (
        "active_users",
        "attempt_latency",
        "attempts",
        "attempts_started",
        "backoff_delay",
        "budget_refusals",
        "by_request",
        "request_latency",
        "requests",
        "requests_started",
        "retries",
        "strategy",
        "users_in_backoff",
    )

    def __init__(self, metrics: ClientMetrics, strategy: str, requests: Sequence[str]) -> None:
        self.strategy = strategy
        self.by_request = {name: RequestMetrics(metrics, strategy, name) for name in requests}
        first = self.by_request[requests[0]]
        self.attempts = first.attempts
        self.attempts_started = first.attempts_started
        self.attempt_latency = first.attempt_latency
        self.requests = first.requests
        self.requests_started = first.requests_started
        self.request_latency = first.request_latency
        self.retries = metrics.retries.labels(strategy)
        self.budget_refusals = metrics.budget_refusals.labels(strategy)
        self.users_in_backoff = metrics.users_in_backoff.labels(strategy)
        self.backoff_delay = metrics.backoff_delay.labels(strategy)
        self.active_users = metrics.active_users.labels(strategy)

    def attempt(self, outcome: AttemptOutcome, latency_s: float) -> None:
        """Count one attempt of the first request that ended and observe its latency."""
        self.attempts[outcome].inc()
        self.attempt_latency[outcome].observe(latency_s)

    def request(self, outcome: RequestOutcome, latency_s: float) -> None:
        """Count one logical request of the first request and observe its latency, backoff included."""
        self.requests[outcome].inc()
        self.request_latency[outcome].observe(latency_s)

    def retry(self, delay_s: float) -> None:
        """Count one scheduled retry and observe its backoff delay."""
        self.retries.inc()
        self.backoff_delay.observe(delay_s)
