"""The rules every HTTP control surface of retrystorm follows, in one place.

The chaos API (``retrystorm chaos serve``), the target's admin API (``/admin/*``) and the Locust web UI
with retrystorm's plugin (its Chaos and Retry storm routes) each wrap :class:`RequestGuard` in a thin
adapter for their server (aiohttp, httptools, WSGI). What a request must pass, in order:

1. **Token** (:meth:`RequestGuard.authorized`): with a token set, ``Authorization: Bearer TOKEN`` (the
   scheme's case aside, as RFC 7235 section 2.1 and RFC 6750 section 2.1 say), compared in constant time;
   a surface a browser opens (the web UI) also takes HTTP Basic with the token as the password, so the
   browser's own login prompt works. Otherwise 401 with ``WWW-Authenticate``. Paths a surface leaves open
   (health, metrics, its OpenAPI document) skip this step only.
2. **Other sites' pages** (:meth:`RequestGuard.cross_site`): ``Sec-Fetch-Site`` other than
   ``same-origin`` or ``none`` (a page of another site, even without an ``Origin``), an ``Origin`` that is
   not this server's own ``Host``, and, without a token, a ``Host`` that is not a loopback name (DNS
   rebinding: a page of ``evil.example`` whose name was pointed at 127.0.0.1 sends ``Host: evil.example``).
   403.
3. **Bodies** (:meth:`RequestGuard.unsupported_body`): a request that carries a body, or names a content
   type, must send ``application/json``: an HTML form can send only ``application/x-www-form-urlencoded``,
   ``multipart/form-data`` or ``text/plain``, and a page's ``fetch`` needs a CORS preflight (which no
   surface answers) for JSON. 415.

No surface sends ``Access-Control-Allow-*`` headers: no other origin may read an answer.

Without a token a surface must listen on loopback only (each refuses to start otherwise, checked by
:func:`retrystorm.addresses.is_loopback_host`); with one, the Host check is off, since a page of another
site never holds the token. A surface's token is the same for every client: tools send it as a bearer
token, people type it into the browser's prompt.

The project's secrets travel in environment variables (:data:`SECRET_ENVIRONMENT`);
:func:`without_secrets` is the environment a user's own service gets, without them.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hmac
import re
from collections.abc import Mapping

from retrystorm.errors import SpecError

#: ``Host`` names a surface without a token answers (with any port): this machine's loopback names.
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})
#: ``Sec-Fetch-Site`` values of a request no other site's page made: the server's own pages, or a person.
OWN_FETCH_SITES = frozenset({"same-origin", "none"})
#: The one media type a body may have.
JSON = "application/json"
#: Environment variables that hold the project's secrets: never passed to a user's service.
SECRET_ENVIRONMENT = (
    "RETRYSTORM_CHAOS_TOKEN",
    "RETRYSTORM_ADMIN_TOKEN",
    "RETRYSTORM_WEB_TOKEN",
    "GRAFANA_PASSWORD",
    "GRAFANA_TOKEN",
)
#: A token travels in a header: visible ASCII without spaces (RFC 6750's b64token and more).
_TOKEN = re.compile(r"[\x21-\x7e]+")
_HEADER_CHARS = 200


def check_token(token: str, what: str) -> None:
    """Raise :class:`SpecError` unless ``token`` is empty (no token) or can travel in a header."""
    if token and not _TOKEN.fullmatch(token):
        raise SpecError(f"{what}: expected visible ASCII characters without spaces (it is sent in a header)")


def without_secrets(environment: Mapping[str, str]) -> dict[str, str]:
    """``environment`` without the project's secrets (:data:`SECRET_ENVIRONMENT`)."""
    return {name: value for name, value in environment.items() if name not in SECRET_ENVIRONMENT}


def host_name(host: str) -> str:
    """The name part of a ``Host`` value, lower case: ``127.0.0.1:8071`` -> ``127.0.0.1``; ``[::1]:80`` -> ``[::1]``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host.partition("]")[0] + "]"
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def _origin_authority(origin: str) -> str:
    """``http://127.0.0.1:8089`` -> ``127.0.0.1:8089``: what the browser's ``Host`` was on that page."""
    scheme, separator, rest = origin.strip().partition("://")
    return rest.lower() if separator and scheme.lower() in ("http", "https") and "/" not in rest else ""


def _quoted(value: str) -> str:
    return repr(value[:_HEADER_CHARS] + ("…" if len(value) > _HEADER_CHARS else ""))


