"""Who may use the admin API: the shared request guard, and no admin API beyond loopback without a token.

Every path under ``/admin`` passes :class:`~retrystorm.request_guard.RequestGuard` (:func:`admin_guard`):
with ``--admin-token TOKEN`` (or ``RETRYSTORM_ADMIN_TOKEN``) ``Authorization: Bearer TOKEN`` (the scheme's
case aside), compared in constant time, else 401 with ``WWW-Authenticate: Bearer``; never a request a page
of another site made (``Origin``, ``Sec-Fetch-Site``), nor, without a token, one whose ``Host`` is not a
loopback name (DNS rebinding): 403; a body only as ``application/json``: 415. ``/api``, ``/healthz``,
``/metrics`` and ``/openapi.json`` stay open and unchecked: load, health checks and Prometheus need no
credentials, and none of them changes the service (and ``/api`` is the hot path).

Without a token the service listens on loopback only: :func:`check_exposure` refuses a
host that is not loopback before binding (resolving it, never reading its text), and
:func:`check_bound` checks the addresses actually bound, after binding.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable

from retrystorm.addresses import is_loopback_host
from retrystorm.errors import UserError
from retrystorm.request_guard import Refusal, RequestFacts, RequestGuard
from retrystorm.target.service.request import Request
from retrystorm.target.service.responses import Response

#: The documented default of the compose file, which users are told to change.
COMPOSE_DEFAULT_TOKEN = "change-me"  # noqa: S105 - a known value to warn about, not a secret
#: Where the token a client must send comes from, as messages name it.
TOKEN_HINT = "the target's --admin-token (RETRYSTORM_ADMIN_TOKEN)"  # noqa: S105 - where it is set, not a token


def admin_guard(token: str) -> RequestGuard:
    """The request guard of the admin API with ``token`` (empty: none, loopback only)."""
    return RequestGuard(token, surface="the target's admin API", token_hint=TOKEN_HINT)


def is_admin_path(path: str) -> bool:
    """Whether ``path`` belongs to the admin API (``/admin`` and below)."""
    return path.startswith("/admin") and (len(path) == 6 or path[6] == "/")


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode("latin-1")


def request_facts(request: Request) -> RequestFacts:
    """What the guard reads of an admin request (the HTTP layer keeps its headers: ``guard_headers``)."""
    headers = request.guard_headers or {}
    return RequestFacts(
        method=request.method.decode("latin-1"),
        host=_text(headers.get(b"host")),
        origin=_text(headers.get(b"origin")),
        fetch_site=_text(headers.get(b"sec-fetch-site")),
        content_type=_text(headers.get(b"content-type")),
        has_body=bool(request.body),
        authorization=_text(request.authorization),
    )


def refused(refusal: Refusal) -> Response:
    """The plain-text answer to a refused request, with its ``WWW-Authenticate`` challenges."""
    challenges = "".join(f"WWW-Authenticate: {challenge}\r\n" for challenge in refusal.challenges)
    return Response.text(refusal.status, refusal.message, challenges)


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
