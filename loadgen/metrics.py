"""The load generator's Prometheus metrics: ``retrystorm_client_<what>_<unit>``.

Built by :func:`build_metrics` on a registry passed in (never at import), so two
processes, apps or tests never collide. Every series carries the ``strategy`` label:
the strategy's family name (``fixed``, ``exponential``, ...), never its full spec, so
the cardinality stays small. Attempts and logical requests also carry ``request``: the
name of the request of the mix they belong to (:mod:`retrystorm.loadgen.request_mix`, at most
:data:`~retrystorm.loadgen.request_mix.MAX_REQUESTS` names; ``/api`` for the default ``GET /api``).

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
:mod:`retrystorm.loadgen.aggregate` for how a Locust master sums its workers' series.

The logical requests *in progress* (a user waiting for an answer or backing off) are a
gauge histogram, ``retrystorm_client_requests_in_progress_age_seconds``: at each scrape,
how many there are and how long each has been running, over the latency buckets. The
request-latency histogram only holds requests that ended; with this one a reader
counts the unfinished ones at their age (the censored latencies of
:mod:`retrystorm.experiment.analysis.stats`). A master sums its workers' like a gauge (connected
workers only).

Each Locust process also serves its own CPU and whether it is saturated
(:mod:`retrystorm.loadgen.generator_cpu`), labelled by process, and how late it runs against its plan:
``retrystorm_client_schedule_lag_seconds`` (each planned start of a user: think, arrival, backoff) and
``retrystorm_client_loop_lag_seconds`` (its event loop's own wake-ups), histograms summed over workers
on a master (:mod:`retrystorm.loadgen.schedule_lag`).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import math
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeHistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from retrystorm.loadgen.buckets import LATENCY_BUCKETS_S
from retrystorm.loadgen.generator_cpu import GeneratorCpu
from retrystorm.loadgen.outcomes import AttemptOutcome, RequestOutcome
from retrystorm.loadgen.schedule_lag import LAG_BUCKETS_S, LOOP_LAG, SCHEDULE_LAG, PlannedWait, Wait, lateness_s

if TYPE_CHECKING:
    from retrystorm.loadgen.otel_instruments import ClientInstruments

PREFIX = "retrystorm_client_"
CollectorT = TypeVar("CollectorT", bound=Collector)
IN_PROGRESS_AGE = PREFIX + "requests_in_progress_age_seconds"


class RequestsInProgress(Collector):
    """The logical requests in progress and their start times; at each scrape, the histogram of their ages.

    A user calls :meth:`begin` when a logical request starts and :meth:`end` when it
    ends (in a ``finally``, so a user stopped mid-request is not left counted). Ages
    are ``clock() - started``, with the same monotonic clock the request latencies use.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._started: dict[int, tuple[str, float]] = {}
        self._tokens = itertools.count()
        #: Every strategy seen: a strategy with nothing in progress reads 0, not absent.
        self._strategies: set[str] = set()

    def begin(self, strategy: str, started: float) -> int:
        """A logical request of ``strategy`` started at ``started`` (the clock's time); a token for :meth:`end`."""
        token = next(self._tokens)
        self._started[token] = (strategy, started)
        self._strategies.add(strategy)
        return token

    def end(self, token: int) -> None:
        """The request of ``token`` ended (or was abandoned)."""
        self._started.pop(token, None)

    def __len__(self) -> int:
        return len(self._started)

    def collect(self) -> Iterator[Metric]:
        family = GaugeHistogramMetricFamily(
            IN_PROGRESS_AGE,
            "Logical requests in progress (waiting for an answer or backing off) by how long they have run, "
            "read at each scrape: the unfinished requests a latency histogram of ended ones leaves out.",
            labels=["strategy"],
        )
        now = self.clock()
        by_strategy: dict[str, list[float]] = {strategy: [] for strategy in set(self._strategies)}
        for strategy, started in list(self._started.values()):
            by_strategy.setdefault(strategy, []).append(max(0.0, now - started))
        for strategy, ages in sorted(by_strategy.items()):
            counts = [0] * (len(LATENCY_BUCKETS_S) + 1)
            for age in ages:
                counts[bisect.bisect_left(LATENCY_BUCKETS_S, age)] += 1
            cumulative = list(itertools.accumulate(counts))
            bounds = [*(repr(float(bound)) for bound in LATENCY_BUCKETS_S), "+Inf"]
            family.add_metric([strategy], list(zip(bounds, map(float, cumulative), strict=True)), sum(ages))
        yield family


#: The ``request`` label of the default request, ``GET /api``: its path, as Locust's statistics name it.
DEFAULT_REQUEST_LABEL = "/api"


