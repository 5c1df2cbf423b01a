"""The experiment's dashboard: the server, its users and the outages, on one screen.

Built with Grafana's foundation SDK (``grafana-foundation-sdk``, the Grafana 11.6
schema), so every panel, query, variable and annotation is a typed object the SDK
serialises to Grafana's dashboard JSON. Rows:

* **Target** -- in-flight requests with the modelled delay (log scale, right axis),
  and requests ended per second by outcome: does the *server* recover?
* **Clients** (``$strategy``) -- attempts per second by outcome, goodput, logical
  latency p50/p99, users in backoff, amplification, retry-budget refusals: do its
  *users* recover, and what do the retries cost?
* **Triggers** -- every trigger kind in force as a state timeline (a row per kind, in
  its colour), the chaos controller's outage gauge by target, and each scrape job's
  ``up``: a frozen target fails its scrapes.

Triggers also shade every time series, each kind in the colour the plots and reports
shade it (:data:`TRIGGERS`: pause grey, slow orange, spike purple, errors red): an
annotation query on the kind's metric (a region per window, see
:mod:`retrystorm.dashboards.sdk_extras`), and one on the annotations posted when ``GRAFANA_URL`` is
set (tags ``retrystorm`` and the kind, ``outage`` for a pause: :mod:`retrystorm.chaos.annotations`).
Thresholds cannot do this: they shade value ranges on the y axis, never a span of time.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

from grafana_foundation_sdk.builders import common as common_builders
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus, statetimeline, timeseries
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models import common
from grafana_foundation_sdk.models import dashboard as model

from retrystorm.dashboards import promql
from retrystorm.dashboards.sdk_extras import PrometheusAnnotation

UID = "retrystorm"
TITLE = "retrystorm: retry storms and recovery"
DATASOURCE = model.DataSourceRef(type_val="prometheus", uid="prometheus")
GRAFANA_DATASOURCE = model.DataSourceRef(type_val="grafana", uid="-- Grafana --")
#: Tags of the annotations the chaos controller posts (chaos/annotations.py).
OUTAGE_TAGS = ("retrystorm", "outage")
#: Tags of the annotations ``retrystorm run`` posts for its other triggers (chaos/annotations.py).
TRIGGER_TAGS = {kind: ("retrystorm", kind) for kind in ("slow", "spike", "errors")}
WIDTH = 24
HALF = 12
HEIGHT = 8

PanelBuilder = timeseries.Panel | statetimeline.Panel


def query(expr: str, legend: str, ref_id: str = "A") -> prometheus.Dataquery:
    """A range query on the Prometheus datasource."""
    return prometheus.Dataquery().datasource(DATASOURCE).expr(expr).legend_format(legend).ref_id(ref_id).range()


def _legend() -> common_builders.VizLegendOptions:
    return (
        common_builders.VizLegendOptions()
        .display_mode(common.LegendDisplayMode.TABLE)
        .placement(common.LegendPlacement.BOTTOM)
        .show_legend(True)
        .calcs(["lastNotNull", "max"])
    )


def graph(title: str, description: str, unit: str, *queries: prometheus.Dataquery) -> timeseries.Panel:
    """A time series panel of ``queries`` on the Prometheus datasource."""
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .datasource(DATASOURCE)
        .unit(unit)
        .min(0)
        .fill_opacity(10)
        .show_points(common.VisibilityMode.NEVER)
        .legend(_legend())
        .height(HEIGHT)
        .span(HALF)
    )
    for target in queries:
        panel = panel.with_target(target)
    return panel


def _states(
    title: str, description: str, states: Sequence[tuple[str, str, str]], *targets: prometheus.Dataquery
) -> statetimeline.Panel:
    """A state timeline of ``targets`` whose values map to ``(value, text, color)``."""
    options = {value: model.ValueMappingResult(text=text, color=color) for value, text, color in states}
    panel = statetimeline.Panel()
    for target in targets:
        panel = panel.with_target(target)
    return (
        panel.title(title)
        .description(description)
        .datasource(DATASOURCE)
        .mappings([model.ValueMap(options=options)])
        .show_value(common.VisibilityMode.NEVER)
        .merge_values(True)
        .fill_opacity(80)
        .height(HEIGHT)
        .span(HALF)
    )


def target_panels() -> list[PanelBuilder]:
    """The server side: in flight with the modelled delay, outcomes per second."""
    delay_axis = [
        model.DynamicConfigValue(id_val="unit", value="s"),
        model.DynamicConfigValue(id_val="custom.axisPlacement", value="right"),
        model.DynamicConfigValue(id_val="custom.scaleDistribution", value={"type": "log", "log": 10}),
    ]
    in_flight = graph(
        "Target: in flight and modelled delay",
        "Requests in the model (abandoned ones included) and the model's delay at that load (right axis, log). "
        "The seed's storm: in flight sticks near thousands and the delay overflows.",
        "short",
        query(promql.target_in_flight(), "in flight", "A"),
        query(promql.target_abandoned_in_flight(), "abandoned in flight", "B"),
        query(promql.target_delay(), "modelled delay", "C"),
    ).override_by_query("C", delay_axis)
    outcomes = graph(
        "Target: requests ended per second",
        "Requests the target ended, by outcome: ok (200), rejected (503), abandoned (client gone first).",
        "reqps",
        query(promql.target_outcomes(), "{{outcome}}"),
    )
    return [in_flight, outcomes]


def client_panels() -> list[PanelBuilder]:
    """The users' side, one curve per strategy selected by ``$strategy``."""
    return [
        graph(
            "Clients: attempts per second by outcome",
            "HTTP requests on the wire: sent, and ended by outcome (ok, timeout, connection_error, server_error, "
            "throttled, client_error; a timeout ends one attempt timeout after it was sent).",
            "reqps",
            query(promql.client_attempts_sent(), "sent {{strategy}}", "A"),
            query(promql.client_attempts(), "{{strategy}} {{outcome}}", "B"),
        ),
        graph(
            "Clients: goodput",
            "Successful logical requests per second: what the users get.",
            "reqps",
            query(promql.goodput(), "{{strategy}}"),
        ),
        graph(
            "Clients: logical latency p50 / p99",
            "From a request's first attempt to its outcome, backoff included; quantiles of the summed buckets "
            "of every worker.",
            "s",
            query(promql.request_latency_quantile(0.5), "p50 {{strategy}}", "A"),
            query(promql.request_latency_quantile(0.99), "p99 {{strategy}}", "B"),
        ),
        graph(
            "Clients: users in backoff",
            "Users waiting out a backoff delay, beside the users running.",
            "short",
            query(promql.users_in_backoff(), "in backoff {{strategy}}", "A"),
            query(promql.active_users(), "running {{strategy}}", "B"),
        ),
        graph(
            "Clients: amplification",
            "Attempts sent per logical request started: 1 when nothing is retried.",
            "short",
            query(promql.amplification(), "{{strategy}}"),
        ),
        graph(
            "Clients: retry budget refusals per second",
            "Retries (or attempts) the retry budget refused; 0 without a budget.",
            "short",
            query(promql.budget_refusals(), "{{strategy}}"),
        ),
    ]


