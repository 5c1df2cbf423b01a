"""The admin API refuses what another site's page could make a browser send, and foreign Host names without a token.

In-process services on loopback, real HTTP on the wire; each refused call must leave the service as it was.
"""

from __future__ import annotations

import json

import pytest

from retrystorm.target.probe import fetch

TOKEN = "s3cret-token"
EVIL = "http://evil.example"
REQUESTS = "retrystorm_target_requests_total"


async def _reset_counters_then_count(live, app):
    """One request to /api, so a reset would show as its counter going back to zero."""
    assert (await fetch(app.port, "/api")).status == 200
    return live.metric(app, REQUESTS, outcome="ok")


def test_a_cross_site_text_plain_reset_is_refused(live):
    """``POST /admin/reset`` as text/plain from a foreign page, cross-site, used to be executed."""

    async def scenario():
        async with live.serve(model=_fixed_zero()) as app:
            before = await _reset_counters_then_count(live, app)
            reply = await fetch(
                app.port,
                "/admin/reset",
                "POST",
                b'{"release_in_flight": true}',
                headers={"Content-Type": "text/plain", "Origin": EVIL, "Sec-Fetch-Site": "cross-site"},
            )
            assert reply.status == 403, reply.text
            assert "refusing a cross-site request" in reply.text
            assert live.metric(app, REQUESTS, outcome="ok") == before == 1

    live.run(scenario())


CALLS = [
    ("POST", "/admin/reset", b'{"release_in_flight": true}'),
    ("PUT", "/admin/capacity", b'{"capacity": 0.5}'),
    ("PUT", "/admin/faults", b'{"status": 500}'),
    ("PUT", "/admin/model", b'{"spec": "fixed:base_delay=0"}'),
]
REFUSALS = [
    ({"Content-Type": "text/plain"}, 415, "Content-Type: got 'text/plain', expected application/json"),
    ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "expected application/json"),
    ({"Content-Type": "multipart/form-data; boundary=x"}, 415, "expected application/json"),
    ({"Content-Type": None}, 415, "Content-Type: got none"),
    ({"Origin": EVIL}, 403, "refusing a request from origin http://evil.example"),
    ({"Origin": "null"}, 403, "refusing a request from origin null"),
    ({"Sec-Fetch-Site": "cross-site"}, 403, "refusing a cross-site request"),  # no Origin at all
    ({"Sec-Fetch-Site": "same-site"}, 403, "refusing a same-site request"),
    ({"Host": "evil.example:8070"}, 403, "refusing Host 'evil.example:8070': without a token"),
    ({"Host": "evil.example:8070", "Origin": "http://evil.example:8070"}, 403, "refusing Host"),  # DNS rebinding
    ({"Host": "127.attacker.example"}, 403, "refusing Host"),
    ({"Host": None}, 403, "without a Host header"),
]


@pytest.mark.parametrize(("method", "path", "body"), CALLS)
def test_each_refusal_is_one_line_and_changes_nothing(live, method, path, body):
    async def scenario():
        async with live.serve() as app:
            spec = app.driver.model.spec()
            for headers, status, message in REFUSALS:
                reply = await fetch(app.port, path, method, body, headers=headers)
                assert reply.status == status, (headers, reply.text)
                assert message in reply.text, (headers, reply.text)
                assert reply.text.count("\n") == 1
                assert not any(name.startswith("access-control-") for name in reply.headers)
            assert app.driver.model.spec() == spec
            assert app.driver.capacity == 1.0
            assert app.faults.rule is None
            assert live.metric(app, "retrystorm_target_bad_requests_total", status="403") == 8
            assert live.metric(app, "retrystorm_target_bad_requests_total", status="415") == 4

    live.run(scenario())


def test_reads_are_guarded_too(live):
    async def scenario():
        async with live.serve() as app:
            for headers in ({"Host": "evil.example"}, {"Sec-Fetch-Site": "cross-site"}, {"Origin": EVIL}):
                assert (await fetch(app.port, "/admin/model", headers=headers)).status == 403, headers

    live.run(scenario())


def test_own_tools_pages_and_people_are_served(live):
    async def scenario():
        async with live.serve() as app:
            port = app.port
            for headers in (
                {},
                {"Host": f"localhost:{port}"},
                {"Host": f"[::1]:{port}"},
                {"Origin": f"http://127.0.0.1:{port}", "Host": f"127.0.0.1:{port}", "Sec-Fetch-Site": "same-origin"},
                {"Sec-Fetch-Site": "none"},
                {"Content-Type": "application/json; charset=utf-8"},
            ):
                reply = await fetch(port, "/admin/capacity", "PUT", b'{"capacity": 0.5}', headers=headers)
                assert reply.status == 200, (headers, reply.text)
            empty = await fetch(port, "/admin/reset", "POST")  # curl -X POST: no body, no type
            assert empty.status == 200, empty.text
            assert json.loads(empty.body)["reset"] is True

    live.run(scenario())


def test_with_a_token_any_host_is_served_but_no_other_sites_page(live):
    async def scenario():
        async with live.serve(admin_token=TOKEN) as app:
            token = f"Bearer {TOKEN}"
            ok = await fetch(app.port, "/admin/model", headers={"Host": "target:8070", "Authorization": token})
            assert ok.status == 200, ok.text
            for headers in ({"Origin": EVIL}, {"Sec-Fetch-Site": "cross-site"}, {"Content-Type": "text/plain"}):
                reply = await fetch(
                    app.port, "/admin/reset", "POST", b"{}", headers={"Authorization": token, **headers}
                )
                assert reply.status in (403, 415), (headers, reply.text)

    live.run(scenario())


def test_load_health_and_metrics_are_not_judged(live):
    """The guard reads the admin API only: /api is the hot path, and load in a stack names the service by its name."""

    async def scenario():
        async with live.serve(model=_fixed_zero()) as app:
            foreign = {"Host": "target:8070", "Origin": EVIL, "Sec-Fetch-Site": "cross-site"}
            for path in ("/api", "/healthz", "/metrics", "/openapi.json"):
                assert (await fetch(app.port, path, headers=foreign)).status == 200, path

    live.run(scenario())


def _fixed_zero():
    from retrystorm.target.models import parse_model

    return parse_model("fixed:base_delay=0")
