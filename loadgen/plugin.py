"""Per-process state of the load generator and the Locust event listeners that drive it.

One :class:`Runtime` per Locust process (standalone, master or worker) holds the
metrics registry, the options of the current run, the retry budget shared by the
process's users, and on a master the workers' metric snapshots. :func:`install`
attaches the listeners:

* ``init_command_line_parser``: register the options (:mod:`retrystorm.loadgen.options`); ``--web-host``
  defaults to loopback (:mod:`retrystorm.loadgen.web_guard`);
* ``init``: build the runtime, refuse a web UI beyond loopback without a token and put the request
  guard around it (:mod:`retrystorm.loadgen.web_guard`), add ``/metrics``, the start-form check and the Chaos
  tab (:mod:`retrystorm.loadgen.chaos_tab`) to the web UI, the Retry storm tab
  (:mod:`retrystorm.loadgen.storm_view`) and the start form's help (:mod:`retrystorm.loadgen.start_form`),
  start the ``--metrics-port`` server;
* ``test_start``: read the run's options (after the web form or the master set them),
  start a fresh budget;
* ``report_to_master`` / ``worker_report``: carry metric snapshots to the master
  (:mod:`retrystorm.loadgen.aggregate`), every second (:data:`WORKER_REPORT_INTERVAL_S`); a worker
  also touches ``$RETRYSTORM_HEARTBEAT_FILE`` when set, so a container health check can
  see it alive and reporting;
* ``quitting``: keep ``/metrics`` up for ``--metrics-linger``.

Each runtime also runs a greenlet that measures its event loop's lag (:mod:`retrystorm.loadgen.schedule_lag`).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import random
import time
import weakref
from collections.abc import Collection
from pathlib import Path
from typing import Any, ClassVar

import gevent
import locust.runners
from prometheus_client import CollectorRegistry

from retrystorm.chaos.client import check_chaos_url
from retrystorm.durations import format_duration, parse_duration
from retrystorm.errors import UserError
from retrystorm.loadgen import chaos_tab, otel_plugin, start_form, storm_sources, storm_view, web, web_guard
from retrystorm.loadgen.aggregate import REPORT_KEY, MergedCollector, WorkerSnapshots, exposition_registry, snapshot
from retrystorm.loadgen.flags import add_arguments
from retrystorm.loadgen.metrics import StrategyMetrics, build_metrics
from retrystorm.loadgen.options import LoadOptions, load_options
from retrystorm.loadgen.schedule_lag import watch_loop
from retrystorm.loadgen.spike_player import start_player
from retrystorm.loadgen.strategies import BudgetState, GrpcChannel, channel_of

logger = logging.getLogger(__name__)

#: A file a worker touches with every report to its master (``retrystorm-healthcheck --fresh``).
HEARTBEAT_ENV = "RETRYSTORM_HEARTBEAT_FILE"
#: Seconds between a worker's reports to its master (Locust's default is 3). A master
#: knows only what was last reported, and the runner reads it every second: with 3 s
#: its goodput is a staircase whose 5-s windows deviate from the workers' true goodput
#: by up to ~40 %, moving client recovery (>= 90 % of steady over 5 s) by seconds;
#: with 1 s, by ~3 % (bench/worker_reports.py). A report is one small message.
WORKER_REPORT_INTERVAL_S = 1.0

_RUNTIMES: weakref.WeakKeyDictionary[Any, Runtime] = weakref.WeakKeyDictionary()


@dataclasses.dataclass(frozen=True, slots=True)
class RunState:
    """One run's options, its strategy's metrics, and the budget and connection state the users share."""

    options: LoadOptions
    metrics: StrategyMetrics
    budget: BudgetState | None
    #: The process's gRPC channel model (``grpc-retry`` over HTTP); grpcio's own channel in the gRPC user.
    channel: GrpcChannel | None = None


class Runtime:
    """What the users of one Locust process share."""

    #: The runtime of this process (Locust runs one environment per process); the
    #: report events carry no environment, so they find it here.
    latest: ClassVar[Runtime | None] = None

    def __init__(self, environment: Any) -> None:
        self.environment = environment
        self.registry = CollectorRegistry()
        options = environment.parsed_options
        grpc = options is not None and hasattr(options, "grpc_mode")
        exported = otel_plugin.start(options, grpc=grpc) if options is not None else None
        #: The OpenTelemetry providers this process exports through (``None``: no export).
        self.otel = exported[1] if exported is not None else None
        self.metrics = dataclasses.replace(
            build_metrics(self.registry), otel=exported[0] if exported is not None else None
        )
        self.workers = WorkerSnapshots()
        self.exposition = exposition_registry(MergedCollector(self.registry, self.workers, self.connected_workers))
        self.run: RunState | None = None
        self._user_numbers = itertools.count()
        self.lingering = False
        #: The greenlet playing this test's load spikes (:mod:`retrystorm.loadgen.spike_player`), if any.
        self.spikes: gevent.Greenlet | None = None
        #: The greenlet that measures this process's event-loop lag, for its whole life.
        self.loop_watcher = gevent.spawn(self._watch_loop)

    def _watch_loop(self) -> None:
        """Observe the event loop's lag (:func:`retrystorm.loadgen.schedule_lag.watch_loop`) until the process ends."""
        lag = self.metrics.loop_lag.labels(self.metrics.generator_cpu.name)
        watch_loop(lag.observe, clock=time.monotonic, sleep=gevent.sleep)

    def stop_spikes(self) -> None:
        """End the load spikes of the test that ran, its load factor back to 1 (none: nothing to do).

        A test stopped during a spike would otherwise leave its factor above 1 until the next
        one: the dashboard and the Retry storm tab would shade a spike that is over.
        """
        if self.spikes is not None:
            self.spikes.kill(block=False)
            self.spikes = None
            if self.run is not None:
                self.metrics.show_load_factor(self.run.options.strategy_name, 1.0)

    def start_test(self) -> RunState:
        """Read this run's options, start a fresh shared budget, bind the metrics.

        Raises :class:`UserError` when the options are invalid.
        """
        options = load_options(vars(self.environment.parsed_options or {}))
        budget = options.budget.start() if options.budget is not None else None
        names = [request.name for request in options.request_mix]
        methods = {request.name: self._method(request) for request in options.request_mix}
        grpc = hasattr(self.environment.parsed_options, "grpc_mode")
        channel = None if grpc else channel_of(options.policy.strategy, self._channel_rng(options.seed))
        metrics = self.metrics.for_strategy(options.strategy_name, names, methods)
        self.run = RunState(options, metrics, budget, channel)
        self._user_numbers = itertools.count()
        return self.run

    def _channel_rng(self, seed: int | None) -> random.Random:
        """The random source of the process's channel model (its reconnect jitter), apart from the users'."""
        if seed is None:
            return random.Random()
        return random.Random(f"{seed}:{getattr(self.environment.runner, 'worker_index', 0)}:channel")

    def _method(self, request: Any) -> str:
        """What the OpenTelemetry attributes call a request's method: HTTP's, or the gRPC user's method."""
        grpc_method = getattr(self.environment.parsed_options, "grpc_method", None)
        return str(grpc_method or getattr(request, "method", "GET"))

    def current(self) -> RunState:
        """The state of the running test (read at test start)."""
        return self.run if self.run is not None else self.start_test()

    def new_rng(self) -> random.Random:
        """A random source for the next user: seeded from ``--random-seed`` when given."""
        seed = self.current().options.seed
        if seed is None:
            return random.Random()
        worker = getattr(self.environment.runner, "worker_index", 0)
        return random.Random(f"{seed}:{worker}:{next(self._user_numbers)}")

    def connected_workers(self) -> Collection[str] | None:
        """Ids of the workers still connected to this master; ``None`` if not a master."""
        clients = getattr(self.environment.runner, "clients", None)
        if clients is None:
            return None
        return {worker_id for worker_id, node in clients.items() if node.state != "missing"}


