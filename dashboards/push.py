"""Upload dashboards to an existing Grafana, overwriting.

Grafana's HTTP API, through :class:`~retrystorm.grafana.GrafanaClient`:
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

from retrystorm.grafana import GrafanaClient, GrafanaRequestError, GrafanaSettings

log = logging.getLogger(__name__)

PUSH_MESSAGE = "retrystorm dashboards push"

__all__ = ["PUSH_MESSAGE", "GrafanaRequestError", "Pushed", "folder_uid", "push_dashboards"]


@dataclasses.dataclass(frozen=True, slots=True)
class Pushed:
    """A dashboard Grafana accepted: its uid, version there and URL path."""

    uid: str
    version: int
    url: str


def _mapping(answer: Any, client: GrafanaClient, what: str) -> Mapping[str, Any]:
    if not isinstance(answer, Mapping):
        raise GrafanaRequestError(f"grafana at {client.base}: {what}: expected a JSON object, got {answer!r:.80}")
    return answer


def folder_uid(client: GrafanaClient, title: str) -> str:
    """The uid of the folder called ``title``, created if there is none."""
    folders = client.get("/api/folders")
    if not isinstance(folders, list):
        raise GrafanaRequestError(f"grafana at {client.base}: GET /api/folders: expected a list, got {folders!r:.80}")
    for folder in folders:
        if isinstance(folder, Mapping) and folder.get("title") == title and folder.get("uid"):
            return str(folder["uid"])
    created = _mapping(client.post("/api/folders", {"title": title}), client, "POST /api/folders")
    if not created.get("uid"):
        raise GrafanaRequestError(f"grafana at {client.base}: POST /api/folders: the answer has no uid")
    log.info("created Grafana folder %r (uid %s)", title, created["uid"])
    return str(created["uid"])


def push_dashboards(
    settings: GrafanaSettings, dashboards: Mapping[str, dict[str, Any]], *, folder: str | None = None
) -> list[Pushed]:
    """Upload every dashboard (``uid -> JSON model``), overwriting.

    Errors are one line naming the Grafana (:class:`GrafanaRequestError`, a user error: exit 2).
    """
    client = GrafanaClient(settings)
    folder_ref = {"folderUid": folder_uid(client, folder)} if folder else {}
    pushed = []
    for uid, model in dashboards.items():
        payload = {"dashboard": {**model, "id": None}, "overwrite": True, "message": PUSH_MESSAGE, **folder_ref}
        answer = _mapping(client.post("/api/dashboards/db", payload), client, "POST /api/dashboards/db")
        try:
            version = int(answer.get("version", 0))
        except (TypeError, ValueError):
            version = 0
        pushed.append(Pushed(str(answer.get("uid", uid)), version, str(answer.get("url", ""))))
    return pushed
