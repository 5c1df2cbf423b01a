"""A recorded-contract stub of the Grafana HTTP API endpoints retrystorm calls.

Grafana cannot run on these machines, so ``retrystorm dashboards push`` and the
outage annotations are tested against this small real HTTP server on 127.0.0.1. It
implements only what :class:`retrystorm.grafana.GrafanaClient` sends for us, with the
request and response shapes of Grafana's HTTP API documentation, and refuses what
Grafana refuses:

* ``GET /api/health`` -> ``{"commit", "database": "ok", "version"}``, no credentials
  needed (https://grafana.com/docs/grafana/v13.0/developer-resources/api-reference/http-api/api-legacy/other/).
* ``GET /api/folders`` -> ``[{"id", "uid", "title", "url"}]``; ``POST /api/folders``
  ``{"title", "uid"?}`` -> the folder, 400 without a title, 409 when a folder with
  that title or uid exists (https://grafana.com/docs/grafana/v8.0/http_api/folder/,
  https://docs.aws.amazon.com/grafana/latest/userguide/v10-Grafana-API-Folder.html).
* ``POST /api/dashboards/db`` ``{"dashboard", "folderUid"?, "overwrite"?, "message"?}``
  -> ``{"id", "uid", "url", "status": "success", "version", "slug"}``; 400 when
  ``dashboard`` is missing or has no title, or ``folderUid`` names no folder; 412
  ``{"status": "version-mismatch"}`` when a dashboard with that uid exists and
  ``overwrite`` is not true
  (https://grafana.com/docs/grafana/v11.0/developers/http_api/dashboard/).
* ``POST /api/annotations`` ``{"time", "timeEnd", "tags", "text", "dashboardUID"?,
  "panelId"?}`` -> ``{"message": "Annotation added", "id"}``; 400 when ``text`` is
  missing or the times are not epoch milliseconds; ``GET /api/annotations?tags=``
  lists them (https://grafana.com/docs/grafana-cloud/developer-resources/api-reference/http-api/api-legacy/annotations/).
* Every ``/api`` route but the health check needs credentials, a bearer token or
  basic auth: 401 ``{"message": "Unauthorized"}`` without them or with wrong ones.
  Malformed JSON is 400 ``{"message": "bad request data"}``.

Stricter than Grafana where that costs nothing (annotation times must be integers,
``timeEnd`` not before ``time``): a client that passes here sends what Grafana wants.
"""

from __future__ import annotations

import base64
import dataclasses
import http.server
import itertools
import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

TOKEN = "glsa_stub_token"
USER, PASSWORD = "admin", "stub-password"
VERSION = "11.6.0"


@dataclasses.dataclass
class Received:
    """One request as the stub saw it."""

    method: str
    path: str
    authorization: str
    body: Any
    status: int


