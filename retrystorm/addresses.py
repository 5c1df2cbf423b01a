"""Addresses given by a user: a service to call (``--chaos-url``, ``--target-url``...:
``http(s)://HOST[:PORT][/PATH]``), and whether a host to listen on is loopback only."""

from __future__ import annotations

import ipaddress
import socket
import urllib.parse

from retrystorm.errors import UserError


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


def grpc_address(text: str) -> str:
    """``text`` without surrounding blanks and a trailing ``/``, if it is a gRPC service to call.

    Accepted: ``grpc://HOST:PORT`` (a host, a port from 1 to 65535, nothing else: a gRPC call names its method
    itself). Otherwise ``ValueError`` (a :class:`BadPortError` when only the port is wrong).
    """
    value = text.strip().rstrip("/")
    parts = urllib.parse.urlsplit(value)
    if parts.scheme != "grpc" or not parts.hostname or parts.path or parts.query or parts.fragment:
        raise ValueError(f"not a grpc://HOST:PORT address: {text!r}")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if not port:
        raise BadPortError(f"the port of {text!r} is not a number from 1 to 65535")
    return value


def is_loopback_host(host: str) -> bool:
    """Whether every address ``host`` stands for is a loopback address (127.0.0.0/8, ``::1``).

    Read by resolving, never from the text: an address literal through :mod:`ipaddress`
    (an IPv4-mapped IPv6 address by its IPv4 part), a name through ``getaddrinfo``, every
    address of which must be loopback (``localhost`` is; ``127.attacker.example`` is a
    name like any other). An empty host (every interface) or a name that does not
    resolve is not loopback.
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if not text:
        return False
    literal = _address(text)
    if literal is not None:
        return _is_loopback(literal)
    try:
        found = socket.getaddrinfo(text, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    addresses = [_address(str(info[4][0])) for info in found]
    return bool(addresses) and all(address is not None and _is_loopback(address) for address in addresses)


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.partition("%")[0])  # fe80::1%eth0: the scope is not part of it
    except ValueError:
        return None


def _is_loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback  # ::ffff:127.0.0.1 (Python 3.11 calls it not loopback)
    return address.is_loopback


def host_port(text: str, option: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[V6]:PORT`` for IPv6) as a pair; a :class:`UserError` naming ``option`` otherwise."""
    host, colon, port = text.strip().rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536 or len(text) > 300:
        raise UserError(f"{option}: got {text[:80]!r}, expected HOST:PORT, e.g. 10.0.0.1:5557")
    return host, int(port)


def url_host(host: str) -> str:
    """``host`` as a URL writes it: an IPv6 address in brackets (``[::1]``), anything else as it is."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


#: The accept queue of :func:`listen_sockets` (asyncio's ``create_server`` default).
LISTEN_BACKLOG = 100


def listen_sockets(host: str, port: int) -> list[socket.socket]:
    """Sockets listening on every address ``host`` resolves to, all on one port; raises ``OSError``.

    ``port`` 0 lets the kernel choose the first socket's port, and the others take the same one, so the port a
    server announces (``sockets[0].getsockname()[1]``) is the one it serves on. An IPv6 socket takes IPv6 only, as
    asyncio's servers do. The caller serves them (``aiohttp.web.run_app(sock=...)``).
    """
    found = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(found):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            chosen = sockets[0].getsockname()[1] if len(sockets) > 1 else port
            sock.bind((address[0], chosen, *address[2:]))
            sock.listen(LISTEN_BACKLOG)  # a client of the announced address waits in the queue, never refused
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets
