"""How to reach a Grafana: URL and credentials, from flags or the environment.

One of: a service-account token (``Authorization: Bearer``), or a user and password
(basic auth), or nothing (a Grafana that lets anonymous users write, or a URL with
``user:password@``). The environment uses the names ``grafana-client`` reads in
``GrafanaApi.from_env``: ``GRAFANA_URL``, ``GRAFANA_TOKEN``; plus ``GRAFANA_USER``
and ``GRAFANA_PASSWORD``. Errors in these settings are the user's: one line, exit 2.
"""

from __future__ import annotations

import dataclasses
import os
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING

from retrystorm.errors import UserError

if TYPE_CHECKING:
    from grafana_client.api import GrafanaApi

DEFAULT_TIMEOUT_S = 5.0

#: How to install what talking to Grafana needs, keeping urllib3 (see pyproject.toml).
GRAFANA_EXTRA = (
    "pip install 'retrystorm[grafana]' (with URLLIB3_NO_OVERRIDE=1 PIP_NO_BINARY=urllib3-future to keep your urllib3)"
)


class GrafanaSettingsError(UserError):
    """The Grafana URL or credentials are malformed or contradict each other."""


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
        if parts.scheme not in ("http", "https") or not parts.hostname:
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

    def credential(self) -> str | tuple[str, str] | None:
        """What ``GrafanaApi.from_url`` takes: a token, ``(user, password)``, or ``None``."""
        if self.token:
            return self.token
        if self.user and self.password:
            return (self.user, self.password)
        return None

    def where(self) -> str:
        """The URL without any ``user:password@``, for messages and logs."""
        parts = urllib.parse.urlsplit(self.url)
        netloc = parts.hostname or ""
        if parts.port:
            netloc += f":{parts.port}"
        return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def connect(settings: GrafanaSettings) -> GrafanaApi:
    """A ``grafana-client`` API object for ``settings`` (no request is made yet).

    ``grafana-client`` is imported here, so reading settings costs no import of it.
    """
    try:
        from grafana_client.api import GrafanaApi  # noqa: PLC0415 - only when a Grafana is used
    except ImportError:
        raise UserError(f"talking to Grafana needs grafana-client: {GRAFANA_EXTRA}") from None

    api: GrafanaApi = GrafanaApi.from_url(
        url=settings.url, credential=settings.credential(), timeout=settings.timeout_s
    )
    return api
