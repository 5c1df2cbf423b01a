"""Who may use the admin API: a bearer token, and no admin API beyond loopback without one.

With ``--admin-token TOKEN`` (or ``RETRYSTORM_ADMIN_TOKEN``), every path under
``/admin`` needs ``Authorization: Bearer TOKEN`` (the scheme's case aside), compared in
constant time; anything else gets 401 with ``WWW-Authenticate: Bearer``. ``/api``,
``/healthz``, ``/metrics`` and ``/openapi.json`` stay open: load, health checks and
Prometheus need no credentials, and none of them changes the service.

Without a token the service listens on loopback only: :func:`check_exposure` refuses a
host that is not loopback before binding (resolving it, never reading its text), and
:func:`check_bound` checks the addresses actually bound, after binding.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import socket
from collections.abc import Iterable

from retrystorm.addresses import is_loopback_host
from retrystorm.errors import SpecError, UserError
from retrystorm.target.service.responses import Response

#: A token is sent in a header: visible ASCII, no spaces (RFC 6750's b64token and more).
_TOKEN = re.compile(r"[\x21-\x7e]+")
_SCHEME = b"bearer"
#: The documented default of the compose file, which users are told to change.
COMPOSE_DEFAULT_TOKEN = "change-me"  # noqa: S105 - a known value to warn about, not a secret

UNAUTHORIZED = Response.text(
    401,
    "missing or wrong bearer token: send Authorization: Bearer TOKEN (the target's --admin-token)",
    'WWW-Authenticate: Bearer realm="retrystorm target admin"\r\n',
    shared=True,
)


def check_token(token: str) -> None:
    """Raise :class:`SpecError` unless ``token`` is empty (no token) or can travel in a header."""
    if token and not _TOKEN.fullmatch(token):
        raise SpecError("admin_token: expected visible ASCII characters without spaces (it is sent in a header)")


def is_admin_path(path: str) -> bool:
    """Whether ``path`` belongs to the admin API (``/admin`` and below)."""
    return path.startswith("/admin") and (len(path) == 6 or path[6] == "/")


class AdminGuard:
    """Checks the ``Authorization`` header of admin requests against the token (none: all pass)."""

    __slots__ = ("_expected", "enabled")

    def __init__(self, token: str) -> None:
        check_token(token)
        self.enabled = bool(token)
        self._expected = token.encode("ascii")

    def allows(self, authorization: bytes | None) -> bool:
        """Whether a request with this ``Authorization`` value may use the admin API."""
        if not self.enabled:
            return True
        scheme, _, credentials = (authorization or b"").strip().partition(b" ")
        # compare_digest takes as long for any credentials of a given length
        matches = hmac.compare_digest(credentials.strip(), self._expected)
        return scheme.lower() == _SCHEME and matches


def check_exposure(host: str, token: str) -> None:
    """Refuse to listen on ``host`` without a token unless it is loopback only (resolved, not read)."""
    if not token and not is_loopback_host(host):
        raise UserError(
            f"--host {host or '(every interface)'} is not loopback only: the admin API would be open beyond this "
            "machine; set --admin-token or RETRYSTORM_ADMIN_TOKEN"
        )


def check_bound(sockets: Iterable[socket.socket], token: str) -> None:
    """The second net: without a token, every socket bound must have a loopback address."""
    if token:
        return
    for sock in sockets:
        address = str(sock.getsockname()[0]).partition("%")[0]
        if not is_loopback_host(str(ipaddress.ip_address(address))):
            raise UserError(
                f"bound to {address}, which is not loopback: the admin API would be open beyond this machine; "
                "set --admin-token or RETRYSTORM_ADMIN_TOKEN"
            )