@dataclasses.dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request is refused: its status, one line, and the ``WWW-Authenticate`` values of a 401."""

    status: int
    message: str
    challenges: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class RequestFacts:
    """What the guard reads of a request: header values as sent (``None``: absent) and whether it has a body."""

    method: str
    host: str | None
    origin: str | None = None
    fetch_site: str | None = None
    content_type: str | None = None
    has_body: bool = False
    authorization: str | None = None


class RequestGuard:
    """The rules of one surface (see the module's docstring).

    ``surface`` names it in messages (``the chaos API``); ``token_hint`` says where its token is set
    (``--token or RETRYSTORM_CHAOS_TOKEN``); ``basic_realm``: also take HTTP Basic with the token as the
    password, and ask a browser for it under this realm (the web UI).
    """

    __slots__ = ("_basic_realm", "_expected", "surface", "token_hint")

    def __init__(self, token: str, *, surface: str, token_hint: str, basic_realm: str | None = None) -> None:
        check_token(token, f"the token of {surface}")
        self._expected = token.encode("ascii")
        self.surface = surface
        self.token_hint = token_hint
        self._basic_realm = basic_realm

    @property
    def has_token(self) -> bool:
        """Whether a token is set (then every guarded path needs it, and any ``Host`` is answered)."""
        return bool(self._expected)

    def authorized(self, authorization: str | bytes | None) -> bool:
        """Whether ``authorization`` (the header's value) carries the token; always true without one."""
        if not self._expected:
            return True
        raw = authorization.encode("latin-1") if isinstance(authorization, str) else authorization or b""
        scheme, _, credentials = raw.strip().partition(b" ")
        credentials = credentials.strip()
        scheme = scheme.lower()
        if scheme == b"basic" and self._basic_realm is not None:
            credentials = _basic_password(credentials)
        elif scheme != b"bearer":
            credentials = b""
        # compare_digest takes as long for any credentials of a given length
        return hmac.compare_digest(credentials, self._expected) and bool(credentials)

    def unauthorized(self) -> Refusal:
        """The 401 of a request without the token."""
        challenges = [f'Bearer realm="retrystorm: {self.surface}"']
        if self._basic_realm is not None:
            challenges.insert(0, f'Basic realm="{self._basic_realm}", charset="UTF-8"')
        how = "Authorization: Bearer TOKEN" + (" or the browser's login (any user name)" if self._basic_realm else "")
        return Refusal(401, f"missing or wrong bearer token: send {how}; TOKEN is {self.token_hint}", tuple(challenges))

    def cross_site(self, facts: RequestFacts) -> Refusal | None:
        """403 for what a page of another site made a browser send, and for a foreign ``Host`` without a token."""
        why = f"{self.surface} is not for other sites' pages"
        site = facts.fetch_site
        if site is not None and site.strip().lower() not in OWN_FETCH_SITES:
            return Refusal(403, f"refusing a {_quoted(site)[1:-1]} request (Sec-Fetch-Site): {why}")
        host = facts.host
        if host is None or not host.strip():
            return Refusal(403, "refusing a request without a Host header: send Host: 127.0.0.1:PORT")
        origin = facts.origin
        if origin is not None and _origin_authority(origin) != host.strip().lower():
            return Refusal(403, f"refusing a request from origin {_quoted(origin)[1:-1]}: {why}")
        if not self._expected and host_name(host) not in LOOPBACK_HOSTS:
            return Refusal(
                403,
                f"refusing Host {_quoted(host)}: without a token {self.surface} answers loopback names only "
                f"(127.0.0.1, localhost, [::1]); other names need its token ({self.token_hint})",
            )
        return None

    def admit(self, facts: RequestFacts, *, open_path: bool = False) -> Refusal | None:
        """Steps 1 and 2: the token (unless ``open_path``), then :meth:`cross_site`."""
        if not open_path and not self.authorized(facts.authorization):
            return self.unauthorized()
        return self.cross_site(facts)

    def unsupported_body(self, facts: RequestFacts) -> Refusal | None:
        """Step 3: 415 unless a body (or a content type named without one) is ``application/json``."""
        content_type = facts.content_type
        if content_type is None and not facts.has_body:
            return None
        media = (content_type or "").partition(";")[0].strip().lower()
        if media == JSON:
            return None
        got = _quoted(media) if content_type is not None else "none"
        return Refusal(415, f"Content-Type: got {got}, expected {JSON}")


def _basic_password(credentials: bytes) -> bytes:
    """The password of HTTP Basic credentials (``base64(user:password)``); empty when malformed."""
    try:
        decoded = base64.b64decode(credentials, validate=True)
    except (binascii.Error, ValueError):
        return b""
    return decoded.partition(b":")[2]
