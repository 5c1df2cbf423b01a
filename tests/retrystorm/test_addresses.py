import errno
import ipaddress
import socket

import pytest

from retrystorm.addresses import BadPortError, http_address, is_loopback_host, listen_sockets, url_host


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" http://127.0.0.1:8071/ ", "http://127.0.0.1:8071"),
        ("https://chaos.example/api/", "https://chaos.example/api"),
        ("http://target:8070", "http://target:8070"),
    ],
)
def test_an_address_comes_back_without_blanks_or_a_trailing_slash(text, expected):
    assert http_address(text) == expected


@pytest.mark.parametrize("text", ["127.0.0.1:8071", "ftp://host", "http://", "http://host/?a=1", "http://host/#top"])
def test_anything_but_an_http_address_with_a_host_is_refused(text):
    with pytest.raises(ValueError, match="not an http:// or https:// address") as refused:
        http_address(text)
    assert not isinstance(refused.value, BadPortError)


@pytest.mark.parametrize("text", ["http://host:0", "http://host:99999", "http://host:http"])
def test_a_port_outside_1_to_65535_is_a_bad_port(text):
    with pytest.raises(BadPortError, match="not a number from 1 to 65535"):
        http_address(text)


def _resolving_to(*addresses):
    def getaddrinfo(host, port, *args, **kwargs):
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        family = {4: socket.AF_INET, 6: socket.AF_INET6}
        return [(family[ipaddress.ip_address(a).version], socket.SOCK_STREAM, 6, "", (a, 0)) for a in addresses]

    return getaddrinfo


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),  # noqa: S104 - the address checked, never bound
        ("::", False),
        ("", False),
        ("10.1.2.3", False),
        ("::ffff:10.1.2.3", False),
        ("fe80::1%lo", False),
    ],
)
def test_an_address_literal_is_read_as_an_address(monkeypatch, host, loopback):
    monkeypatch.setattr(socket, "getaddrinfo", _resolving_to())  # a literal is never looked up
    assert is_loopback_host(host) is loopback


@pytest.mark.parametrize(
    ("addresses", "loopback"),
    [
        (("127.0.0.1", "::1"), True),
        (("203.0.113.5",), False),  # 127.attacker.example: a name, resolved like any other
        (("127.0.0.1", "192.0.2.7"), False),  # every address must be loopback
        ((), False),  # does not resolve
    ],
)
def test_a_name_is_resolved_and_every_address_must_be_loopback(monkeypatch, addresses, loopback):
    monkeypatch.setattr(socket, "getaddrinfo", _resolving_to(*addresses))
    assert is_loopback_host("127.attacker.example") is loopback


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_listen_sockets_on_port_0_share_the_port_the_kernel_chose_and_accept_at_once(host):
    sockets = listen_sockets(host, 0)
    try:
        ports = {sock.getsockname()[1] for sock in sockets}
        assert len(ports) == 1 and ports != {0}
        for sock in sockets:  # listening already: a client that connects now waits in the queue
            with socket.create_connection(sock.getsockname()[:2], timeout=5):
                pass
    finally:
        for sock in sockets:
            sock.close()


def test_a_busy_port_raises_address_in_use():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        with pytest.raises(OSError, match="Address already in use") as refused:
            listen_sockets("127.0.0.1", busy.getsockname()[1])
        assert refused.value.errno == errno.EADDRINUSE


@pytest.mark.parametrize(("host", "shown"), [("::1", "[::1]"), ("[::1]", "[::1]"), ("127.0.0.1", "127.0.0.1")])
def test_url_host_brackets_an_ipv6_address(host, shown):
    assert url_host(host) == shown
