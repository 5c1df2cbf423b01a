"""The admin API's bearer token, and no admin API beyond loopback without one."""

import json
import socket
import subprocess
import sys

import pytest

from retrystorm.errors import UserError
from retrystorm.target.probe import fetch
from retrystorm.target.service.auth import check_bound

TOKEN = "s3cret-token"
ADMIN_CALLS = [
    ("GET", "/admin/model", b""),
    ("PUT", "/admin/model", b'{"spec": "exponential:limit=40"}'),
    ("POST", "/admin/reset", b'{"release_in_flight": true}'),
    ("GET", "/admin/faults", b""),
    ("PUT", "/admin/faults", b'{"status": 500}'),
    ("DELETE", "/admin/faults", b""),
    ("GET", "/admin/nowhere", b""),  # 401 before 404: no telling which admin paths exist
    ("GET", "/admin", b""),
]
WRONG = [
    {},
    {"Authorization": "Bearer wrong"},
    {"Authorization": f"Bearer {TOKEN}x"},
    {"Authorization": f"Bearer {TOKEN[:-1]}"},
    {"Authorization": f"Basic {TOKEN}"},
    {"Authorization": TOKEN},
    {"Authorization": "Bearer"},
]


@pytest.mark.parametrize(("method", "path", "body"), ADMIN_CALLS)
def test_every_admin_call_without_the_token_gets_401_and_changes_nothing(live, method, path, body):
    async def scenario():
        async with live.serve(admin_token=TOKEN) as app:
            for headers in WRONG:
                reply = await fetch(app.port, path, method, body, headers=headers)
                assert reply.status == 401, (headers, reply.text)
                assert reply.text.count("\n") == 1
                assert "Authorization: Bearer TOKEN" in reply.text
                assert reply.headers["www-authenticate"].startswith("Bearer ")
            assert app.driver.model.spec().startswith("exponential:base_delay=100ms,limit=30,")
            assert app.faults.rule is None
            assert live.metric(app, "retrystorm_target_bad_requests_total", status="401") == len(WRONG)

    live.run(scenario())


def test_the_token_opens_the_admin_api(live):
    async def scenario():
        async with live.serve(admin_token=TOKEN) as app:
            for scheme in ("Bearer", "bearer", "BEARER"):
                headers = {"Authorization": f"{scheme} {TOKEN}"}
                reply = await fetch(
                    app.port, "/admin/model", "PUT", b'{"spec": "exponential:limit=40"}', headers=headers
                )
                assert reply.status == 200, reply.text
                assert json.loads(reply.body)["model"]["limit"] == "40"
            missing = await fetch(app.port, "/admin/nowhere", headers={"Authorization": f"Bearer {TOKEN}"})
            assert missing.status == 404

    live.run(scenario())


def test_load_health_metrics_and_the_document_stay_open(live):
    async def scenario():
        async with live.serve(admin_token=TOKEN, model=_fixed_zero()) as app:
            for path in ("/api", "/healthz", "/metrics", "/openapi.json"):
                assert (await fetch(app.port, path)).status == 200, path

    live.run(scenario())


def test_without_a_token_the_admin_api_is_open_on_loopback(live):
    async def scenario():
        async with live.serve() as app:
            assert (await fetch(app.port, "/admin/model")).status == 200

    live.run(scenario())


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "", "192.0.2.1"])  # noqa: S104 - refused before binding
def test_without_a_token_a_host_beyond_loopback_is_refused_before_binding(live, host):
    async def scenario():
        with pytest.raises(UserError, match=r"is not loopback only: .* set --admin-token or RETRYSTORM_ADMIN_TOKEN"):
            async with live.serve(host=host):
                pass

    live.run(scenario())


def test_without_a_token_the_bound_addresses_are_checked_again():
    with socket.socket() as bound:
        bound.bind(("0.0.0.0", 0))  # noqa: S104 - bound, never listening: nothing can connect
        with pytest.raises(UserError, match=r"bound to 0\.0\.0\.0, which is not loopback"):
            check_bound([bound], "")
        check_bound([bound], TOKEN)  # with a token it may
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        check_bound([bound], "")


@pytest.mark.parametrize("token", ["two words", "tab\there", "naïve"])
def test_a_token_that_cannot_travel_in_a_header_is_refused(live, token):
    async def scenario():
        with pytest.raises(UserError, match="admin_token: expected visible ASCII characters without spaces"):
            async with live.serve(admin_token=token):
                pass

    live.run(scenario())


@pytest.mark.live
def test_the_command_takes_the_token_from_its_environment(live, target_process):
    target = target_process(env={"RETRYSTORM_ADMIN_TOKEN": TOKEN})

    async def scenario():
        assert (await fetch(target.port, "/admin/model")).status == 401
        authorized = await fetch(target.port, "/admin/model", headers={"Authorization": f"Bearer {TOKEN}"})
        assert authorized.status == 200

    live.run(scenario())


@pytest.mark.live
def test_the_command_refuses_a_host_beyond_loopback_without_a_token():
    environment = {"PATH": "/usr/bin:/bin"}  # no RETRYSTORM_ADMIN_TOKEN
    result = subprocess.run(
        [sys.executable, "-m", "retrystorm", "target", "--host", "0.0.0.0", "--port", "0"],  # noqa: S104 - refused
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=environment,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("retrystorm: error: --host 0.0.0.0 is not loopback only")


def _fixed_zero():
    from retrystorm.target.models import parse_model

    return parse_model("fixed:base_delay=0")