class GrafanaStub:
    """The stub's state: folders, dashboards, annotations, every request received."""

    def __init__(self) -> None:
        self.url = ""
        self.requests: list[Received] = []
        self.folders: list[dict[str, Any]] = []
        self.dashboards: dict[str, dict[str, Any]] = {}
        self.annotations: list[dict[str, Any]] = []
        self.fail_with: int | None = None  # answer every /api request with this status (a failing Grafana)
        self._ids = itertools.count(1)
        self.lock = threading.Lock()

    def received(self, method: str, path: str) -> list[Received]:
        """The requests to ``method path`` (path without query), in order."""
        return [entry for entry in self.requests if entry.method == method and entry.path == path]

    # --- the API ---------------------------------------------------------------------------------

    def handle(self, method: str, url: str, authorization: str, raw: bytes) -> tuple[int, Any]:
        parts = urllib.parse.urlsplit(url)
        path, query = parts.path, urllib.parse.parse_qs(parts.query)
        if self.fail_with is not None and path.startswith("/api/"):
            return self.fail_with, {"message": "stub: failing on purpose"}
        if (method, path) == ("GET", "/api/health"):
            return 200, {"commit": "stub", "database": "ok", "version": VERSION}
        if not self.authorized(authorization):
            return 401, {"message": "Unauthorized"}
        body: Any = None
        if method in ("POST", "PUT"):
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                return 400, {"message": "bad request data"}
            if not isinstance(body, dict):
                return 400, {"message": "bad request data"}
        route = {
            ("GET", "/api/folders"): lambda: (200, [self.folder_view(f) for f in self.folders]),
            ("POST", "/api/folders"): lambda: self.create_folder(body),
            ("POST", "/api/dashboards/db"): lambda: self.save_dashboard(body),
            ("POST", "/api/annotations"): lambda: self.add_annotation(body),
            ("GET", "/api/annotations"): lambda: (200, self.find_annotations(query.get("tags", []))),
        }.get((method, path))
        if route is None:
            return 404, {"message": "Not found"}
        return route()

    @staticmethod
    def authorized(authorization: str) -> bool:
        scheme, _, value = authorization.partition(" ")
        if scheme == "Bearer":
            return value == TOKEN
        if scheme == "Basic":
            try:
                return base64.b64decode(value).decode() == f"{USER}:{PASSWORD}"
            except ValueError:
                return False
        return False

    @staticmethod
    def folder_view(folder: dict[str, Any]) -> dict[str, Any]:
        return {key: folder[key] for key in ("id", "uid", "title", "url")}

    def create_folder(self, body: dict[str, Any]) -> tuple[int, Any]:
        title = body.get("title")
        if not isinstance(title, str) or not title.strip():
            return 400, {"message": "folder title cannot be empty"}
        uid = body.get("uid") or f"f{len(self.folders) + 1}"
        if any(f["title"] == title or f["uid"] == uid for f in self.folders):
            return 409, {"message": "a folder with the same name already exists"}
        folder_id = next(self._ids)
        folder = {"id": folder_id, "uid": uid, "title": title, "url": f"/dashboards/f/{uid}/{slug(title)}"}
        folder.update({"hasAcl": False, "canSave": True, "canEdit": True, "canAdmin": True, "version": 1})
        self.folders.append(folder)
        return 200, folder

    def save_dashboard(self, body: dict[str, Any]) -> tuple[int, Any]:
        dashboard = body.get("dashboard")
        if not isinstance(dashboard, dict) or not str(dashboard.get("title", "")).strip():
            return 400, {"message": "Dashboard title cannot be empty"}
        if "overwrite" in body and not isinstance(body["overwrite"], bool):
            return 400, {"message": "bad request data"}
        folder_uid = body.get("folderUid")
        if folder_uid and not any(f["uid"] == folder_uid for f in self.folders):
            return 400, {"message": "folder not found"}
        uid = dashboard.get("uid") or f"d{len(self.dashboards) + 1}"
        existing = self.dashboards.get(uid)
        if existing is not None and body.get("overwrite") is not True:
            return 412, {"message": "The dashboard has been changed by someone else", "status": "version-mismatch"}
        if existing is None and dashboard.get("id") is not None:
            return 404, {"message": "Dashboard not found", "status": "not-found"}
        version = existing["version"] + 1 if existing else 1
        dashboard_id = existing["id"] if existing else next(self._ids)
        self.dashboards[uid] = {"id": dashboard_id, "version": version, "folderUid": folder_uid, "body": body}
        url = f"/d/{uid}/{slug(dashboard['title'])}"
        answer = {"id": dashboard_id, "uid": uid, "url": url, "status": "success", "version": version}
        return 200, {**answer, "slug": slug(dashboard["title"])}

    def add_annotation(self, body: dict[str, Any]) -> tuple[int, Any]:
        text = body.get("text")
        if not isinstance(text, str) or not text:
            return 400, {"message": "Failed to save annotation: text is required"}
        start, end = body.get("time"), body.get("timeEnd")
        for value in (start, end):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                return 400, {"message": "bad request data: time and timeEnd are epoch milliseconds"}
        if start is not None and end is not None and end < start:
            return 400, {"message": "bad request data: timeEnd before time"}
        tags = body.get("tags") or []
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            return 400, {"message": "bad request data: tags are strings"}
        annotation_id = next(self._ids)
        self.annotations.append({**body, "id": annotation_id, "tags": tags})
        return 200, {"message": "Annotation added", "id": annotation_id}

    def find_annotations(self, tags: list[str]) -> list[dict[str, Any]]:
        return [a for a in self.annotations if all(tag in a["tags"] for tag in tags)]


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


class _Handler(http.server.BaseHTTPRequestHandler):
    stub: GrafanaStub

    def _serve(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        authorization = self.headers.get("Authorization", "")
        with self.stub.lock:
            status, answer = self.stub.handle(self.command, self.path, authorization, raw)
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode(errors="replace")
            path = urllib.parse.urlsplit(self.path).path
            self.stub.requests.append(Received(self.command, path, authorization, body, status))
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 - http.server dispatches on these names

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass


@contextmanager
def running_stub() -> Iterator[GrafanaStub]:
    """A stub serving on a free 127.0.0.1 port until the block ends."""
    stub = GrafanaStub()
    handler = type("Handler", (_Handler,), {"stub": stub})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, name="grafana-stub", daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