@dataclasses.dataclass(frozen=True, slots=True)
class Trigger:
    """One trigger kind as the dashboard draws it: its 0/1 query, its colour, its posted annotations' tags."""

    kind: str
    title: str
    colour: str
    active: Callable[[], str]
    tags: tuple[str, ...]
    #: Where the metric comes from, as its annotation query is named.
    source: str


#: Every trigger kind, in the colours of the plots (experiment/report/panels.py ``TRIGGER_COLOURS``:
#: grey, matplotlib's tab:orange, tab:purple and tab:red), written in hex for Grafana.
TRIGGERS = (
    Trigger("pause", "pause (outage)", "#808080", promql.pause_active, OUTAGE_TAGS, "chaos metric"),
    Trigger(
        "slow", "slow (capacity cut)", "#ff7f0e", promql.slow_active, TRIGGER_TAGS["slow"], "target and chaos metrics"
    ),
    Trigger("spike", "spike (load)", "#9467bd", promql.spike_active, TRIGGER_TAGS["spike"], "client metric"),
    Trigger("errors", "errors (error burst)", "#d62728", promql.errors_active, TRIGGER_TAGS["errors"], "target metric"),
)
PAUSE_COLOUR = TRIGGERS[0].colour


def trigger_timeline() -> statetimeline.Panel:
    """A row per trigger kind, coloured by its kind while it is in force."""
    refs = [chr(ord("A") + index) for index in range(len(TRIGGERS))]
    panel = _states(
        "Triggers in force",
        "A row per trigger kind, shaded in its kind's colour (as the plots shade it) while it is in force: "
        "pause (the chaos outage gauge), slow (the target's capacity ratio below 1, or a chaos CPU throttle), "
        "spike (the clients' load factor above 1), errors (the target's fault rule armed).",
        [("0", "none", "transparent")],
        *(query(trigger.active(), trigger.kind, ref) for trigger, ref in zip(TRIGGERS, refs, strict=True)),
    ).span(WIDTH)
    for trigger, ref in zip(TRIGGERS, refs, strict=True):
        mapping = {"0": {"text": "none", "color": "transparent"}, "1": {"text": trigger.title, "color": trigger.colour}}
        panel = panel.override_by_query(
            ref, [model.DynamicConfigValue(id_val="mappings", value=[{"type": "value", "options": mapping}])]
        )
    return panel


