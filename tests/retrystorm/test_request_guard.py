"""The one request guard of every control surface: token, other sites' pages, bodies; and the secrets' environment."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.errors import SpecError
from retrystorm.request_guard import (
    SECRET_ENVIRONMENT,
    RequestFacts,
    RequestGuard,
    check_token,
    host_name,
    without_secrets,
)

TOKEN = "s3cret-token"
HINT = "--token (RETRYSTORM_TEST_TOKEN)"


def guard(token: str = "", *, basic: bool = False) -> RequestGuard:
    return RequestGuard(token, surface="the test API", token_hint=HINT, basic_realm="retrystorm" if basic else None)


def facts(**given: str | bool | None) -> RequestFacts:
    values: dict = {"method": "POST", "host": "127.0.0.1:8071", **given}
    return RequestFacts(**values)


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_case_insensitive(scheme):
    assert guard(TOKEN).authorized(f"{scheme} {TOKEN}")
    assert guard(TOKEN).authorized(f"  {scheme}   {TOKEN}  ".encode())


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Bearer wrong",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        TOKEN,
        f"Token {TOKEN}",
        f"Basic {TOKEN}",
        basic("anyone", TOKEN),  # Basic is not taken where no browser logs in
    ],
)
def test_anything_but_the_token_is_unauthorized(authorization):
    assert not guard(TOKEN).authorized(authorization)


def test_without_a_token_everything_is_authorized():
    assert guard().authorized(None)
    assert guard().authorized("Bearer anything")


def test_a_browser_surface_also_takes_the_token_as_a_basic_password():
    web = guard(TOKEN, basic=True)
    assert web.authorized(basic("anyone", TOKEN))
    assert web.authorized(basic("", TOKEN))
    assert web.authorized(f"Bearer {TOKEN}")
    for wrong in (basic("anyone", "nope"), basic(TOKEN, ""), "Basic !!!not-base64", f"Basic {TOKEN}"):
        assert not web.authorized(wrong), wrong


@given(st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40))
def test_only_the_exact_token_opens(other):
    rules = guard(TOKEN)
    assert rules.authorized(f"Bearer {other}") == (other == TOKEN)


def test_the_401_names_the_header_and_where_the_token_is_set_and_challenges():
    refusal = guard(TOKEN).unauthorized()
    assert refusal.status == 401
    assert "Authorization: Bearer TOKEN" in refusal.message
    assert HINT in refusal.message
    assert refusal.challenges == ('Bearer realm="retrystorm: the test API"',)
    web = guard(TOKEN, basic=True).unauthorized()
    assert web.challenges[0] == 'Basic realm="retrystorm", charset="UTF-8"'  # the browser's prompt comes first


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"fetch_site": "cross-site"}, "refusing a cross-site request (Sec-Fetch-Site)"),  # no Origin needed
        ({"fetch_site": "same-site"}, "refusing a same-site request"),
        ({"fetch_site": "Cross-Site", "origin": "http://127.0.0.1:8071"}, "refusing a Cross-Site request"),
        ({"origin": "http://evil.example"}, "refusing a request from origin http://evil.example"),
        ({"origin": "null"}, "refusing a request from origin null"),
        ({"origin": "http://127.0.0.1:9999"}, "from origin http://127.0.0.1:9999"),
        ({"origin": "http://127.0.0.1:8071/path"}, "from origin"),
        ({"origin": "ftp://127.0.0.1:8071"}, "from origin"),
        ({"host": "evil.example:8071"}, "refusing Host 'evil.example:8071': without a token the test API"),
        ({"host": "evil.example:8071", "origin": "http://evil.example:8071"}, "refusing Host 'evil.example:8071'"),
        ({"host": "127.attacker.example"}, "refusing Host"),
        ({"host": "localhost.evil.example:80"}, "refusing Host"),
        ({"host": None}, "without a Host header"),
        ({"host": " "}, "without a Host header"),
    ],
)
def test_what_another_sites_page_could_send_is_refused(given, message):
    refusal = guard().admit(facts(**given))
    assert refusal is not None
    assert refusal.status == 403
    assert message in refusal.message
    assert "\n" not in refusal.message


@pytest.mark.parametrize(
    "given",
    [
        {},
        {"fetch_site": "same-origin", "origin": "http://127.0.0.1:8071"},
        {"fetch_site": "none"},
        {"host": "localhost:8071", "origin": "http://localhost:8071"},
        {"host": "LOCALHOST"},
        {"host": "[::1]:8071", "origin": "http://[::1]:8071"},
        {"host": "127.0.0.1:8071", "origin": "https://127.0.0.1:8071"},  # TLS ended in front: same authority
    ],
)
def test_own_pages_tools_and_people_are_served(given):
    assert guard().admit(facts(**given)) is None


def test_with_a_token_any_host_is_served_but_never_another_sites_page():
    rules = guard(TOKEN)
    token = f"Bearer {TOKEN}"
    assert rules.admit(facts(host="chaos:8071", authorization=token)) is None
    assert rules.admit(facts(host="chaos:8071", origin="http://chaos:8071", authorization=token)) is None
    refused = rules.admit(facts(host="chaos:8071", origin="http://evil.example", authorization=token))
    assert refused is not None
    assert refused.status == 403
    refused = rules.admit(facts(host="chaos:8071", fetch_site="cross-site", authorization=token))
    assert refused is not None
    assert refused.status == 403


def test_the_token_comes_first_and_open_paths_skip_it_only():
    rules = guard(TOKEN)
    refusal = rules.admit(facts(origin="http://evil.example"))
    assert refusal is not None
    assert refusal.status == 401
    refusal = rules.admit(facts(origin="http://evil.example"), open_path=True)
    assert refusal is not None
    assert refusal.status == 403
    assert rules.admit(facts(), open_path=True) is None


@pytest.mark.parametrize(
    ("content_type", "has_body", "refused"),
    [
        ("application/json", True, False),
        ("application/json; charset=utf-8", True, False),
        ("Application/JSON", True, False),
        (None, False, False),  # curl -X POST: nothing to read
        ("application/json", False, False),
        ("text/plain", True, True),
        ("text/plain", False, True),  # a form's type, even empty
        ("application/x-www-form-urlencoded", True, True),
        ("multipart/form-data; boundary=x", True, True),
        ("application/json-patch+json", True, True),
        (None, True, True),
        ("", True, True),
    ],
)
def test_a_body_must_be_json(content_type, has_body, refused):
    refusal = guard().unsupported_body(facts(content_type=content_type, has_body=has_body))
    if not refused:
        assert refusal is None
        return
    assert refusal is not None
    assert refusal.status == 415
    assert refusal.message.endswith("expected application/json")


@pytest.mark.parametrize(
    ("host", "name"),
    [
        ("127.0.0.1:8071", "127.0.0.1"),
        ("[::1]:8071", "[::1]"),
        ("[::1]", "[::1]"),
        ("LocalHost", "localhost"),
        ("::1", "::1"),
        ("evil.example:80", "evil.example"),
    ],
)
def test_host_name(host, name):
    assert host_name(host) == name


@pytest.mark.parametrize("token", ["two words", "tab\there", "naïve", "new\nline"])
def test_a_token_that_cannot_travel_in_a_header_is_refused(token):
    with pytest.raises(SpecError, match="admin_token: expected visible ASCII characters without spaces"):
        check_token(token, "admin_token")
    with pytest.raises(SpecError, match="the token of the test API: expected visible ASCII"):
        guard(token)


def test_a_service_gets_the_environment_without_the_projects_secrets():
    environment = dict.fromkeys(SECRET_ENVIRONMENT, "secret") | {"PATH": "/usr/bin", "RETRYSTORM_CHAOS_URL": "x"}
    assert without_secrets(environment) == {"PATH": "/usr/bin", "RETRYSTORM_CHAOS_URL": "x"}
    assert {"RETRYSTORM_CHAOS_TOKEN", "RETRYSTORM_ADMIN_TOKEN", "RETRYSTORM_WEB_TOKEN"} <= set(SECRET_ENVIRONMENT)
