"""One reading of a run's metrics: the target's gauges and counters, the client's counters.

Built from a list of samples ``(name, labels, value)``: parsed from Prometheus text with
``prometheus_client``'s parser (:func:`parse_target`, :func:`parse_client`), or
rebuilt from Prometheus' HTTP API (:mod:`retrystorm.runner.compose.prometheus`). Series are summed over
labels the runner does not split by (the client's ``strategy``); counters are
cumulative, and the analysis takes differences, so a load generator whose counters
started before the run (a long-lived Locust master) reads the same.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence

from prometheus_client.parser import text_string_to_metric_families

TARGET = "retrystorm_target_"
CLIENT = "retrystorm_client_"
#: The gauge histogram of the ages of the logical requests in progress (:mod:`retrystorm.loadgen.metrics`).
IN_PROGRESS_AGE = CLIENT + "requests_in_progress_age_seconds"


@dataclasses.dataclass(frozen=True, slots=True)
class TargetReading:
    """The target's state and counters at one moment."""

    in_flight: float
    delay_s: float
    connections: float
    abandoned_in_flight: float
    served: Mapping[str, float]
    #: gRPC attempts that arrived (``retrystorm_target_grpc_attempts_total``, every attempt number): the attempts
    #: counted at the target, whichever client sent them; 0 for a target without a gRPC front.
    grpc_attempts: float = 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class ClientReading:
    """The load generator's cumulative counters and gauges at one moment.

    ``attempts_started`` counts attempts when they are sent (the attempts per second
    on the wire, and the simulator's count); ``attempts`` counts them by outcome when
    they end, so it lags by up to the attempt timeout while a server answers nothing.
    ``ended_buckets`` is the cumulative histogram of the latency of the logical requests
    that ended, ``ok`` or given up (backoff included): ``(upper bound in seconds,
    count)``, ascending, ending with ``inf``. ``in_progress_buckets`` is the histogram of
    the ages of the logical requests in progress at this moment, ``in_progress`` their
    number; ``None`` and ``()`` when the load generator does not expose them.
    """

    attempts: Mapping[str, float]
    attempts_started: float
    requests_ok: float
    requests_gave_up: float
    requests_started: float
    users_in_backoff: float
    active_users: float
    retries: float
    budget_refusals: float
    ended_buckets: tuple[tuple[float, float], ...]
    in_progress_buckets: tuple[tuple[float, float], ...] = ()
    in_progress: float | None = None
    #: Sum (seconds) and count of every ended attempt's latency, all outcomes: the mean per interval.
    attempt_latency_sum: float = 0.0
    attempt_latency_count: float = 0.0
    #: Attempts that ended, by ``(request, outcome)``; and attempts answered, by ``(request, HTTP status)``.
    outcomes_by_request: Mapping[tuple[str, str], float] = dataclasses.field(default_factory=dict)
    statuses_by_request: Mapping[tuple[str, str], float] = dataclasses.field(default_factory=dict)
    #: Attempts sent by each load-generator process (``process`` label: a master's workers, kept apart).
    generator_attempts: Mapping[str, float] = dataclasses.field(default_factory=dict)

    @property
    def attempts_total(self) -> float:
        """Attempts that ended, of every outcome."""
        return math.fsum(self.attempts.values())


@dataclasses.dataclass(frozen=True, slots=True)
class Reading:
    """Both parts of one reading; ``None``: no answer in time.

    ``tick`` is the whole second after the load started that the reading was taken for,
    ``time_s`` when it was actually taken (a little later, or much later on a starved
    machine). ``generators``: each load-generator process's share of one core since the
    previous reading (``None``: not read).
    """

    tick: int
    time_s: float
    target: TargetReading | None
    client: ClientReading | None
    generators: Mapping[str, float] | None = None


#: One sample: metric name (``_total``, ``_bucket`` suffixes included), labels, value.
Sample = tuple[str, dict[str, str], float]