def outage_panels() -> list[PanelBuilder]:
    """Triggers in force, outages by target, and the scrapes that fail while a target is frozen."""
    paused = _states(
        "Outages",
        "The chaos controller's outage gauge: red while a target is paused.",
        [("0", "running", "green"), ("1", "paused", "red")],
        query(promql.outage_active(), "{{target}}"),
    )
    scrapes = _states(
        "Scrapes",
        "Prometheus' up for each job: a frozen target cannot answer its scrape.",
        [("0", "down", "red"), ("1", "up", "green")],
        query(promql.scrape_up(), "{{job}}"),
    )
    return [trigger_timeline(), paused, scrapes]


def strategy_variable() -> dash.QueryVariable:
    """``$strategy``: every strategy label the load generator reported; All is ``.*``."""
    return (
        dash.QueryVariable(promql.STRATEGY_VARIABLE)
        .label("Strategy")
        .datasource(DATASOURCE)
        .query(promql.strategy_values())
        .refresh(model.VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(model.VariableSort.ALPHABETICAL_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".*")
        .current(model.VariableOption(selected=True, text="All", value="$__all"))
    )


def outage_annotations() -> list[cogbuilder.Builder[model.AnnotationQuery]]:
    """Outages from the chaos metric (regions) and from the annotations the controller posts."""
    from_metric = (
        PrometheusAnnotation()
        .name("Outages (chaos metric)")
        .datasource(DATASOURCE)
        .enable(True)
        .icon_color(PAUSE_COLOUR)
        .expr(promql.outage_active())
        .step("1s")
        .title_format("Outage of {{target}}")
        .text_format("{{target}} paused by the chaos controller")
        .tag_keys("target")
    )
    posted = (
        dash.AnnotationQuery()
        .name("Outages (posted by the chaos controller)")
        .datasource(GRAFANA_DATASOURCE)
        .enable(True)
        .icon_color(PAUSE_COLOUR)
        .target(dash.AnnotationTarget().type("tags").tags(list(OUTAGE_TAGS)).match_any(False).limit(100))
    )
    return [from_metric, posted]


def trigger_annotations() -> list[cogbuilder.Builder[model.AnnotationQuery]]:
    """The other trigger kinds, each from its metric (regions) and from the annotations ``retrystorm run`` posts."""
    found: list[cogbuilder.Builder[model.AnnotationQuery]] = []
    for trigger in TRIGGERS[1:]:
        name = trigger.kind.capitalize()
        found.append(
            PrometheusAnnotation()
            .name(f"{name} ({trigger.source})")
            .datasource(DATASOURCE)
            .enable(True)
            .icon_color(trigger.colour)
            .expr(trigger.active())
            .step("1s")
            .title_format(f"Trigger: {trigger.title}")
            .text_format(f"a {trigger.kind} trigger in force")
        )
        found.append(
            dash.AnnotationQuery()
            .name(f"{name} (posted by retrystorm run)")
            .datasource(GRAFANA_DATASOURCE)
            .enable(True)
            .icon_color(trigger.colour)
            .target(dash.AnnotationTarget().type("tags").tags(list(trigger.tags)).match_any(False).limit(100))
        )
    return found


def build() -> dash.Dashboard:
    """The dashboard as an SDK builder."""
    board = (
        dash.Dashboard(TITLE)
        .uid(UID)
        .description("Retry strategies against a target that stalls: does the server come back, do its users?")
        .tags(["retrystorm"])
        .time("now-15m", "now")
        .refresh("5s")
        .timezone("browser")
        .tooltip(model.DashboardCursorSync.CROSSHAIR)
        .editable()
        .with_variable(strategy_variable())
        .annotations([*outage_annotations(), *trigger_annotations()])
    )
    ids = itertools.count(1)
    for row, panels in (("Target", target_panels()), ("Clients", client_panels()), ("Triggers", outage_panels())):
        board = board.with_row(dash.Row(row).id(next(ids)))
        for panel in panels:
            board = board.with_panel(panel.id(next(ids)))
    return board


def dashboard_json() -> dict[str, Any]:
    """The dashboard as Grafana's JSON model (plain dicts, lists and scalars)."""
    encoded: dict[str, Any] = json.loads(json.dumps(build().build(), cls=JSONEncoder))
    return encoded
