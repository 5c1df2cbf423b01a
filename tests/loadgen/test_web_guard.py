"""The web UI's guard as WSGI middleware, in process: which requests reach Locust's app, and without CORS.

A stand-in WSGI app answers everything it is handed (with the ``Access-Control-Allow-Origin: *`` that
Locust's ``CORS(app)`` adds); the live tests run the guard inside real Locust processes
(``test_live_web_guard.py``, ``test_live_chaos_tab.py``).
"""

from __future__ import annotations

import argparse
import base64

import pytest
from werkzeug.test import Client

from retrystorm.errors import UserError
from retrystorm.loadgen.web_guard import (
    GuardedApp,
    bind_loopback_by_default,
    check_bind,
    listens_beyond_loopback,
    web_guard,
    web_token,
)

TOKEN = "web-s3cret"
EVIL = "http://evil.example"
EVERY_INTERFACE = "0.0.0.0"  # noqa: S104 - an address judged here, never bound


def stand_in(environ, start_response):
    """Locust's app, as far as the guard sees it: 200 for everything, CORS headers included."""
    start_response("200 OK", [("Content-Type", "text/plain"), ("Access-Control-Allow-Origin", "*")])
    return [b"reached the app"]


def client(token: str = "") -> Client:
    return Client(GuardedApp(stand_in, web_guard(token)))


