"""The "Retry storm" tab of Locust's web UI: goodput against attempts, backoff, amplification,
in flight on the target, and the outages and load spikes shaded, without Grafana.

The web UI's process (standalone or master, never a worker) takes one reading a second
in a greenlet of its own (:func:`sample_forever`): the client counters and gauges of its
``/metrics`` (on a master, the sum over its workers), and the in-flight gauge of the
target's ``/metrics`` (:mod:`retrystorm.loadgen.storm_sources`). :class:`~retrystorm.loadgen.storm_series.StormHistory`
turns them into per-second points and keeps the last 15 minutes. A run started from the
web UI (or its HTTP API) starts the history again: the counters are cumulative and never
reset, so the run's first reading is its zero.

Routes:

* ``GET /storm/series`` (``?since_s=T``: only the points after ``T``): the points as
  columns with their units, which client retried the run's requests (``client``: retrystorm's
  emulation, urllib3's own ``Retry``, or grpcio's; ``None`` before a run), the outage bands from the chaos
  API at ``--chaos-url``
  (asked server-side, through the Chaos tab's client, at most once a second), the load
  spikes this process played (:func:`~retrystorm.loadgen.storm_series.spike_bands`), and where each
  reading comes from. A bad ``since_s`` is a 400 with one line;
* ``GET /storm/view.js``: the script that draws the tab (plain SVG, text set with
  ``textContent`` only). Locust's React UI bundles ECharts inside its own module, with no
  global a script of ours could call, so the charts are drawn by hand.

Both need the web UI's token when one is set (``--web-token``, or beyond loopback the chaos token); neither
changes anything.
"""

from __future__ import annotations

import datetime
import logging
import math
import time
from collections.abc import Callable
from importlib import resources
from typing import Any

import gevent
from flask import Response, jsonify, request
from prometheus_client import CollectorRegistry

from retrystorm.chaos.client import ChaosClient
from retrystorm.loadgen.page_scripts import add_page_script
from retrystorm.loadgen.readings import Reading, TargetReading
from retrystorm.loadgen.storm_series import WINDOW_S, StormHistory, columns, merge_bands, outage_bands, spike_bands
from retrystorm.loadgen.storm_sources import CHAOS_TIMEOUT_S, OutageSource, TargetGauge, client_reading, metrics_url

logger = logging.getLogger(__name__)

TAB = {"title": "Retry storm", "key": "storm"}
SCRIPT_SRC = "/storm/view.js"
#: Seconds between readings.
INTERVAL_S = 1.0
NO_CHAOS = (
    "Outages are not shaded: start Locust with --chaos-url (the chaos API of retrystorm chaos serve) "
    "and pause targets through it, from the Chaos tab or its HTTP API."
)


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


class StormView:
    """The readings of one web UI's process and what ``GET /storm/series`` answers."""

    def __init__(
        self,
        registry: CollectorRegistry,
        host: Callable[[], str | None],
        *,
        target_metrics: str,
        gauge: TargetGauge,
        outages: OutageSource,
        clock: Callable[[], float] = time.monotonic,
        client: Callable[[], str] | None = None,
    ) -> None:
        self.registry = registry
        self.client = client
        #: What retried this run's requests (:func:`retried_by`), from its start.
        self.run_client: str | None = None
        self.host = host
        self.target_metrics = target_metrics
        self.gauge = gauge
        self.outages = outages
        self.clock = clock
        self.history = StormHistory(WINDOW_S)
        self.runs = 0
        #: Readings since the run started (since the view started, before any run): each one's ``tick``.
        self.ticks = 0

    def sample(self) -> None:
        """Take one reading: the client counters now, then the target's gauge (or a gap)."""
        at_s, now_utc = self.clock(), _utc_now()
        client = client_reading(self.registry)
        in_flight = self.gauge.read(self.metrics_url())
        target = TargetReading(in_flight) if in_flight is not None else None
        self.ticks += 1
        self.history.add(Reading(self.ticks, at_s, target, client), now_utc)

    def start_run(self) -> None:
        """A run starts: forget the points, take the counters now as its zero."""
        self.ticks = 0
        self.history.start_run(Reading(0, self.clock(), None, client_reading(self.registry)), _utc_now())
        self.runs += 1
        self.run_client = self.client() if self.client is not None else None

    def metrics_url(self) -> str | None:
        """The target ``/metrics`` scraped now (the host may change with each run from the UI)."""
        return metrics_url(self.target_metrics, self.host())

    def series(self, since_s: float | None) -> dict[str, Any]:
        """What ``GET /storm/series`` answers."""
        points = self.history.since(since_s)
        client = self.outages.client
        outages = outage_bands(self.outages.latest(), self.history) if client is not None else []
        bands = merge_bands([*outages, *spike_bands(list(self.history.points))])
        latest = self.history.points[-1].t_s if self.history.points else 0.0
        return {
            "interval_s": INTERVAL_S,
            "window_s": WINDOW_S,
            "run": self.runs,
            "run_started": self.history.run_started,
            "started_utc": self.history.start_utc.isoformat() if self.history.start_utc else None,
            "client": self.run_client,
            "now_s": round(latest, 3),
            **columns(points),
            "bands": [band.to_json() for band in bands],
            "sources": {
                "in_flight": {"url": self.metrics_url(), "metric": self.gauge.metric, "error": self.gauge.error},
                "outages": {
                    "enabled": client is not None,
                    "url": client.base_url if client is not None else None,
                    "error": self.outages.error if client is not None else NO_CHAOS,
                },
            },
        }


