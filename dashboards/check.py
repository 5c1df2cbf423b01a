"""Run a dashboard's queries against a real Prometheus: which panels would show nothing?

Uses Prometheus' HTTP API ``GET /api/v1/query_range``
(https://prometheus.io/docs/prometheus/latest/querying/api/#range-queries), the call
Grafana's Prometheus datasource makes for a range panel. A query Prometheus rejects
raises :class:`QueryFailedError` naming the panel; a query that returns no series is
reported by :func:`empty_queries`.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

from retrystorm.dashboards.queries import PanelQuery
from retrystorm.errors import RetrystormError


class QueryFailedError(RetrystormError):
    """Prometheus could not be asked, or refused a query."""


def query_range(
    prometheus_url: str, expr: str, *, start_s: float, end_s: float, step_s: float = 1.0, timeout_s: float = 10.0
) -> list[dict[str, Any]]:
    """The series ``expr`` returns over ``[start_s, end_s]`` (Unix seconds): ``[{metric, values}]``."""
    if urllib.parse.urlsplit(prometheus_url).scheme not in ("http", "https"):
        raise QueryFailedError(f"prometheus url: got {prometheus_url!r}, expected http://HOST:PORT")
    params = urllib.parse.urlencode({"query": expr, "start": f"{start_s:.3f}", "end": f"{end_s:.3f}", "step": step_s})
    url = f"{prometheus_url.rstrip('/')}/api/v1/query_range?{params}"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - http(s) checked above
            body = json.loads(response.read())
    except urllib.error.HTTPError as error:
        body = json.loads(error.read() or b"{}")
    except (OSError, ValueError) as error:
        raise QueryFailedError(f"cannot query {prometheus_url}: {error}") from error
    if body.get("status") != "success":
        raise QueryFailedError(f"{expr!r}: {body.get('errorType', 'error')}: {body.get('error', body)}")
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def run_queries(
    prometheus_url: str, queries: Iterable[PanelQuery], *, start_s: float, end_s: float, step_s: float = 1.0
) -> list[tuple[PanelQuery, list[dict[str, Any]]]]:
    """Each query with the series it returned; a refused query raises naming its panel."""
    results = []
    for query in queries:
        try:
            series = query_range(prometheus_url, query.expr, start_s=start_s, end_s=end_s, step_s=step_s)
        except QueryFailedError as error:
            raise QueryFailedError(f"panel {query.panel!r} ({query.ref_id}): {error}") from error
        results.append((query, series))
    return results


def empty_queries(
    prometheus_url: str, queries: Sequence[PanelQuery], *, start_s: float, end_s: float, step_s: float = 1.0
) -> list[PanelQuery]:
    """The queries that return no series at all: their panels would show "No data"."""
    ran = run_queries(prometheus_url, queries, start_s=start_s, end_s=end_s, step_s=step_s)
    return [query for query, series in ran if not series]