@dataclasses.dataclass(frozen=True, slots=True)
class ClientMetrics:
    """The client metrics of one process, each labelled by ``strategy``."""

    registry: CollectorRegistry
    attempts: Counter
    attempts_started: Counter
    responses: Counter
    requests: Counter
    requests_started: Counter
    attempt_latency: Histogram
    request_latency: Histogram
    retries: Counter
    budget_refusals: Counter
    failed_locally: Counter
    users_in_backoff: Gauge
    backoff_delay: Histogram
    active_users: Gauge
    load_factor: Gauge
    in_progress: RequestsInProgress
    generator_cpu: GeneratorCpu
    #: How late each planned start came, by ``wait`` (think, arrival, backoff).
    schedule_lag: Histogram
    #: How late the event loop's own watcher woke (``process`` label: :attr:`GeneratorCpu.name`).
    loop_lag: Histogram
    #: The process's OpenTelemetry instruments, fed by the same calls (``None``: no export, the default).
    otel: ClientInstruments | None = None

    def for_strategy(
        self,
        strategy: str,
        requests: Sequence[str] = (DEFAULT_REQUEST_LABEL,),
        methods: Mapping[str, str] | None = None,
    ) -> StrategyMetrics:
        """The children of every metric for one strategy label and the mix's request names, bound once
        (``methods``: each request's HTTP method, for the OpenTelemetry attributes; default ``GET``)."""
        return StrategyMetrics(self, strategy, requests, methods or {})

    def show_load_factor(self, strategy: str, factor: float) -> None:
        """The load factor a ``spike`` trigger puts in force (1 outside spikes), set by
        retrystorm.loadgen.spike_player."""
        self.load_factor.labels(strategy).set(factor)


def _total(counter: Counter) -> float:
    """The sum of a counter's ``_total`` samples over every label."""
    return math.fsum(s.value for metric in counter.collect() for s in metric.samples if s.name.endswith("_total"))


