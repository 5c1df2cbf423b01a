"""Upload dashboards to an existing Grafana through ``grafana-client``, overwriting.

Grafana's legacy HTTP API, as ``grafana-client`` calls it:
``GET /api/folders`` and ``POST /api/folders`` ``{"title"}`` to find or create the
folder (https://grafana.com/docs/grafana/v8.0/http_api/folder/), then
``POST /api/dashboards/db`` ``{"dashboard", "folderUid", "overwrite": true,
"message"}`` per dashboard, with the dashboard's ``id`` null so its ``uid`` decides
what is replaced (https://grafana.com/docs/grafana/v11.0/developers/http_api/dashboard/).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import niquests
from grafana_client.client import GrafanaException

from retrystorm.errors import UserError
from retrystorm.grafana import GrafanaSettings, connect

log = logging.getLogger(__name__)

PUSH_MESSAGE = "retrystorm dashboards push"


class GrafanaRequestError(UserError):
    """Grafana could not be reached, or refused a request (bad URL, credentials or payload)."""


@dataclasses.dataclass(frozen=True, slots=True)
class Pushed:
    """A dashboard Grafana accepted: its uid, version there and URL path."""

    uid: str
    version: int
    url: str


def _describe(error: Exception) -> str:
    if isinstance(error, GrafanaException):
        detail = error.response.get("message") if isinstance(error.response, dict) else None
        return f"HTTP {error.status_code}: {detail or error.message}" if error.status_code else str(error.message)
    return f"{type(error).__name__}: {error}"


def folder_uid(api: Any, title: str) -> str:
    """The uid of the folder called ``title``, created if there is none (``api``: a ``GrafanaApi``)."""
    for folder in api.folder.get_all_folders():
        if folder.get("title") == title:
            return str(folder["uid"])
    created = api.folder.create_folder(title)
    log.info("created Grafana folder %r (uid %s)", title, created["uid"])
    return str(created["uid"])


def push_dashboards(
    settings: GrafanaSettings, dashboards: Mapping[str, dict[str, Any]], *, folder: str | None = None
) -> list[Pushed]:
    """Upload every dashboard (``uid -> JSON model``), overwriting; one-line errors."""
    api: Any = connect(settings)  # grafana-client's methods are untyped
    pushed = []
    try:
        folder_ref = {"folderUid": folder_uid(api, folder)} if folder else {}
        for uid, model in dashboards.items():
            payload = {"dashboard": {**model, "id": None}, "overwrite": True, "message": PUSH_MESSAGE, **folder_ref}
            answer = api.dashboard.update_dashboard(payload)
            pushed.append(
                Pushed(str(answer.get("uid", uid)), int(answer.get("version", 0)), str(answer.get("url", "")))
            )
    except (GrafanaException, niquests.exceptions.RequestException) as error:
        raise GrafanaRequestError(f"grafana at {settings.where()}: {_describe(error)}") from error
    return pushed
