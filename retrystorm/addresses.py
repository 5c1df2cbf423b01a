"""A service address given by a user (``--chaos-url``, ``--target-url``...): ``http(s)://HOST[:PORT][/PATH]``."""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse


class BadPortError(ValueError):
    """The address's port is not a number from 1 to 65535."""


def http_address(text: str) -> str:
    """``text`` without surrounding blanks and a trailing ``/``, if it is an address to call.

    Accepted: scheme ``http`` or ``https``, a host, an optional port from 1 to 65535,
    an optional path prefix; no query, no fragment. Otherwise ``ValueError`` (a
    :class:`BadPortError` when only the port is wrong), for the caller to word for its option.
    """
    value = text.strip().rstrip("/")
    parts = urllib.parse.urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"not an http:// or https:// address with a host: {text!r}")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise BadPortError(f"the port of {text!r} is not a number from 1 to 65535")
    return value


def is_loopback_bind(host: str) -> bool:
    """Whether binding to ``host`` keeps a server on this machine: every address it resolves to is loopback.

    The address is resolved, not read as text: ``127.attacker.example`` is a host name
    like any other. A host that does not resolve is a :class:`ValueError` naming it.
    """
    name = host.strip().removeprefix("[").removesuffix("]")
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError) as error:
        raise ValueError(f"cannot resolve {host!r}: {error}") from None
    return bool(found) and all(ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in found)
