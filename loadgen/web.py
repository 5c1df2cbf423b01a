"""``/metrics`` and the start-form check on Locust's web app; ``/metrics`` on its own port.

* ``GET /metrics`` on the web UI's port serves the client metrics in Prometheus text
  format; on a master, summed over its workers (:mod:`retrystorm.loadgen.aggregate`). It keeps
  serving after a run stops, for as long as the web UI runs. It needs no token even
  with ``--web-token``, like most exporters, so Prometheus can scrape it.
* ``POST /swarm`` (the web UI's start button, and Locust's HTTP API) is checked
  before Locust handles it: a bad strategy, budget, think time or duration refuses
  the swarm with ``{"success": false, "message": ...}``, the answer Locust's own form
  displays, and nothing starts. (Locust's form shows the message only with status
  200, as Locust's own checks of that endpoint answer.)
* ``--metrics-port`` serves the same ``/metrics`` with gevent's WSGI server, for
  headless runs and for workers.
"""

from __future__ import annotations

import logging
from typing import Any

from flask import Response, jsonify, request
from gevent.pywsgi import WSGIServer
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, make_wsgi_app

from retrystorm.errors import UserError
from retrystorm.loadgen.options import load_options, overlay_form

logger = logging.getLogger(__name__)


def add_routes(web_ui: Any, registry: CollectorRegistry) -> None:
    """Add ``GET /metrics`` and the ``POST /swarm`` check to Locust's web app."""
    app = web_ui.app
    environment = web_ui.environment

    @app.route("/metrics")  # type: ignore[untyped-decorator]
    def metrics() -> Response:
        return Response(generate_latest(registry), mimetype=CONTENT_TYPE_LATEST)

    @app.before_request  # type: ignore[untyped-decorator]
    def check_swarm() -> Response | None:
        if request.method != "POST" or request.endpoint != "locust.swarm":
            return None
        message = swarm_form_error(vars(environment.parsed_options or {}), request.form)
        if message is None:
            return None
        logger.warning("refused to start: %s", message)
        return jsonify({"success": False, "message": message, "host": environment.host})


def swarm_form_error(values: dict[str, Any], form: Any) -> str | None:
    """What is wrong with a start form's retrystorm fields, or ``None`` if nothing is."""
    try:
        load_options(overlay_form(values, form))
    except UserError as error:
        return str(error)
    return None


def serve_metrics(registry: CollectorRegistry, host: str, port: int) -> WSGIServer | None:
    """Serve ``/metrics`` on ``host:port`` in the background; ``None`` if the port is taken."""
    bind = "" if host in ("*", "") else host
    server = WSGIServer((bind, port), make_wsgi_app(registry), log=None)
    try:
        server.start()
    except OSError as error:
        logger.warning("cannot serve /metrics on port %d: %s", port, error)
        return None
    logger.info("serving /metrics on %s:%d", bind or "*", port)
    return server
