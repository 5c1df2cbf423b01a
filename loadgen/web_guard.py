"""The Locust web UI of retrystorm's plugin: on loopback by default, a token beyond it, and the shared request guard.

Locust binds its web UI to every interface unless told otherwise (``--web-host`` defaults to ``*``,
locust 2.47 ``argument_parser.py``), and its Flask app answers every origin (``CORS(app)`` in ``web.py``).
With retrystorm's locustfile the UI can also pause targets (the Chaos tab) and start load against any
host (``/swarm``), so the plugin changes both:

* **Loopback by default.** ``--web-host`` defaults to ``127.0.0.1`` (:func:`bind_loopback_by_default`).
* **A token beyond loopback.** Bound to any other address, the UI needs a token, or it does not start:
  one line and exit 2 (:func:`check_bind`), before it binds, as ``chaos serve`` and ``retrystorm target``
  refuse. The token is ``--web-token`` (``RETRYSTORM_WEB_TOKEN``); beyond loopback without one, the chaos
  API's token (``--chaos-token``, ``RETRYSTORM_CHAOS_TOKEN``) serves, since the UI wields that token's
  powers anyway (:func:`web_token`): the compose stack's master, which binds ``0.0.0.0`` inside its
  container, is guarded by the token the stack already sets. Refusing the UI rather than leaving out the
  Chaos tab: without the tab the UI would still start load against any host for anyone who reaches it.
* **Every request passes the guard** (:class:`GuardedApp`, around Locust's WSGI app), with the rules of
  :mod:`retrystorm.request_guard`. With a token: every path but ``/metrics`` needs it, as
  ``Authorization: Bearer TOKEN`` (tools: the runner, curl) or the browser's own login prompt (HTTP
  Basic, any user name, the token as password). Without one: only loopback ``Host`` names (DNS
  rebinding). The plugin's routes (``/chaos/*``, ``/storm/*``) also refuse any request another site's page
  made (``Origin``, ``Sec-Fetch-Site``) and any body but JSON (415). Locust's own routes refuse other
  sites' pages on every method but ``GET``/``HEAD`` (a link from elsewhere to the UI still opens it);
  their bodies stay forms (Locust's start form posts one).
* **No CORS**: ``Access-Control-*`` headers are taken out of every answer, so no other origin reads one.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from typing import Any

from retrystorm.addresses import is_loopback_host
from retrystorm.errors import UserError
from retrystorm.request_guard import Refusal, RequestFacts, RequestGuard

logger = logging.getLogger(__name__)

#: The web UI's address unless ``--web-host`` says otherwise.
DEFAULT_WEB_HOST = "127.0.0.1"
#: Paths of the plugin's own API: the full guard, JSON bodies only.
API_PREFIXES = ("/chaos/", "/storm/")
#: Paths that need no token: Prometheus and container health checks scrape them; they change nothing.
OPEN_PATHS = frozenset({"/metrics"})
#: Methods that only read (a page of another site may link to the UI).
READ_METHODS = frozenset({"GET", "HEAD"})
REALM = "retrystorm web UI"
#: Where the token a client must send comes from, as messages name it.
TOKEN_HINT = "--web-token or RETRYSTORM_WEB_TOKEN; beyond loopback, else the chaos token"  # noqa: S105 - not a token

StartResponse = Callable[..., Any]
WsgiApp = Callable[[dict[str, Any], StartResponse], Iterable[bytes]]


def bind_loopback_by_default(parser: Any) -> None:
    """Make ``--web-host`` default to loopback on Locust's parser (its help says so too)."""
    parser.set_defaults(web_host=DEFAULT_WEB_HOST)
    for action in getattr(parser, "_actions", []):
        if getattr(action, "dest", None) == "web_host":
            action.help = (
                f"Host to bind the web interface to. Defaults to {DEFAULT_WEB_HOST} with retrystorm's plugin; "
                "any other address needs --web-token (or --chaos-token)"
            )


def listens_beyond_loopback(host: str) -> bool:
    """Whether a web UI bound to ``host`` (Locust's: ``""`` or ``*`` for every interface) is reachable beyond it."""
    return host in ("", "*") or not is_loopback_host(host)


