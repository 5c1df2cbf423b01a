"""The "Chaos" tab of Locust's web UI: list the chaos targets, pause and resume them.

Wired through Locust's web UI extension points: the tab is one of the UI's
``extended_tabs`` (template arguments), its data and actions are routes on Locust's
Flask app, and its content is drawn by ``chaos_tab.js``, which the index page loads.
(Locust's built-in React UI draws an extended tab as a read-only table only; buttons
need a script of their own.)

Routes, all proxied server-side to the chaos API at ``--chaos-url`` so the browser never
talks to it (no CORS, and the token never reaches the page):

* ``GET /chaos/targets``: ``{"enabled", "url", "targets": [{backend, target, state, outages}]}``
* ``POST /chaos/pause`` ``{"target", "duration", "backend"?}``: the outage started
* ``POST /chaos/resume`` ``{"target", "backend"?}``: the outages ended
* ``GET /chaos/tab.js``: the tab's script

Errors answer ``{"error": "one readable line"}`` with the chaos API's status (404
unknown target, 403 refused, 400 bad duration) or 502 when it cannot be reached. The
routes need the web UI's token when one is set (``--web-token``, or beyond loopback the chaos token); the web
UI's request guard
(:mod:`retrystorm.loadgen.web_guard`) refuses what another site's page sends, any body but
JSON, and foreign ``Host`` names without a token. Without ``--chaos-url`` the tab explains how
to turn it on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib import resources
from typing import Any

from flask import Response, jsonify, request

from retrystorm.chaos.client import ChaosApiError, ChaosClient
from retrystorm.loadgen.page_scripts import add_page_script

logger = logging.getLogger(__name__)

TAB = {"title": "Chaos", "key": "chaos"}
SCRIPT_SRC = "/chaos/tab.js"
HOW_TO_ENABLE = (
    "Chaos is off. Start the chaos API (retrystorm chaos serve --target target=PID) and start Locust "
    "with --chaos-url http://127.0.0.1:8071 (and --chaos-token or RETRYSTORM_CHAOS_TOKEN when it needs one)."
)


def _script() -> bytes:
    return resources.files("retrystorm.loadgen").joinpath("chaos_tab.js").read_bytes()


def _fail(status: int, message: str) -> tuple[Response, int]:
    return jsonify({"error": message}), status


def _json_body(example: str) -> dict[str, Any]:
    body = request.get_json(silent=True)
    if not isinstance(body, dict):
        raise ChaosApiError(400, f"body: expected a JSON object like {example}")
    return body


def _text_field(body: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = body.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ChaosApiError(400, f"{name}: expected a non-empty string, got {value!r}")
    return value.strip()


class ChaosTab:
    """The Chaos tab's routes on one web UI, calling the chaos API through ``client`` (``None``: off)."""

    def __init__(self, client: ChaosClient | None) -> None:
        self.client = client

    def targets(self) -> dict[str, Any]:
        """What ``GET /chaos/targets`` answers on success."""
        if self.client is None:
            return {"enabled": False, "url": None, "message": HOW_TO_ENABLE, "targets": []}
        return {"enabled": True, "url": self.client.base_url, "targets": self.client.overview()}

    def pause(self, body: dict[str, Any]) -> dict[str, Any]:
        """Start an outage; raises :class:`ChaosApiError`."""
        client = self._client()
        target = _text_field(body, "target") or ""
        duration = body.get("duration")
        if isinstance(duration, int | float) and not isinstance(duration, bool):
            duration = f"{duration}s"
        if not isinstance(duration, str) or not duration.strip():
            raise ChaosApiError(400, f"duration: expected a duration like 30s, got {duration!r}")
        outage = client.pause(target, duration.strip(), _text_field(body, "backend", required=False))
        logger.info("chaos: paused %s for %s (outage %s)", target, duration, outage.get("id"))
        return {"outage": outage}

    def resume(self, body: dict[str, Any]) -> dict[str, Any]:
        """End the active outages of a target; raises :class:`ChaosApiError`."""
        client = self._client()
        target = _text_field(body, "target") or ""
        ended = client.resume(target, _text_field(body, "backend", required=False))
        logger.info("chaos: resumed %s (outages %s)", target, ", ".join(str(o.get("id")) for o in ended))
        return {"resumed": ended}

    def _client(self) -> ChaosClient:
        if self.client is None:
            raise ChaosApiError(409, HOW_TO_ENABLE)
        return self.client


def add_chaos_tab(web_ui: Any, url: str | None, token: str) -> ChaosTab:
    """Add the Chaos tab and its routes to Locust's web UI (master or standalone only)."""
    tab = ChaosTab(ChaosClient(url, token) if url else None)
    app = web_ui.app
    guard: Callable[[Callable[..., Any]], Callable[..., Any]] = web_ui.auth_required_if_enabled
    web_ui.template_args["extended_tabs"] = [*web_ui.template_args.get("extended_tabs", []), TAB]

    def answer(action: Callable[[], dict[str, Any]]) -> Any:
        try:
            return jsonify(action())
        except ChaosApiError as error:
            logger.warning("chaos tab: %s", error.message)
            return _fail(error.status, error.message)

    @app.route("/chaos/targets")  # type: ignore[untyped-decorator]
    @guard
    def chaos_targets() -> Any:
        return answer(tab.targets)

    actions = {
        "pause": (tab.pause, '{"target": "target", "duration": "30s"}'),
        "resume": (tab.resume, '{"target": "target"}'),
    }

    @app.route("/chaos/<action>", methods=["POST"])  # type: ignore[untyped-decorator]
    @guard
    def chaos_action(action: str) -> Any:
        if action not in actions:
            return _fail(404, f"no chaos action {action!r}; use pause or resume")
        run, example = actions[action]
        return answer(lambda: run(_json_body(example)))

    @app.route("/chaos/tab.js")  # type: ignore[untyped-decorator]
    def chaos_script() -> Response:
        return Response(_script(), mimetype="text/javascript")

    add_page_script(app, SCRIPT_SRC)

    return tab
