"""Free ports on loopback, for programs that cannot report the port they bound themselves."""

from __future__ import annotations

import socket

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port free on ``host`` right now (the kernel's choice for port 0).

    Another process may take it before the caller binds it: prefer a server that binds port 0 and
    reports its port, and use this only for programs that cannot (Locust's web UI, a master's bind port).
    """
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def refused_port(host: str = LOOPBACK) -> tuple[socket.socket, int]:
    """A socket bound to a port but not listening, and the port: connections to it are refused.

    The caller closes the socket (``with sock:``); until then no other program can take the port.
    """
    sock = socket.socket()
    sock.bind((host, 0))
    return sock, int(sock.getsockname()[1])