def runtime_of(environment: Any) -> Runtime:
    """The runtime of ``environment``; a clear error if the locustfile did not install it."""
    try:
        return _RUNTIMES[environment]
    except KeyError:
        raise UserError(
            "the retrystorm load generator is not installed in this Locust process: "
            "run `locust -f loadgen/locustfile.py`, or call retrystorm.loadgen.plugin.install(events) "
            "in your locustfile"
        ) from None


def install(events: Any) -> None:
    """Attach the listeners to Locust's ``events`` (call once, from the locustfile); report every second."""
    locust.runners.WORKER_REPORT_INTERVAL = WORKER_REPORT_INTERVAL_S  # read by each worker's report loop
    events.init_command_line_parser.add_listener(lambda parser, **_: add_arguments(parser))
    events.init_command_line_parser.add_listener(lambda parser, **_: storm_sources.add_arguments(parser))
    events.init_command_line_parser.add_listener(lambda parser, **_: web_guard.bind_loopback_by_default(parser))
    events.init_command_line_parser.add_listener(lambda parser, **_: otel_plugin.add_arguments(parser))
    events.init.add_listener(_on_init)
    events.test_start.add_listener(_on_test_start)
    events.test_stop.add_listener(_on_test_stop)
    events.report_to_master.add_listener(_on_report_to_master)
    events.worker_report.add_listener(_on_worker_report)
    events.quitting.add_listener(_on_quitting)
    events.quit.add_listener(_on_quit)