def build_metrics(registry: CollectorRegistry) -> ClientMetrics:
    """Create the client metrics on ``registry``."""
    label = ["strategy"]
    by_request = ["strategy", "request"]
    by_outcome = ["strategy", "request", "outcome"]
    attempts_started = Counter(
        PREFIX + "attempts_started",
        "Attempts (HTTP requests on the wire) counted when they are sent; started minus ended "
        "(attempts_total) is the number awaiting an answer.",
        by_request,
        registry=registry,
    )
    return ClientMetrics(
        registry=registry,
        attempts=Counter(
            PREFIX + "attempts",
            "Attempts (HTTP requests on the wire) counted when they end, by outcome: ok, timeout, "
            "connection_error, server_error (5xx), throttled (429), client_error (other 4xx).",
            by_outcome,
            registry=registry,
        ),
        responses=Counter(
            PREFIX + "responses",
            "Attempts that got an HTTP answer, by its status code (200, 404, 503, ...): what a service answered "
            "to each request of the mix.",
            ["strategy", "request", "status"],
            registry=registry,
        ),
        attempts_started=attempts_started,
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
        failed_locally=Counter(
            PREFIX + "attempts_failed_locally",
            "Attempts the client's connection state failed before the network (a gRPC channel in "
            "TRANSIENT_FAILURE, grpc-retry's channel): made, never sent.",
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
        load_factor=Gauge(
            PREFIX + "load_factor",
            "The load factor in force (a spike trigger's users over the run's users, 1 outside spikes); "
            "served only by the process that plays --load-spikes (the single one or the master).",
            label,
            registry=registry,
        ),
        in_progress=_registered(RequestsInProgress(), registry),
        generator_cpu=_registered(GeneratorCpu(attempts_started=lambda: _total(attempts_started)), registry),
        schedule_lag=Histogram(
            SCHEDULE_LAG,
            "How late users started against their plan: a think time's or backoff's end, or an open-loop arrival, "
            "actual minus planned (a starved load generator wakes late whatever its CPU share).",
            ["strategy", "wait"],
            buckets=LAG_BUCKETS_S,
            registry=registry,
        ),
        loop_lag=Histogram(
            LOOP_LAG,
            "How late this load-generator process's event loop woke a watcher that sleeps 100 ms at a time.",
            ["process"],
            buckets=LAG_BUCKETS_S,
            registry=registry,
        ),
    )


def _registered(collector: CollectorT, registry: CollectorRegistry) -> CollectorT:
    registry.register(collector)
    return collector


class RequestMetrics:
    """Pre-bound children of the per-request metrics for one strategy and one request name."""

    __slots__ = (
        "_responses",
        "_statuses",
        "attempt_latency",
        "attempts",
        "attempts_started",
        "otel",
        "request_latency",
        "requests",
        "requests_started",
    )

    def __init__(self, metrics: ClientMetrics, strategy: str, request: str, method: str = "GET") -> None:
        self._responses = functools.partial(metrics.responses.labels, strategy, request)
        self._statuses: dict[int, Counter] = {}
        self.attempts = {o: metrics.attempts.labels(strategy, request, o.value) for o in AttemptOutcome}
        self.attempts_started = metrics.attempts_started.labels(strategy, request)
        self.attempt_latency = {o: metrics.attempt_latency.labels(strategy, request, o.value) for o in AttemptOutcome}
        self.requests = {o: metrics.requests.labels(strategy, request, o.value) for o in RequestOutcome}
        self.requests_started = metrics.requests_started.labels(strategy, request)
        self.request_latency = {o: metrics.request_latency.labels(strategy, request, o.value) for o in RequestOutcome}
        self.otel = metrics.otel.for_request(strategy, request, method) if metrics.otel is not None else None

    def attempt(self, outcome: AttemptOutcome, latency_s: float) -> None:
        """Count one attempt that ended and observe its latency (its start: ``attempts_started``)."""
        self.attempts[outcome].inc()
        self.attempt_latency[outcome].observe(latency_s)
        if self.otel is not None:
            self.otel.attempt(outcome, latency_s)

    def request(
        self, outcome: RequestOutcome, latency_s: float, attempts: int | None = None, backoff_s: float = 0.0
    ) -> None:
        """Count one logical request and observe its latency, backoff included (``attempts``: how many it took, when
        known, and ``backoff_s`` its backoff in all, for the OpenTelemetry instruments)."""
        self.requests[outcome].inc()
        self.request_latency[outcome].observe(latency_s)
        if self.otel is not None:
            self.otel.request(outcome, attempts, backoff_s)

    def response(self, status: int) -> None:
        """Count one attempt answered with HTTP ``status`` (its child bound on first use)."""
        child = self._statuses.get(status)
        if child is None:
            child = self._statuses[status] = self._responses(str(status))
        child.inc()


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
        "failed_locally",
        "first",
        "in_progress",
        "request_latency",
        "requests",
        "requests_started",
        "retries",
        "schedule_lag",
        "strategy",
        "users_in_backoff",
    )

    def __init__(
        self, metrics: ClientMetrics, strategy: str, requests: Sequence[str], methods: Mapping[str, str]
    ) -> None:
        self.strategy = strategy
        self.by_request = {name: RequestMetrics(metrics, strategy, name, methods.get(name, "GET")) for name in requests}
        first = self.by_request[requests[0]]
        self.first = first
        self.attempts = first.attempts
        self.attempts_started = first.attempts_started
        self.attempt_latency = first.attempt_latency
        self.requests = first.requests
        self.requests_started = first.requests_started
        self.request_latency = first.request_latency
        self.retries = metrics.retries.labels(strategy)
        self.budget_refusals = metrics.budget_refusals.labels(strategy)
        self.failed_locally = metrics.failed_locally.labels(strategy)
        self.users_in_backoff = metrics.users_in_backoff.labels(strategy)
        self.backoff_delay = metrics.backoff_delay.labels(strategy)
        self.active_users = metrics.active_users.labels(strategy)
        self.in_progress = metrics.in_progress
        self.schedule_lag = {wait: metrics.schedule_lag.labels(strategy, wait.value) for wait in Wait}

    def attempt(self, outcome: AttemptOutcome, latency_s: float) -> None:
        """Count one attempt of the first request that ended and observe its latency."""
        self.first.attempt(outcome, latency_s)

    def request(self, outcome: RequestOutcome, latency_s: float) -> None:
        """Count one logical request of the first request and observe its latency, backoff included."""
        self.first.request(outcome, latency_s)

    def begin_request(self, started: float) -> int:
        """A logical request started at ``started`` (monotonic): counted in progress until :meth:`end_request`."""
        return self.in_progress.begin(self.strategy, started)

    def end_request(self, token: int) -> None:
        """The logical request of ``token`` is no longer in progress."""
        self.in_progress.end(token)

    def started_late(self, planned: PlannedWait | None, now_s: float) -> None:
        """Observe how late a planned start came (``now_s``: the monotonic clock); ``None``: nothing planned."""
        if planned is not None:
            self.schedule_lag[planned.wait].observe(lateness_s(planned.start_s, now_s))

    def backoff_ended(self, planned_s: float, now_s: float) -> None:
        """Observe how late a backoff's sleep ended against its planned end."""
        self.schedule_lag[Wait.BACKOFF].observe(lateness_s(planned_s, now_s))

    def retry(self, delay_s: float) -> None:
        """Count one scheduled retry and observe its backoff delay."""
        self.retries.inc()
        self.backoff_delay.observe(delay_s)
        if self.first.otel is not None:
            self.first.otel.retry(delay_s)
