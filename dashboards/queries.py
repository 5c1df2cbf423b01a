"""Every panel's PromQL out of a dashboard's JSON, template variables substituted.

Grafana replaces ``$var``, ``${var}``, ``${var:format}`` and ``[[var]]`` in a query
before sending it to Prometheus
(https://grafana.com/docs/grafana/latest/dashboards/variables/variable-syntax/); a
multi-value variable set to "All" becomes its ``allValue`` (ours: ``.*``), and
``$__rate_interval`` becomes a window of at least four scrape intervals
(https://grafana.com/docs/grafana/latest/datasources/prometheus/template-variables/).
Doing the same here lets a test run exactly what a panel would run against a real
Prometheus, and fail naming the panel that would show nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

#: ``$__rate_interval`` for a 1 s scrape interval: four scrapes plus margin.
DEFAULT_RATE_INTERVAL = "15s"
DEFAULT_RANGE = "5m"
_VARIABLE = re.compile(r"\$\{(?P<braced>\w+)(?::[\w-]+)?\}|\[\[(?P<bracketed>\w+)\]\]|\$(?P<plain>\w+)")


class PanelQuery(NamedTuple):
    """One query of one panel: the panel's title, the query's refId, its PromQL."""

    panel: str
    ref_id: str
    expr: str


class UnknownVariableError(ValueError):
    """A query uses a variable the dashboard does not define."""


def iter_panels(dashboard: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every panel that is not a row, the panels of collapsed rows included, in order."""
    for panel in dashboard.get("panels") or []:
        if panel.get("type") == "row":
            yield from (inner for inner in panel.get("panels") or [] if inner.get("type") != "row")
        else:
            yield panel


def variable_values(dashboard: Mapping[str, Any], overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each template variable's value as Grafana substitutes it by default.

    A variable that can be "All" (or several values) becomes its ``allValue``, or
    ``.*`` without one; any other its current value. ``overrides`` wins.
    """
    values: dict[str, str] = {}
    for variable in (dashboard.get("templating") or {}).get("list") or []:
        name = str(variable["name"])
        if variable.get("includeAll") or variable.get("multi"):
            values[name] = str(variable.get("allValue") or ".*")
        else:
            current = (variable.get("current") or {}).get("value", "")
            values[name] = current if isinstance(current, str) else "|".join(current)
    values.update(overrides or {})
    return values


def substitute(expr: str, values: Mapping[str, str], *, where: str = "query") -> str:
    """``expr`` with every ``$var`` replaced; an unknown variable raises :class:`UnknownVariableError`."""

    def replace(found: re.Match[str]) -> str:
        name = found.group("braced") or found.group("bracketed") or found.group("plain")
        if name not in values:
            raise UnknownVariableError(f"{where}: unknown variable ${name} in {expr!r}; known: {', '.join(values)}")
        return values[name]

    return _VARIABLE.sub(replace, expr)


def _values(
    dashboard: Mapping[str, Any], rate_interval: str, range_window: str, variables: Mapping[str, str] | None
) -> dict[str, str]:
    builtins = {"__rate_interval": rate_interval, "__interval": rate_interval, "__range": range_window}
    return {**builtins, **variable_values(dashboard, variables)}


def panel_queries(
    dashboard: Mapping[str, Any],
    *,
    rate_interval: str = DEFAULT_RATE_INTERVAL,
    range_window: str = DEFAULT_RANGE,
    variables: Mapping[str, str] | None = None,
) -> list[PanelQuery]:
    """Every visible PromQL query of every panel, ready to send to Prometheus.

    ``$__rate_interval`` and ``$__interval`` become ``rate_interval``, ``$__range``
    ``range_window``; template variables their "All" value unless ``variables`` gives
    one (e.g. ``{"strategy": "fixed"}``). Hidden queries and non-PromQL targets are
    left out.
    """
    values = _values(dashboard, rate_interval, range_window, variables)
    found: list[PanelQuery] = []
    for panel in iter_panels(dashboard):
        title = str(panel.get("title", ""))
        for target in panel.get("targets") or []:
            expr = target.get("expr")
            if not expr or target.get("hide"):
                continue
            ref_id = str(target.get("refId", ""))
            found.append(PanelQuery(title, ref_id, substitute(expr, values, where=f"panel {title!r} {ref_id}")))
    return found


def annotation_queries(
    dashboard: Mapping[str, Any],
    *,
    rate_interval: str = DEFAULT_RATE_INTERVAL,
    range_window: str = DEFAULT_RANGE,
    variables: Mapping[str, str] | None = None,
) -> list[PanelQuery]:
    """The PromQL annotation queries, as ``(annotation name, "Anno", expr)``.

    Grafana keeps a Prometheus annotation's query at ``expr`` or at ``target.expr``
    (it moves the first to the second when it loads the dashboard).
    """
    values = _values(dashboard, rate_interval, range_window, variables)
    found: list[PanelQuery] = []
    for annotation in (dashboard.get("annotations") or {}).get("list") or []:
        expr = annotation.get("expr") or (annotation.get("target") or {}).get("expr")
        if not expr or not annotation.get("enable", True):
            continue
        name = str(annotation.get("name", ""))
        found.append(PanelQuery(name, "Anno", substitute(expr, values, where=f"annotation {name!r}")))
    return found
