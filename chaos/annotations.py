"""Grafana annotations for outages and the other triggers: one per window, posted when it ends, never in the way.

When ``GRAFANA_URL`` is set (credentials from ``GRAFANA_TOKEN``, or ``GRAFANA_USER``
and ``GRAFANA_PASSWORD``), :func:`annotations_from_env` returns an
:class:`~retrystorm.chaos.controller.OutageListener` that posts, for each outage, one region
annotation through :class:`~retrystorm.grafana.GrafanaClient`: ``POST /api/annotations`` with ``time`` (the
pause) and ``timeEnd`` (the resume) in epoch milliseconds, ``tags``
(``retrystorm``, ``outage``, the target, the scenario when known) and ``text``
(https://grafana.com/docs/grafana-cloud/developer-resources/api-reference/http-api/api-legacy/annotations/).
It is an organization annotation (no dashboard): the dashboard shows it through its
tag query on ``retrystorm`` and ``outage`` (:mod:`retrystorm.dashboards.experiment`).

``retrystorm run`` also posts one per window of its other triggers once it has ended
(:func:`trigger_annotation`): tags ``retrystorm``, the kind (``slow``, ``spike``,
``errors``: :func:`trigger_tags`), the target, the scenario and the strategy; the
dashboard shows each kind through its own tag query, in the kind's colour.

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

from retrystorm.chaos.controller import Outage, OutageListener
from retrystorm.errors import UserError
from retrystorm.grafana import GrafanaClient, GrafanaSettings

log = logging.getLogger(__name__)

TAGS = ("retrystorm", "outage")
#: The trigger kinds annotated besides outages (a pause is an outage: :data:`TAGS`).
TRIGGER_KINDS = ("slow", "spike", "errors")


def trigger_tags(kind: str) -> tuple[str, str]:
    """The tags every annotation of a ``kind`` trigger carries, and the dashboard queries: ``retrystorm``, kind."""
    return ("retrystorm", "outage" if kind == "pause" else kind)


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
        start_ms = _epoch_ms(outage.in_force_utc or outage.started_utc)  # from the moment it was frozen
        end_ms = _epoch_ms(outage.ended_utc) if outage.ended_utc else start_ms + round(paused_s * 1000)
        where = f" (scenario {scenario})" if scenario else ""
        text = f"outage of {outage.target} for {paused_s:.1f} s{where}: {outage.end_reason}"
        if outage.error:
            text += f"; error: {outage.error}"
        tags = (*TAGS, outage.target, *((scenario,) if scenario else ()))
        return cls(start_ms, max(start_ms, end_ms), tags, text)


def trigger_annotation(
    kind: str,
    start_epoch_s: float,
    end_epoch_s: float,
    effect: str,
    *,
    target: str | None = None,
    scenario: str | None = None,
    strategy: str | None = None,
) -> OutageAnnotation:
    """The annotation of one ended trigger window from ``start_epoch_s`` to ``end_epoch_s`` (Unix seconds).

    ``effect`` says what it did (``slow target to 0.4x its capacity``); the text adds how
    long, the scenario and the strategy.
    """
    start_ms = round(start_epoch_s * 1000)
    end_ms = max(start_ms, round(end_epoch_s * 1000))
    where = ", ".join(
        part for part in (scenario and f"scenario {scenario}", strategy and f"strategy {strategy}") if part
    )
    text = f"{effect} for {(end_ms - start_ms) / 1000:.1f} s" + (f" ({where})" if where else "")
    extra = tuple(dict.fromkeys(tag for tag in (target, scenario, strategy) if tag))
    return OutageAnnotation(start_ms, end_ms, (*trigger_tags(kind), *extra), text)


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
    """An outage listener that posts one annotation per ended outage, and any other given to :meth:`submit`
    (``retrystorm run``'s trigger windows), off the event loop."""

    def __init__(self, poster: AnnotationPoster, *, scenario: str | None = None) -> None:
        self.poster = poster
        self.scenario = scenario
        self._pending: set[asyncio.Task[None]] = set()

    def outage_ended(self, outage: Outage, paused_s: float) -> None:
        if outage.in_force_monotonic is None:
            return  # the target was never frozen: nothing to show
        self.submit(OutageAnnotation.of(outage, paused_s, self.scenario))

    def submit(self, annotation: OutageAnnotation) -> None:
        """Post ``annotation`` in a worker thread (at once, outside an event loop); failures are warnings."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._post(annotation)
            return
        task = loop.create_task(asyncio.to_thread(self._post, annotation), name=f"annotate {annotation.text}")
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _post(self, annotation: OutageAnnotation) -> None:
        try:
            self.poster.post(annotation)
        except Exception as error:  # whatever Grafana (or the network) does, the run goes on
            log.warning(
                "could not post the %s annotation to Grafana (%s): %s", annotation.tags[1], annotation.text, error
            )
        else:
            log.info("posted %s annotation to Grafana: %s", annotation.tags[1], annotation.text)

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
    log.info("outages and other triggers will be annotated in Grafana at %s", settings.where())
    return GrafanaAnnotations(GrafanaPoster(GrafanaClient(settings)), scenario=scenario)
