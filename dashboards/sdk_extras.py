"""What the foundation SDK does not model yet: a Prometheus annotation query's own options.

The SDK's ``AnnotationQuery`` carries ``expr`` but not the Prometheus datasource's
annotation options, which Grafana keeps beside it in the dashboard JSON: ``step``
(the query's resolution; Grafana's default of 60 s would miss a 15 s outage),
``titleFormat``, ``textFormat``, ``tagKeys`` and ``useValueForTime``. Source:
Grafana's Prometheus annotation editor (the "Min step", "Title", "Tags", "Text" and
"Series value as timestamp" fields,
https://grafana.com/docs/grafana/latest/datasources/prometheus/annotations/) and
Grafana's ``PrometheusAnnotationSupport`` (grafana-prometheus ``annotations.ts``),
which reads ``expr``, ``step``, ``titleFormat``, ``textFormat`` and ``tagKeys`` from
the saved query, keeps the samples whose value is above 0 and merges those no further
apart than the step into one region: a 0/1 gauge becomes one shaded band per outage.
"""

from __future__ import annotations

import typing

from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.models import dashboard as models


class PrometheusAnnotationQuery(models.AnnotationQuery):
    """An annotation query on a Prometheus datasource, with its resolution and formats."""

    def __init__(self, *, step: str = "", title_format: str = "", text_format: str = "", tag_keys: str = "") -> None:
        super().__init__()
        self.step = step
        self.title_format = title_format
        self.text_format = text_format
        self.tag_keys = tag_keys
        self.use_value_for_time = False

    def to_json(self) -> dict[str, object]:
        """The SDK's fields plus the Prometheus options that are set."""
        payload = super().to_json()
        extras = {
            "step": self.step,
            "titleFormat": self.title_format,
            "textFormat": self.text_format,
            "tagKeys": self.tag_keys,
        }
        payload.update({key: value for key, value in extras.items() if value})
        payload["useValueForTime"] = self.use_value_for_time
        return payload


class PrometheusAnnotation(builders.AnnotationQuery):
    """Builder of :class:`PrometheusAnnotationQuery`, in the SDK's style."""

    _internal: PrometheusAnnotationQuery

    def __init__(self) -> None:
        super().__init__()
        self._internal = PrometheusAnnotationQuery()

    def step(self, step: str) -> typing.Self:
        """Resolution of the annotation query, e.g. ``1s``."""
        self._internal.step = step
        return self

    def title_format(self, title_format: str) -> typing.Self:
        """Title of each event; ``{{label}}`` is replaced by the series' label."""
        self._internal.title_format = title_format
        return self

    def text_format(self, text_format: str) -> typing.Self:
        """Text of each event; ``{{label}}`` is replaced by the series' label."""
        self._internal.text_format = text_format
        return self

    def tag_keys(self, tag_keys: str) -> typing.Self:
        """Comma-separated labels whose values become the event's tags."""
        self._internal.tag_keys = tag_keys
        return self
