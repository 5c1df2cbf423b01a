"""How to reach a Grafana, and a small client for the few endpoints retrystorm calls.

Settings: a base URL and one of a service-account token (``Authorization: Bearer``),
a user and password (basic auth), or nothing (a Grafana that lets anonymous users
write, or a URL with ``user:password@``). From the environment: ``GRAFANA_URL``,
``GRAFANA_TOKEN``, ``GRAFANA_USER`` and ``GRAFANA_PASSWORD``. Errors in these settings
are the user's: one line, exit 2.

The client is plain HTTP over :mod:`urllib.request` with JSON in and out: retrystorm
calls four endpoints of Grafana's HTTP API (``POST /api/annotations``; ``GET`` and
``POST /api/folders``; ``POST /api/dashboards/db``), which needs no client library.
Every failure (unreachable, timed out, refused with an HTTP status, an answer that is
not JSON) is a :class:`GrafanaRequestError` whose one-line message names the URL
without its credentials and, for a refusal, the status and Grafana's ``message``.
"""

from __future__ import annotations

import base64
import dataclasses
import http.client
import json
import logging
import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Any

from retrystorm.errors import UserError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 5.0
#: How much of an answer's text an error message quotes.
MAX_DETAIL_CHARS = 200


class GrafanaSettingsError(UserError):
    """The Grafana URL or credentials are malformed or contradict each other."""


class GrafanaRequestError(UserError):
    """Grafana could not be reached, or refused a request (bad URL, credentials or payload)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class GrafanaSettings:
    """A Grafana's base URL and the credentials to use there."""

    url: str
    token: str | None = None
    user: str | None = None
    password: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.url)
        try:
            port_ok = parts.port is None or parts.port > 0
        except ValueError:
            port_ok = False
        if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
            raise GrafanaSettingsError(f"grafana url: got {self.url!r}, expected http(s)://HOST[:PORT][/PATH]")
        if self.token and (self.user or self.password):
            raise GrafanaSettingsError(
                "grafana credentials: got a token and a user/password, expected one of them "
                "(--token / GRAFANA_TOKEN, or --user and --password / GRAFANA_USER and GRAFANA_PASSWORD)"
            )
        if bool(self.user) != bool(self.password):
            raise GrafanaSettingsError(
                "grafana credentials: a user needs a password and a password a user "
                "(--user and --password, or GRAFANA_USER and GRAFANA_PASSWORD)"
            )
        if not self.timeout_s > 0:
            raise GrafanaSettingsError(f"grafana timeout: got {self.timeout_s}, expected seconds > 0")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> GrafanaSettings | None:
        """The settings in ``GRAFANA_URL``/``GRAFANA_TOKEN``/``GRAFANA_USER``/``GRAFANA_PASSWORD``.

        ``None`` when ``GRAFANA_URL`` is unset or empty: no Grafana to talk to.
        """
        env = os.environ if environ is None else environ
        url = env.get("GRAFANA_URL", "").strip()
        if not url:
            return None
        return cls(
            url=url,
            token=env.get("GRAFANA_TOKEN") or None,
            user=env.get("GRAFANA_USER") or None,
            password=env.get("GRAFANA_PASSWORD") or None,
        )

    def __repr__(self) -> str:
        token = "'***'" if self.token else "None"
        return f"GrafanaSettings(url={self.where()!r}, token={token}, user={self.user!r})"

    def authorization(self) -> str | None:
        """The ``Authorization`` header: the token, else the user and password, else the URL's ``user:password@``."""
        if self.token:
            return f"Bearer {self.token}"
        user, password = self.user, self.password
        if not user:
            parts = urllib.parse.urlsplit(self.url)
            if parts.username is None:
                return None
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
        pair = f"{user}:{password or ''}".encode()
        return "Basic " + base64.b64encode(pair).decode("ascii")

    def where(self) -> str:
        """The URL without any ``user:password@``, for messages, logs and requests."""
        parts = urllib.parse.urlsplit(self.url)
        host = parts.hostname or ""
        netloc = f"[{host}]" if ":" in host else host
        if parts.port:
            netloc += f":{parts.port}"
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


class GrafanaClient:
    """JSON over HTTP to one Grafana: ``get`` and ``post`` an API path, the decoded answer back.

    Nothing is sent until a method is called. The credentials go in an ``Authorization``
    header that is not repeated on a redirect (so they never follow one to another host).
    """

    def __init__(self, settings: GrafanaSettings, *, opener: urllib.request.OpenerDirector | None = None) -> None:
        self.settings = settings
        self.base = settings.where()
        self._authorization = settings.authorization()
        self._opener = opener or urllib.request.build_opener()

    def get(self, path: str) -> Any:
        """``GET path`` (e.g. ``/api/folders``); the JSON answer."""
        return self.call("GET", path)

    def post(self, path: str, body: Any) -> Any:
        """``POST path`` with ``body`` as JSON; the JSON answer."""
        return self.call("POST", path, body)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """One request; the decoded JSON answer, or :class:`GrafanaRequestError` with one line."""
        url = self.base + path
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310 - http(s) only, checked
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self._authorization:
            request.add_unredirected_header("Authorization", self._authorization)
        what = f"grafana at {self.base}: {method} {path}"
        log.debug("%s %s", method, url)
        try:
            with self._opener.open(request, timeout=self.settings.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise GrafanaRequestError(f"{what}: HTTP {error.code}: {_refusal(error)}") from None
        except urllib.error.URLError as error:
            raise GrafanaRequestError(f"{what}: cannot connect: {_one_line(error.reason)}") from None
        except TimeoutError:
            raise GrafanaRequestError(f"{what}: no answer within {self.settings.timeout_s:g} s") from None
        except (OSError, http.client.HTTPException) as error:
            raise GrafanaRequestError(f"{what}: {type(error).__name__}: {_one_line(error)}") from None
        try:
            return json.loads(raw) if raw.strip() else None
        except ValueError:
            raise GrafanaRequestError(f"{what}: the answer is not JSON: {_one_line(raw[:80])}") from None


def _refusal(error: urllib.error.HTTPError) -> str:
    """Grafana's ``message`` from a refusal's JSON body, else the body's text, else the reason."""
    try:
        raw = error.read()
    except (OSError, http.client.HTTPException):
        raw = b""
    finally:
        error.close()
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and answer.get("message"):
        return _one_line(answer["message"])
    return _one_line(raw.decode("utf-8", errors="replace") if raw.strip() else error.reason)


def _one_line(value: object) -> str:
    text = value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= MAX_DETAIL_CHARS else text[: MAX_DETAIL_CHARS - 3] + "..."