def call(token: str, method: str, path: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    body = headers.pop("body", None)
    host = headers.pop("Host", "127.0.0.1:8089")
    response = client(token).open(path, method=method, headers={"Host": host, **headers}, data=body)
    return response.status_code, dict(response.headers), response.get_data()


@pytest.mark.parametrize(
    ("method", "path", "headers", "status", "message"),
    [
        # DNS rebinding, and Sec-Fetch-Site without an Origin: both once reached the Chaos tab's routes
        ("POST", "/chaos/pause", {"Host": "evil.example:8089", "Origin": "http://evil.example:8089"}, 403, "Host"),
        ("POST", "/chaos/pause", {"Sec-Fetch-Site": "cross-site"}, 403, "refusing a cross-site request"),
        ("GET", "/chaos/targets", {"Origin": EVIL}, 403, "from origin http://evil.example"),
        ("GET", "/storm/series", {"Sec-Fetch-Site": "cross-site"}, 403, "cross-site"),
        ("GET", "/chaos/tab.js", {"Sec-Fetch-Site": "cross-site"}, 403, "cross-site"),
        ("POST", "/chaos/pause", {"Content-Type": "text/plain", "body": "{}"}, 415, "expected application/json"),
        ("POST", "/chaos/resume", {"Content-Type": "application/x-www-form-urlencoded", "body": "a=b"}, 415, "got"),
        # Locust's own routes: no other site's page may post, and no foreign Host without a token
        ("POST", "/swarm", {"Origin": EVIL, "Content-Type": "application/x-www-form-urlencoded"}, 403, "origin"),
        ("POST", "/stop", {"Sec-Fetch-Site": "cross-site"}, 403, "cross-site"),
        ("GET", "/", {"Host": "evil.example:8089"}, 403, "refusing Host 'evil.example:8089'"),
        ("GET", "/stats/requests", {"Host": "evil.example:8089"}, 403, "refusing Host"),
        ("GET", "/metrics", {"Host": "evil.example:8089"}, 403, "refusing Host"),
    ],
)
def test_what_another_sites_page_could_send_never_reaches_locust(method, path, headers, status, message):
    got, answer_headers, body = call("", method, path, **headers)
    assert got == status, body
    assert message.encode() in body
    assert b"reached the app" not in body
    assert answer_headers["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    ("method", "path", "headers"),
    [
        ("GET", "/", {}),
        ("GET", "/", {"Sec-Fetch-Site": "cross-site", "Origin": EVIL}),  # a link from elsewhere opens the UI
        ("GET", "/stats/requests", {"Sec-Fetch-Site": "cross-site"}),
        ("GET", "/chaos/targets", {"Sec-Fetch-Site": "same-origin"}),
        ("GET", "/storm/series", {"Sec-Fetch-Site": "none"}),
        ("POST", "/chaos/pause", {"Content-Type": "application/json", "body": "{}", "Origin": "http://127.0.0.1:8089"}),
        ("POST", "/swarm", {"Content-Type": "application/x-www-form-urlencoded", "body": "user_count=1"}),
        ("POST", "/stop", {"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:8089"}),
        ("GET", "/", {"Host": "localhost:8089"}),
        ("GET", "/", {"Host": "[::1]:8089"}),
    ],
)
def test_the_uis_own_pages_tools_and_people_reach_locust_without_cors(method, path, headers):
    status, answer_headers, body = call("", method, path, **headers)
    assert (status, body) == (200, b"reached the app")
    assert not any(name.lower().startswith("access-control-") for name in answer_headers)


def basic(password: str, user: str = "me") -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def test_with_a_token_every_path_but_metrics_needs_it_and_the_browser_is_asked():
    status, headers, body = call(TOKEN, "GET", "/")
    assert status == 401
    assert b"missing or wrong bearer token" in body
    assert headers["WWW-Authenticate"].startswith('Basic realm="retrystorm web UI"')  # the browser's prompt
    for path in ("/chaos/targets", "/storm/series", "/stats/requests", "/assets/index.js"):
        assert call(TOKEN, "GET", path)[0] == 401, path
    assert call(TOKEN, "GET", "/metrics", Host="locust-master:8089")[0] == 200  # Prometheus, health checks
    for authorization in (f"Bearer {TOKEN}", f"bearer {TOKEN}", basic(TOKEN), basic(TOKEN, user="")):
        status, _, body = call(TOKEN, "GET", "/", Host="locust-master:8089", Authorization=authorization)
        assert (status, body) == (200, b"reached the app"), authorization
    for wrong in (f"Bearer {TOKEN}x", basic("nope"), basic(TOKEN)[:-2], TOKEN):
        assert call(TOKEN, "GET", "/", Authorization=wrong)[0] == 401, wrong


def test_with_a_token_another_sites_page_is_still_refused():
    authorization = basic(TOKEN)  # a browser sends its cached login to any site's request
    status, _, _ = call(TOKEN, "POST", "/chaos/pause", Origin=EVIL, Authorization=authorization)
    assert status == 403
    status, _, _ = call(TOKEN, "POST", "/swarm", **{"Sec-Fetch-Site": "cross-site", "Authorization": authorization})
    assert status == 403


@pytest.mark.parametrize(("host", "beyond"), [("", True), ("*", True), (EVERY_INTERFACE, True), ("127.0.0.1", False)])
def test_which_binds_are_beyond_loopback(host, beyond):
    assert listens_beyond_loopback(host) is beyond


def test_beyond_loopback_without_a_token_the_ui_does_not_start():
    for host in ("", "*", EVERY_INTERFACE, "192.0.2.1"):
        with pytest.raises(UserError, match=r"--web-host .* is not loopback only: .* set --web-token"):
            check_bind(host, "")
    check_bind(EVERY_INTERFACE, TOKEN)
    check_bind("127.0.0.1", "")
    check_bind("localhost", "")


def test_the_chaos_token_guards_a_ui_beyond_loopback_that_has_no_token_of_its_own():
    assert web_token(EVERY_INTERFACE, "", "chaos") == "chaos"  # the compose stack's master
    assert web_token("", "", "chaos") == "chaos"
    assert web_token(EVERY_INTERFACE, "web", "chaos") == "web"
    assert web_token("127.0.0.1", "", "chaos") == ""  # on loopback the UI stays open to this machine
    assert web_token("127.0.0.1", "web", "chaos") == "web"


def test_web_host_defaults_to_loopback_and_says_so():
    parser = argparse.ArgumentParser()
    parser.add_argument("--web-host", default="", help="Defaults to '*' (all interfaces)")
    bind_loopback_by_default(parser)
    assert parser.parse_args([]).web_host == "127.0.0.1"
    assert parser.parse_args(["--web-host", EVERY_INTERFACE]).web_host == EVERY_INTERFACE
    assert "Defaults to 127.0.0.1" in " ".join(parser.format_help().split())