def web_token(host: str, token: str, chaos_token: str) -> str:
    """The web UI's token: ``token``, else, beyond loopback, the chaos API's (see the module's docstring)."""
    if token or not listens_beyond_loopback(host):
        return token
    return chaos_token


def check_bind(host: str, token: str) -> None:
    """Refuse a web UI beyond loopback without a token (:class:`UserError`, one line)."""
    if not token and listens_beyond_loopback(host):
        shown = "every interface" if host in ("", "*") else host
        raise UserError(
            f"--web-host {shown} is not loopback only: the web UI and its Chaos tab would be open beyond this "
            "machine; set --web-token or RETRYSTORM_WEB_TOKEN (or bind to 127.0.0.1)"
        )


def web_guard(token: str) -> RequestGuard:
    """The request guard of the web UI with ``token`` (empty: loopback names only)."""
    return RequestGuard(token, surface="the Locust web UI", token_hint=TOKEN_HINT, basic_realm=REALM)


def _has_body(environ: dict[str, Any]) -> bool:
    length = str(environ.get("CONTENT_LENGTH") or "0").strip()
    chunked = "chunked" in str(environ.get("HTTP_TRANSFER_ENCODING", "")).lower()
    return chunked or (length.isdigit() and int(length) > 0) or not length.isdigit()


def request_facts(environ: dict[str, Any]) -> RequestFacts:
    """What the guard reads of a WSGI request."""
    return RequestFacts(
        method=str(environ.get("REQUEST_METHOD", "GET")).upper(),
        host=environ.get("HTTP_HOST"),
        origin=environ.get("HTTP_ORIGIN"),
        fetch_site=environ.get("HTTP_SEC_FETCH_SITE"),
        content_type=environ.get("CONTENT_TYPE") or None,
        has_body=_has_body(environ),
        authorization=environ.get("HTTP_AUTHORIZATION"),
    )


def judge(guard: RequestGuard, path: str, facts: RequestFacts) -> Refusal | None:
    """Why the web UI refuses this request, or ``None`` (the rules of the module's docstring)."""
    api = path.startswith(API_PREFIXES)
    if not api and facts.method in READ_METHODS:  # a page of the UI: a link from elsewhere may open it
        facts = RequestFacts(method=facts.method, host=facts.host, authorization=facts.authorization)
    refusal = guard.admit(facts, open_path=path in OPEN_PATHS)
    if refusal is None and api:
        refusal = guard.unsupported_body(facts)
    return refusal


def _without_cors(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    return [(name, value) for name, value in headers if not name.lower().startswith("access-control-")]


class GuardedApp:
    """WSGI middleware around Locust's Flask app: the guard first, then the app, its answers without CORS."""

    def __init__(self, app: WsgiApp, guard: RequestGuard) -> None:
        self.app = app
        self.guard = guard

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        refusal = judge(self.guard, str(environ.get("PATH_INFO") or "/"), request_facts(environ))
        if refusal is not None:
            return self._refuse(refusal, start_response)

        def start_without_cors(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status, _without_cors(headers), exc_info)

        return self.app(environ, start_without_cors)

    @staticmethod
    def _refuse(refusal: Refusal, start_response: StartResponse) -> list[bytes]:
        body = json.dumps({"error": refusal.message}).encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        headers += [("WWW-Authenticate", challenge) for challenge in refusal.challenges]
        reason = {401: "Unauthorized", 403: "Forbidden", 415: "Unsupported Media Type"}.get(refusal.status, "")
        start_response(f"{refusal.status} {reason}", headers)
        return [body]


def guard_web_ui(web_ui: Any, options: Any) -> str:
    """Check the web UI's bind and put the guard around its app; returns the token (empty: none).

    Raises :class:`UserError` for a bind beyond loopback without a token. Takes the tokens out of
    ``options``: a master sends its parsed options to every worker.
    """
    token = web_token(
        str(web_ui.host or ""),
        str(getattr(options, "web_token", None) or ""),
        str(getattr(options, "chaos_token", None) or ""),
    )
    check_bind(str(web_ui.host or ""), token)
    web_ui.app.wsgi_app = GuardedApp(web_ui.app.wsgi_app, web_guard(token))
    if options is not None and getattr(options, "web_token", None):
        options.web_token = ""
    if token:
        logger.info("the web UI needs its token (Authorization: Bearer, or the browser's login: any user name)")
    return token