def samples_of(text: str) -> list[Sample]:
    """Every sample of Prometheus exposition ``text``."""
    return [
        (sample.name, dict(sample.labels), float(sample.value))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def _total(samples: Iterable[Sample], name: str, **labels: str) -> float:
    return math.fsum(
        value
        for sample_name, sample_labels, value in samples
        if sample_name == name and all(sample_labels.get(key) == wanted for key, wanted in labels.items())
    )


def _by_label(samples: Iterable[Sample], name: str, label: str) -> dict[str, float]:
    found: dict[str, float] = {}
    for sample_name, labels, value in samples:
        if sample_name == name and label in labels:
            found[labels[label]] = found.get(labels[label], 0.0) + value
    return found


def _by_labels(samples: Iterable[Sample], name: str, first: str, second: str) -> dict[tuple[str, str], float]:
    found: dict[tuple[str, str], float] = {}
    for sample_name, labels, value in samples:
        if sample_name == name and first in labels and second in labels:
            key = (labels[first], labels[second])
            found[key] = found.get(key, 0.0) + value
    return found


def target_from_samples(samples: Sequence[Sample]) -> TargetReading:
    """A :class:`TargetReading` from the target's samples (scraped, or queried from Prometheus)."""
    return TargetReading(
        in_flight=_total(samples, TARGET + "in_flight_requests"),
        delay_s=_total(samples, TARGET + "delay_seconds"),
        connections=_total(samples, TARGET + "open_connections"),
        abandoned_in_flight=_total(samples, TARGET + "abandoned_in_flight_requests"),
        served=_by_label(samples, TARGET + "requests_total", "outcome"),
        grpc_attempts=_total(samples, TARGET + "grpc_attempts_total"),
    )


def _buckets(samples: Iterable[Sample], name: str) -> tuple[tuple[float, float], ...]:
    """The cumulative buckets of histogram ``name``, summed over every other label, ascending."""
    return tuple(sorted((float(bound), count) for bound, count in _by_label(samples, name + "_bucket", "le").items()))


def client_from_samples(samples: Sequence[Sample]) -> ClientReading:
    """A :class:`ClientReading` from the load generator's samples (scraped, or queried from Prometheus)."""
    ages = _buckets(samples, IN_PROGRESS_AGE)
    return ClientReading(
        attempts=_by_label(samples, CLIENT + "attempts_total", "outcome"),
        attempts_started=_total(samples, CLIENT + "attempts_started_total"),
        requests_ok=_total(samples, CLIENT + "requests_total", outcome="ok"),
        requests_gave_up=_total(samples, CLIENT + "requests_total", outcome="gave_up"),
        requests_started=_total(samples, CLIENT + "requests_started_total"),
        users_in_backoff=_total(samples, CLIENT + "users_in_backoff"),
        active_users=_total(samples, CLIENT + "active_users"),
        retries=_total(samples, CLIENT + "retries_total"),
        budget_refusals=_total(samples, CLIENT + "budget_refusals_total"),
        ended_buckets=_buckets(samples, CLIENT + "request_latency_seconds"),
        in_progress_buckets=ages,
        in_progress=ages[-1][1] if ages else None,
        attempt_latency_sum=_total(samples, CLIENT + "attempt_latency_seconds_sum"),
        attempt_latency_count=_total(samples, CLIENT + "attempt_latency_seconds_count"),
        outcomes_by_request=_by_labels(samples, CLIENT + "attempts_total", "request", "outcome"),
        statuses_by_request=_by_labels(samples, CLIENT + "responses_total", "request", "status"),
        generator_attempts=_by_label(samples, CLIENT + "generator_attempts_started_total", "process"),
    )


def parse_target(text: str) -> TargetReading:
    """A :class:`TargetReading` from the target's ``/metrics``."""
    return target_from_samples(samples_of(text))


def parse_client(text: str) -> ClientReading:
    """A :class:`ClientReading` from the load generator's ``/metrics``."""
    return client_from_samples(samples_of(text))
