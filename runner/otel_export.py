"""``retrystorm run --otel-endpoint URL``: a live run's series and chaos events over OTLP, with the OpenTelemetry SDK.

Off by default; needs the ``otel`` extra (``pip install 'retrystorm[otel]'``; without it the flag is one line, exit
2). What is exported is what the runner reads once a second from the target's and the load generator's ``/metrics``
(or the compose stack's Prometheus): every reading's counters and gauges, as observable instruments whose callbacks
return the latest reading, labelled ``retrystorm.strategy``: a counter counts from the strategy's first reading (its
time 0), as results.json does, so a strategy's exported totals are the totals of the Prometheus readings of the same
run. The names keep the Prometheus ones under OpenTelemetry's conventions: ``retrystorm_client_attempts_total``
is ``retrystorm.client.attempts`` (a counter, unit ``{attempt}``), which a collector's Prometheus exporter turns back
into ``retrystorm_client_attempts_total`` (dots to underscores, ``_total`` for counters, ``_seconds`` for ``s``); an
outcome label is the ``retrystorm.outcome`` attribute. ``retrystorm.client.amplification`` is attempts sent per logical
request started since the load started. The trigger windows (each pause, slow, spike and error burst, as they
happened) are spans ``chaos.<kind>`` with their start and end, attributes ``retrystorm.target``,
``retrystorm.strategy``, ``retrystorm.scenario`` and the kind's settings, sent when the run ends.

Transport: OTLP over gRPC (``--otel-protocol grpc``, the default, port 4317) or HTTP/protobuf (``http/protobuf``, port
4318, paths ``/v1/metrics`` and ``/v1/traces``), as the SDK's exporters send them; metrics every
``--otel-interval`` (default 1 s) and once more when the run ends. A collector that does not answer is a warning and
the run goes on: only the export is lost.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from retrystorm.loadgen.readings import ClientReading, TargetReading
from retrystorm.otel import OtelSettings, providers
from retrystorm.runner.interfaces import LoadHandle, MetricsSource, TargetHandle

log = logging.getLogger(__name__)

SCOPE = "retrystorm.runner"


#: Client counters: OpenTelemetry name -> (unit, description, how to read it by outcome or as one value).
CLIENT_COUNTERS: dict[str, tuple[str, str, Callable[[ClientReading], Mapping[str, float] | float]]] = {
    "retrystorm.client.attempts_started": ("{attempt}", "Attempts sent.", lambda c: c.attempts_started),
    "retrystorm.client.attempts": ("{attempt}", "Attempts ended, by outcome.", lambda c: c.attempts),
    "retrystorm.client.requests": (
        "{request}",
        "Logical requests ended, by outcome (ok, gave_up).",
        lambda c: {"ok": c.requests_ok, "gave_up": c.requests_gave_up},
    ),
    "retrystorm.client.requests_started": ("{request}", "Logical requests started.", lambda c: c.requests_started),
    "retrystorm.client.retries": ("{retry}", "Retries scheduled.", lambda c: c.retries),
    "retrystorm.client.budget_refusals": ("{refusal}", "Refused by the retry budget.", lambda c: c.budget_refusals),
}
CLIENT_GAUGES: dict[str, tuple[str, str, Callable[[ClientReading], float | None]]] = {
    "retrystorm.client.users_in_backoff": (
        "{user}",
        "Users waiting out a backoff delay.",
        lambda c: c.users_in_backoff,
    ),
    "retrystorm.client.active_users": ("{user}", "Users running.", lambda c: c.active_users),
    "retrystorm.client.amplification": (
        "1",
        "Attempts sent per logical request started, since the load started.",
        lambda c: c.attempts_started / c.requests_started if c.requests_started else None,
    ),
}
TARGET_COUNTERS: dict[str, tuple[str, str, Callable[[TargetReading], Mapping[str, float] | float]]] = {
    "retrystorm.target.requests": ("{request}", "Requests the target finished, by outcome.", lambda t: t.served),
}
TARGET_GAUGES: dict[str, tuple[str, str, Callable[[TargetReading], float | None]]] = {
    "retrystorm.target.in_flight_requests": ("{request}", "Requests in flight.", lambda t: t.in_flight),
    "retrystorm.target.delay": ("s", "The model's delay at the current load.", lambda t: t.delay_s),
    "retrystorm.target.open_connections": ("{connection}", "Client connections open.", lambda t: t.connections),
    "retrystorm.target.abandoned_in_flight_requests": (
        "{request}",
        "Requests in flight whose client went away.",
        lambda t: t.abandoned_in_flight,
    ),
}


class OtelExport:
    """The SDK's meter and tracer providers over one OTLP exporter each, fed by the run's readings."""

    def __init__(self, settings: OtelSettings, scenario: str) -> None:
        self.settings = settings
        self.scenario = scenario
        self.providers = providers(settings, {"retrystorm.scenario": scenario})
        self.meters = self.providers.meters
        self.tracers = self.providers.tracers
        self.clients: dict[str, ClientReading] = {}
        self.targets: dict[str, TargetReading] = {}
        #: Each strategy's first reading: counters are exported from it, as results.json counts them.
        self.first_clients: dict[str, ClientReading] = {}
        self.first_targets: dict[str, TargetReading] = {}
        self._instruments()

    def _instruments(self) -> None:
        meter = self.meters.get_meter(SCOPE)
        for name, (unit, text, read) in CLIENT_COUNTERS.items():
            callback = self._callback(self.clients, read, self.first_clients)
            meter.create_observable_counter(name, [callback], unit=unit, description=text)
        for name, (unit, text, served) in TARGET_COUNTERS.items():
            callback = self._callback(self.targets, served, self.first_targets)
            meter.create_observable_counter(name, [callback], unit=unit, description=text)
        for name, (unit, text, gauge) in CLIENT_GAUGES.items():
            meter.create_observable_gauge(name, [self._callback(self.clients, gauge)], unit=unit, description=text)
        for name, (unit, text, level) in TARGET_GAUGES.items():
            meter.create_observable_gauge(name, [self._callback(self.targets, level)], unit=unit, description=text)

    @staticmethod
    def _callback(
        latest: Mapping[str, Any], read: Callable[[Any], Any], first: Mapping[str, Any] | None = None
    ) -> Callable[[Any], Iterable[Any]]:
        """Observations of ``read`` on each strategy's latest reading; with ``first``, less its first reading's."""
        from opentelemetry.metrics import Observation  # noqa: PLC0415 - the otel extra, imported when asked for

        def observe(_options: Any) -> Iterable[Any]:
            for strategy, reading in list(latest.items()):
                value = read(reading)
                start = read(first[strategy]) if first is not None and strategy in first else None
                if isinstance(value, Mapping):
                    for outcome, count in sorted(value.items()):
                        since = count - (start or {}).get(outcome, 0.0)
                        yield Observation(since, {"retrystorm.strategy": strategy, "retrystorm.outcome": outcome})
                elif value is not None:
                    yield Observation(value - (start or 0.0), {"retrystorm.strategy": strategy})

        return observe

    def take(self, strategy: str, target: TargetReading | None, client: ClientReading | None) -> None:
        """The latest reading of ``strategy`` (a part that did not answer keeps the one before)."""
        if target is not None:
            self.first_targets.setdefault(strategy, target)
            self.targets[strategy] = target
        if client is not None:
            self.first_clients.setdefault(strategy, client)
            self.clients[strategy] = client

    def windows(self, document: Mapping[str, Any]) -> None:
        """A span per trigger window of the run's ``results.json`` document, at its wall-clock times."""
        tracer = self.tracers.get_tracer(SCOPE)
        strategies = document.get("run", {}).get("strategies", {})
        for row in document.get("results", []):
            label = str(row["strategy"])
            t0 = strategies.get(label, {}).get("t0_unix_s")
            if t0 is None:
                continue
            for window in _windows_of(row):
                attributes = {
                    "retrystorm.strategy": label,
                    "retrystorm.scenario": self.scenario,
                    **{f"retrystorm.{key}": value for key, value in window.items() if key not in ("start_s", "end_s")},
                }
                start_ns = round((t0 + window["start_s"]) * 1e9)
                span = tracer.start_span(f"chaos.{window['kind']}", start_time=start_ns, attributes=attributes)
                span.end(end_time=max(start_ns, round((t0 + window["end_s"]) * 1e9)))

    def close(self) -> None:
        """Export what is left and stop (each export bounded by :data:`~retrystorm.otel.EXPORT_TIMEOUT_S`)."""
        self.providers.shutdown()