def retried_by(environment: Any) -> str:
    """What retries the requests of the users a run spawns: each user class's ``retried_by``, joined."""
    values = vars(environment.parsed_options or {})
    said = [cls.retried_by(values) for cls in environment.user_classes if hasattr(cls, "retried_by")]
    return ", ".join(dict.fromkeys(said)) or "the locustfile's own users"


def parse_since(text: str | None) -> float | None:
    """``since_s`` of the query: ``None`` when absent; raises ``ValueError`` with one line."""
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < -1e9 or value > 1e9 or len(text) > 40:
        raise ValueError(f"since_s: got {text[:40]!r}, expected seconds since the run started, like 12.5")
    return value


def sample_forever(view: StormView, interval_s: float = INTERVAL_S) -> None:
    """Take a reading every ``interval_s`` (a greenlet); a slow scrape delays, never doubles, the next."""
    next_at = time.monotonic()
    while True:
        try:
            view.sample()
        except Exception:
            logger.exception("retry storm view: a reading failed")
        next_at += interval_s
        now = time.monotonic()
        next_at = max(next_at, now)
        gevent.sleep(next_at - now)


def add_storm_view(
    web_ui: Any, registry: CollectorRegistry, chaos: ChaosClient | None, *, target_metrics: str, in_flight_metric: str
) -> StormView:
    """Add the Retry storm tab, its routes and its sampler to Locust's web UI (master or standalone)."""
    environment = web_ui.environment
    client = ChaosClient(chaos.base_url, chaos.token, timeout_s=CHAOS_TIMEOUT_S) if chaos is not None else None
    view = StormView(
        registry,
        lambda: environment.host,
        target_metrics=target_metrics,
        gauge=TargetGauge(in_flight_metric),
        outages=OutageSource(client),
        client=lambda: retried_by(environment),
    )
    app = web_ui.app
    guard: Callable[[Callable[..., Any]], Callable[..., Any]] = web_ui.auth_required_if_enabled
    web_ui.template_args["extended_tabs"] = [*web_ui.template_args.get("extended_tabs", []), TAB]

    @app.route("/storm/series")  # type: ignore[untyped-decorator]
    @guard
    def storm_series() -> Any:
        try:
            since_s = parse_since(request.args.get("since_s"))
        except ValueError as error:
            return jsonify({"error": str(error)}), 400
        return jsonify(view.series(since_s))

    @app.route("/storm/view.js")  # type: ignore[untyped-decorator]
    def storm_script() -> Response:
        script = resources.files("retrystorm.loadgen").joinpath("storm_view.js").read_bytes()
        return Response(script, mimetype="text/javascript")

    add_page_script(app, SCRIPT_SRC)
    environment.events.test_start.add_listener(lambda **_: view.start_run())
    gevent.spawn(sample_forever, view)
    return view