def _on_init(environment: Any, web_ui: Any = None, **_: Any) -> None:
    runtime = Runtime(environment)
    _RUNTIMES[environment] = runtime
    Runtime.latest = runtime
    options = environment.parsed_options
    if web_ui is not None:  # a standalone or master process serving the web UI; never a worker
        _guard(web_ui, options)
        web.add_routes(web_ui, runtime.exposition)
        tab = _add_chaos_tab(web_ui, options)
        storm_view.add_storm_view(
            web_ui,
            runtime.exposition,
            tab.client,
            target_metrics=str(getattr(options, "target_metrics", storm_sources.AUTO)),
            in_flight_metric=str(getattr(options, "in_flight_metric", storm_sources.IN_FLIGHT_METRIC)),
        )
        start_form.add_start_form(web_ui)
    port = getattr(options, "metrics_port", 0) if options is not None else 0
    forked_worker = getattr(options, "worker", False) and getattr(options, "processes", None)
    if port and not forked_worker:  # --processes workers share the flags; their master serves the sum
        web.serve_metrics(runtime.exposition, getattr(options, "web_host", ""), port)


def _guard(web_ui: Any, options: Any) -> None:
    """The web UI on loopback or behind a token, every request through the guard; else one line and exit 2."""
    try:
        web_guard.guard_web_ui(web_ui, options)
    except UserError as error:
        logger.error("retrystorm: %s", error)  # noqa: TRY400 - one line, no traceback
        raise SystemExit(2) from None  # not an Exception: Locust's event hook lets it end the process


def _add_chaos_tab(web_ui: Any, options: Any) -> chaos_tab.ChaosTab:
    url = check_chaos_url(str(getattr(options, "chaos_url", None) or "none"))
    token = str(getattr(options, "chaos_token", None) or "")
    tab = chaos_tab.add_chaos_tab(web_ui, url, token)
    if token:
        options.chaos_token = ""  # a master sends its parsed options to every worker: the token stays here
    return tab


def _on_test_start(environment: Any, **_: Any) -> None:
    runtime = runtime_of(environment)
    runtime.stop_spikes()
    try:
        run = runtime.start_test()
    except UserError as error:
        logger.error("retrystorm: %s; not starting users", error)  # noqa: TRY400 - one line, no traceback
        runtime.run = None
        gevent.spawn(environment.runner.quit)
        return
    strategy = run.options.strategy_name
    runtime.spikes = start_player(
        environment.runner, run.options.spikes, lambda factor: runtime.metrics.show_load_factor(strategy, factor)
    )


def _on_test_stop(environment: Any, **_: Any) -> None:
    runtime = _RUNTIMES.get(environment)
    if runtime is not None:
        runtime.stop_spikes()


def _on_report_to_master(data: dict[str, Any], **_: Any) -> None:
    if Runtime.latest is not None:
        data[REPORT_KEY] = snapshot(Runtime.latest.registry)
    heartbeat = os.environ.get(HEARTBEAT_ENV)
    if heartbeat:  # a worker's liveness for container health checks: it reports, so it runs
        Path(heartbeat).touch()


def _on_worker_report(client_id: str, data: dict[str, Any], **_: Any) -> None:
    if Runtime.latest is not None and REPORT_KEY in data:
        Runtime.latest.workers.update(client_id, data[REPORT_KEY])


def _on_quit(**_: Any) -> None:
    """Export what the OpenTelemetry instruments hold and stop them (each export bounded in time)."""
    runtime = Runtime.latest
    if runtime is not None and runtime.otel is not None:
        runtime.otel.shutdown()
        runtime.otel = None


def _on_quitting(environment: Any, **_: Any) -> None:
    """Linger after a headless run so ``/metrics`` can be scraped; SIGTERM ends it early.

    Locust answers SIGTERM by shutting down again, which fires this event a second
    time: that call returns at once and the process exits.
    """
    options = environment.parsed_options
    if options is None or getattr(options, "worker", False) or not getattr(options, "headless", False):
        return
    runtime = _RUNTIMES.get(environment)
    linger_s = parse_duration(getattr(options, "metrics_linger", "0s"))
    if linger_s <= 0 or runtime is None or runtime.lingering:
        return
    runtime.lingering = True
    logger.info("keeping /metrics up for %s after the run (SIGTERM to exit now)", format_duration(linger_s))
    gevent.sleep(linger_s)