def _windows_of(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The run's windows: its ``triggers`` (every kind) or, with pauses only, its outages."""
    if row.get("triggers"):
        return [dict(window) for window in row["triggers"]]
    return [
        {"kind": "pause", "target": "target", "start_s": start, "end_s": end}
        for start, end in row.get("outages", [])
        if start is not None and end is not None
    ]


class ExportingSource:
    """A :class:`MetricsSource` that hands every reading to an :class:`OtelExport` under its strategy's label."""

    def __init__(self, inner: MetricsSource, export: OtelExport, label_of: Callable[[LoadHandle], str]) -> None:
        self.inner = inner
        self.export = export
        self.label_of = label_of

    async def read(
        self, target: TargetHandle, load: LoadHandle, *, timeout_s: float
    ) -> tuple[TargetReading | None, ClientReading | None]:
        """The inner reading, also exported."""
        target_part, client_part = await self.inner.read(target, load, timeout_s=timeout_s)
        self.export.take(self.label_of(load), target_part, client_part)
        return target_part, client_part

    async def close(self) -> None:
        """Close the inner source."""
        await self.inner.close()


def labels_in_order(labels: Sequence[str]) -> Callable[[LoadHandle], str]:
    """The label of a load handle: the strategies run in turn, each with its own load handle."""
    seen: list[LoadHandle] = []  # held, so that no handle's identity is reused

    def label_of(load: LoadHandle) -> str:
        index = next((i for i, known in enumerate(seen) if known is load), None)
        if index is None:
            seen.append(load)
            index = len(seen) - 1
        return labels[min(index, len(labels) - 1)]

    return label_of
