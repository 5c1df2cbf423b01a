"""Grafana annotations for outages: one per outage, posted when it ends, never in the way.

When ``GRAFANA_URL`` is set (credentials from ``GRAFANA_TOKEN``, or ``GRAFANA_USER``
and ``GRAFANA_PASSWORD``), :func:`annotations_from_env` returns an
:class:`~chaos.controller.OutageListener` that posts, for each outage, one region
annotation through :class:`~retrystorm.grafana.GrafanaClient`: ``POST /api/annotations`` with ``time`` (the
pause) and ``timeEnd`` (the resume) in epoch milliseconds, ``tags``
(``retrystorm``, ``outage``, the target, the scenario when known) and ``text``
(https://grafana.com/docs/grafana-cloud/developer-resources/api-reference/http-api/api-legacy/annotations/).
It is an organization annotation (no dashboard): the dashboard shows it through its
tag query on ``retrystorm`` and ``outage`` (:mod:`dashboards.experiment`).

Posting runs in a worker thread (``asyncio.to_thread``), after the outage has ended,
so a slow or failing Grafana never delays a resume or blocks the event loop; any
failure is logged as a warning and the run goes on.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import logging
from collections.abc import Mapping
from typing import Protocol

from chaos.controller import Outage, OutageListener
from retrystorm.errors import UserError
from retrystorm.grafana import GrafanaClient, GrafanaSettings

log = logging.getLogger(__name__)

TAGS = ("retrystorm", "outage")


@dataclasses.dataclass(frozen=True, slots=True)
class OutageAnnotation:
    """What Grafana is told about one outage."""

    time_ms: int
    time_end_ms: int
    tags: tuple[str, ...]
    text: str

    @classmethod
    def of(cls, outage: Outage, paused_s: float, scenario: str | None = None) -> OutageAnnotation:
        """The annotation of an ended ``outage`` that paused its target for ``paused_s``."""
        start_ms = _epoch_ms(outage.started_utc)
        end_ms = _epoch_ms(outage.ended_utc) if outage.ended_utc else start_ms + round(paused_s * 1000)
        where = f" (scenario {scenario})" if scenario else ""
        text = f"outage of {outage.target} for {paused_s:.1f} s{where}: {outage.end_reason}"
        if outage.error:
            text += f"; error: {outage.error}"
        tags = (*TAGS, outage.target, *((scenario,) if scenario else ()))
        return cls(start_ms, max(start_ms, end_ms), tags, text)


def _epoch_ms(utc: str) -> int:
    return round(datetime.datetime.fromisoformat(utc).timestamp() * 1000)


class AnnotationPoster(Protocol):
    """Sends one annotation somewhere; may block, may raise."""

    def post(self, annotation: OutageAnnotation) -> None: ...


class GrafanaPoster:
    """Posts annotations to a Grafana: ``POST /api/annotations``, an organization annotation."""

    def __init__(self, client: GrafanaClient) -> None:
        self.client = client

    def post(self, annotation: OutageAnnotation) -> None:
        """Send ``annotation``; :class:`~retrystorm.grafana.GrafanaRequestError` if Grafana refuses it."""
        self.client.post(
            "/api/annotations",
            {
                "time": annotation.time_ms,
                "timeEnd": annotation.time_end_ms,
                "tags": list(annotation.tags),
                "text": annotation.text,
            },
        )


class GrafanaAnnotations(OutageListener):
    """An outage listener that posts one annotation per ended outage, off the event loop."""

    def __init__(self, poster: AnnotationPoster, *, scenario: str | None = None) -> None:
        self.poster = poster
        self.scenario = scenario
        self._pending: set[asyncio.Task[None]] = set()

    def outage_ended(self, outage: Outage, paused_s: float) -> None:
        if outage.end_reason == "pause failed":
            return  # the target was never paused: nothing to show
        annotation = OutageAnnotation.of(outage, paused_s, self.scenario)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._post(annotation)
            return
        task = loop.create_task(asyncio.to_thread(self._post, annotation), name=f"annotate {outage.id}")
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _post(self, annotation: OutageAnnotation) -> None:
        try:
            self.poster.post(annotation)
        except Exception as error:  # whatever Grafana (or the network) does, the run goes on
            log.warning("could not post the outage annotation to Grafana (%s): %s", annotation.text, error)
        else:
            log.info("posted outage annotation to Grafana: %s", annotation.text)

    async def drain(self) -> None:
        """Wait for the posts under way (each bounded by the client's timeout)."""
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)


def annotations_from_env(
    scenario: str | None = None, environ: Mapping[str, str] | None = None
) -> GrafanaAnnotations | None:
    """A :class:`GrafanaAnnotations` when ``GRAFANA_URL`` is set, else ``None``.

    Bad settings (a malformed URL, a token *and* a user) disable annotations with a
    warning: annotations are a convenience and must never stop an outage or a run.
    """
    try:
        settings = GrafanaSettings.from_env(environ)
    except UserError as error:
        log.warning("Grafana annotations are off: %s", error)
        return None
    if settings is None:
        return None
    log.info("outages will be annotated in Grafana at %s", settings.where())
    return GrafanaAnnotations(GrafanaPoster(GrafanaClient(settings)), scenario=scenario)
