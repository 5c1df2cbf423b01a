"""Where the retry-storm view's readings come from, and its two flags.

* the client counters and gauges: this process's ``/metrics`` registry (on a master,
  the sum over its workers, :mod:`retrystorm.loadgen.aggregate`), read by :func:`client_reading`;
* in flight on the target: one gauge of the target's own ``/metrics``
  (``retrystorm_target_in_flight_requests`` for the built-in target, another with
  ``--in-flight-metric``), scraped by :class:`TargetGauge` with a short timeout; a
  target that does not answer in time (paused), or has no such gauge, gives no value;
* outages: the chaos API's ``GET /outages`` through :class:`retrystorm.chaos.client.ChaosClient`
  (the Chaos tab's client), asked at most once a second by :class:`OutageSource`.

No Locust import: plain ``urllib`` (in a Locust process gevent has patched its sockets).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry

from retrystorm.addresses import http_address
from retrystorm.chaos.client import ChaosApiError, ChaosClient
from retrystorm.loadgen.exposition import samples_in, samples_of
from retrystorm.loadgen.readings import ClientReading, client_from_samples

logger = logging.getLogger(__name__)

IN_FLIGHT_METRIC = "retrystorm_target_in_flight_requests"
#: ``--target-metrics`` default: the ``/metrics`` of the host under load.
AUTO = "auto"
#: How long a scrape of the target may take: a paused target answers nothing, and the
#: view reads once a second.
SCRAPE_TIMEOUT_S = 0.5
#: The most of a target's ``/metrics`` read (a large exposition is cut, not buffered whole).
MAX_SCRAPE_BYTES = 4 * 1024 * 1024
#: How long the chaos API may take to list its outages.
CHAOS_TIMEOUT_S = 2.0
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]{0,199}")


def check_metric_name(text: str) -> str:
    """``--in-flight-metric``: a Prometheus metric name (argparse ``type``)."""
    name = text.strip()
    if not _METRIC_NAME.fullmatch(name):
        expected = f"expected a Prometheus metric name like {IN_FLIGHT_METRIC}"
        raise argparse.ArgumentTypeError(f"got {text[:80]!r}, {expected}")
    return name


def check_metrics_url(text: str) -> str:
    """``--target-metrics``: ``auto``, ``none`` or an ``http(s)://`` address (argparse ``type``)."""
    value = text.strip()
    if value.lower() in (AUTO, "none"):
        return value.lower()
    try:
        return http_address(value)
    except ValueError:
        expected = f"expected {AUTO} (the host's /metrics), none, or an address like http://127.0.0.1:8070/metrics"
        raise argparse.ArgumentTypeError(f"got {text[:80]!r}, {expected}") from None


def add_arguments(parser: Any) -> None:
    """Register the view's flags on Locust's parser (not in the start form: they are not about a run)."""
    parser.add_argument(
        "--target-metrics",
        type=check_metrics_url,
        default=AUTO,
        include_in_web_ui=False,
        help=f"Where the Retry storm tab reads in flight on the target: {AUTO} (the host's /metrics), "
        "none, or a URL like http://127.0.0.1:8070/metrics.",
    )
    parser.add_argument(
        "--in-flight-metric",
        type=check_metric_name,
        default=IN_FLIGHT_METRIC,
        include_in_web_ui=False,
        help="The gauge of requests in flight in the target's /metrics (all its series summed).",
    )


def metrics_url(option: str, host: str | None) -> str | None:
    """The address to scrape: ``auto`` is the host's ``/metrics`` (``None`` without a host)."""
    if option == "none":
        return None
    if option != AUTO:
        return option
    if not host:
        return None
    parts = urllib.parse.urlsplit(host.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return f"{parts.scheme}://{parts.netloc}/metrics"


def client_reading(registry: CollectorRegistry) -> ClientReading:
    """The client series of ``registry`` now, read as the runner reads a scraped ``/metrics`` (summed over labels;
    the load factor the largest over strategies: only the running strategy's is above 1)."""
    return client_from_samples(samples_in(registry))


def gauge_in(text: str, metric: str) -> float | None:
    """The sum of every sample of the gauge ``metric`` in a Prometheus exposition; ``None`` if absent."""
    values = [value for name, _, value in samples_of(text) if name == metric]
    return sum(values) if values else None


@dataclasses.dataclass(slots=True)
class TargetGauge:
    """One gauge of a target's ``/metrics``; :meth:`read` answers it or ``None``, and says why not."""

    metric: str = IN_FLIGHT_METRIC
    timeout_s: float = SCRAPE_TIMEOUT_S
    error: str | None = None

    def read(self, url: str | None) -> float | None:
        """Scrape ``url`` once; ``None`` (and :attr:`error` set) when there is no value."""
        if url is None:
            self.error = "no target address: start Locust with --host, or set --target-metrics"
            return None
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as response:  # noqa: S310 - http(s) only
                text = response.read(MAX_SCRAPE_BYTES).decode("utf-8", "replace")
            value = gauge_in(text, self.metric)
        except (OSError, ValueError) as error:  # URLError, HTTPError and timeouts are OSErrors
            self._fail(f"no answer from {url} within {self.timeout_s:g} s: {getattr(error, 'reason', error)}")
            return None
        if value is None:
            self._fail(f"{url} has no {self.metric}")
            return None
        self.error = None
        return value

    def _fail(self, message: str) -> None:
        if message != self.error:
            logger.info("retry storm view: %s", message)
        self.error = message


class OutageSource:
    """The chaos API's outages, asked at most once every ``every_s`` (``client`` ``None``: off)."""

    def __init__(
        self, client: ChaosClient | None, *, every_s: float = 1.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.client = client
        self.every_s = every_s
        self.clock = clock
        self.outages: list[dict[str, Any]] = []
        self.error: str | None = None
        self._asked_at: float | None = None

    def latest(self) -> list[dict[str, Any]]:
        """Every outage the chaos API lists (the last answer when it fails; :attr:`error` says why)."""
        now = self.clock()
        if self.client is None or (self._asked_at is not None and now - self._asked_at < self.every_s):
            return self.outages
        self._asked_at = now
        try:
            self.outages = self.client.outages()
            self.error = None
        except ChaosApiError as error:
            self.error = error.message
        return self.outages
