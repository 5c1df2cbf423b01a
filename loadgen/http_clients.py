"""Which client retries the seed's HTTP requests: retrystorm's emulation, or urllib3's own ``Retry``.

One locustfile (``loadgen/locustfile.py``) holds both Locust users, and ``--http-client`` chooses between them:

* ``emulation`` (the default): :class:`~retrystorm.loadgen.user.RetryingUser`, the strategy's retry loop over
  geventhttpclient; any strategy or preset;
* ``urllib3``: :class:`~retrystorm.loadgen.urllib3_user.Urllib3User`, whose retries are urllib3's own ``Retry``
  with the ``urllib3`` preset's settings (:mod:`retrystorm.loadgen.urllib3_settings`).

The choice is a flag on the command line, a scenario's ``http_client:`` (the runner passes the flag), and a
select field of the web UI's start form: each run started from the form runs the user it names. The process
that dispatches users (standalone or master) keeps only the chosen class in ``environment.user_classes``, so
Locust never mixes the two; a worker keeps both and spawns the one its master names. Before a swarm starts, a
urllib3 run with a strategy urllib3 cannot run is refused in one line, as a bad option is; headless, it exits 2.
The Retry storm tab says which client each run used (each user's ``retried_by``).
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping
from typing import Any

import gevent
from flask import Response, jsonify, request

from retrystorm.errors import UserError
from retrystorm.loadgen.options import load_options, overlay_form
from retrystorm.loadgen.plugin import runtime_of
from retrystorm.loadgen.urllib3_settings import real_preset

logger = logging.getLogger(__name__)

EMULATION = "emulation"
URLLIB3 = "urllib3"
#: The choices of ``--http-client``.
CLIENTS = (EMULATION, URLLIB3)
HELP = (
    "emulation: retrystorm's strategy retries (any strategy); urllib3: urllib3's own Retry does, "
    "with --retry-strategy urllib3:total=N,backoff_factor=S,..."
)


def check_client(text: str) -> str:
    """``--http-client`` (argparse ``type``): one of :data:`CLIENTS`."""
    value = text.strip().lower()
    if value not in CLIENTS:
        raise argparse.ArgumentTypeError(f"got {text[:40]!r}, expected one of {', '.join(CLIENTS)}")
    return value


def chosen(values: Mapping[str, Any]) -> str:
    """The client the options (``vars(parsed_options)``, or a start form) choose."""
    return check_client(str(values.get("http_client") or EMULATION))


def refusal(values: Mapping[str, Any]) -> str | None:
    """Why the options cannot run with their client (one line), or ``None``."""
    if chosen(values) != URLLIB3:
        return None
    try:
        real_preset(load_options(values).policy.strategy, values)
    except UserError as error:
        return f"--http-client urllib3: {error}"
    return None


def install(events: Any, users: Mapping[str, type]) -> None:
    """Add ``--http-client`` and run the user of ``users`` (one per :data:`CLIENTS` key) that it chooses."""

    def add_argument(parser: Any, **_: Any) -> None:
        parser.add_argument("--http-client", default=EMULATION, choices=CLIENTS, type=check_client,
                            include_in_web_ui=True, help=HELP)  # fmt: skip

    def on_init(environment: Any, web_ui: Any = None, **_: Any) -> None:
        values = vars(environment.parsed_options or argparse.Namespace())
        dispatches = not values.get("worker", False)
        if values.get("headless", False) or not dispatches:
            _exit_on_refusal(values)
        if dispatches:
            environment.user_classes = [users[chosen(values)]]
        if web_ui is not None:
            _check_swarms(web_ui, users)

    def on_test_start(environment: Any, **_: Any) -> None:
        values = vars(environment.parsed_options or argparse.Namespace())
        message = refusal(values)
        if message is None:
            logger.info("retrystorm: this run's client: %s", values.get("http_client", EMULATION))
            return
        logger.error("retrystorm: %s; not starting users", message)
        runtime_of(environment).run = None
        gevent.spawn(environment.runner.quit)

    events.init_command_line_parser.add_listener(add_argument)
    events.init.add_listener(on_init)
    events.test_start.add_listener(on_test_start)


def _exit_on_refusal(values: Mapping[str, Any]) -> None:
    """Headless (or a worker): refuse at once what the client cannot run, one line and exit 2, as a bad flag."""
    message = refusal(values)
    if message is not None:
        logger.error("retrystorm: %s", message)
        raise SystemExit(2)  # not an Exception: Locust's event hook lets it end the process


def _check_swarms(web_ui: Any, users: Mapping[str, type]) -> None:
    """Before each ``POST /swarm``: refuse what the form's client cannot run, else make it the user to spawn."""
    environment = web_ui.environment

    @web_ui.app.before_request  # type: ignore[untyped-decorator]
    def choose_client() -> Response | None:
        if request.method != "POST" or request.endpoint != "locust.swarm" or "http_client" not in request.form:
            return None
        form_values = overlay_form(vars(environment.parsed_options or argparse.Namespace()), request.form)
        values = {**form_values, "http_client": request.form["http_client"]}
        try:
            message = refusal(values)
        except argparse.ArgumentTypeError as error:
            message = f"--http-client: {error}"
        user = users.get(str(request.form["http_client"]).strip().lower())
        running = environment.runner is not None and environment.runner.state in ("spawning", "running")
        if message is None and running and environment.user_classes != [user]:
            message = "--http-client: stop the run before changing its client (Locust keeps the users it spawned)"
        if message is not None:
            logger.warning("refused to start: %s", message)
            return jsonify({"success": False, "message": message, "host": environment.host})
        environment.user_classes = [user]
        return None
