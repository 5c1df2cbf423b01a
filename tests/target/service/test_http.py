"""The HTTP layer: keep-alive, pipelining in order, and bad input answered with one-line 4xx."""

import asyncio
import re

import pytest

from retrystorm.target.probe import encode_request, fetch, read_reply
from retrystorm.target.service.http import MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_URL_BYTES


async def raw_exchange(port, data, timeout_s=10.0):
    """Send ``data`` and read until the server closes the connection (which must happen within ``timeout_s``)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    try:
        received = await asyncio.wait_for(reader.read(-1), timeout_s)
    except TimeoutError:
        raise AssertionError(f"the server kept the connection open after {data[:60]!r}") from None
    finally:
        writer.close()
    return received


BAD_INPUT = [
    (b"GARBAGE\r\n\r\n", 400, "malformed HTTP request"),
    (b"GET / HTTP/1.1\r\nbad header line\r\n\r\n", 400, "malformed HTTP request"),
    (b"GET /" + b"a" * (MAX_URL_BYTES + 1) + b" HTTP/1.1\r\n\r\n", 414, "request target longer than"),
    (b"GET /healthz HTTP/1.1\r\nX-Big: " + b"b" * MAX_HEADER_BYTES + b"\r\n\r\n", 431, "request headers larger"),
    (
        b"PUT /admin/model HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % (MAX_BODY_BYTES + 1) + b"{" * (MAX_BODY_BYTES + 1),
        413,
        "request body larger",
    ),
    (b"GET /nowhere HTTP/1.1\r\nConnection: close\r\n\r\n", 404, "no such path '/nowhere'"),
    # request lines that dropped the connection with a fatal protocol error in the log
    (b"GET http://[::1/ HTTP/1.1\r\nHost: x\r\n\r\n", 400, "request target 'http://[::1/' is not a path"),
    (b"CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: x\r\n\r\n", 405, "CONNECT not allowed: this is not a proxy"),
    # absolute and asterisk forms (served as a path, and a 404, before)
    (b"GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: x\r\n\r\n", 400, "is not a path; send the path alone"),
    (b"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", 400, "request target '*' is not a path"),
    (b"DELETE /api HTTP/1.1\r\nConnection: close\r\n\r\n", 405, "DELETE not allowed on /api; use GET"),
]


#: Other malformed request lines: each still gets its one-line 4xx.
MALFORMED_REQUEST_LINES = [
    b"GET\r\n\r\n",
    b"GET / HTTP/1.1 extra\r\n\r\n",
    b"GET x HTTP/1.1\r\n\r\n",
    b"GET /\x00 HTTP/1.1\r\n\r\n",
    b"G\xffT / HTTP/1.1\r\n\r\n",
    b"GET / HTTX/1.1\r\n\r\n",
    b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    b"GET http:// HTTP/1.1\r\n\r\n",
    b"GET http://[::1]:99999/ HTTP/1.1\r\n\r\n",
    b"CONNECT [::1 HTTP/1.1\r\n\r\n",
    b"CONNECT / HTTP/1.1\r\n\r\n",
]


@pytest.mark.parametrize(("data", "status", "message"), BAD_INPUT)
def test_bad_input_gets_a_one_line_4xx(live, data, status, message, caplog):
    async def scenario():
        async with live.serve() as app:
            received = await raw_exchange(app.port, data)  # and the server closes the connection
            head, _, body = received.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 %d " % status)
            assert body.count(b"\n") == 1
            assert message in body.decode()

    live.run(scenario())
    assert not [record for record in caplog.records if record.levelname in ("ERROR", "CRITICAL")]


@pytest.mark.parametrize("data", MALFORMED_REQUEST_LINES)
def test_malformed_request_lines_get_a_4xx_and_a_close_without_errors_logged(live, data, caplog):
    async def scenario():
        async with live.serve() as app:
            received = await raw_exchange(app.port, data)
            assert re.match(rb"HTTP/1.1 4\d\d ", received), received
            assert received.partition(b"\r\n\r\n")[2].count(b"\n") == 1
            assert (await fetch(app.port, "/healthz")).status == 200

    live.run(scenario())
    assert not [record for record in caplog.records if record.levelname in ("ERROR", "CRITICAL")]


def test_bad_input_loses_nothing_in_flight(live):
    async def scenario():
        async with live.serve(live.clock) as app:
            [(reader, writer)] = await live.hold(app, 1)
            for data, _, _ in BAD_INPUT:
                await raw_exchange(app.port, data)
            bad_admin = await fetch(app.port, "/admin/model", "PUT", b'{"name": "exponential", "limit": -1}')
            assert bad_admin.status == 400
            assert (await fetch(app.port, "/healthz")).status == 200
            assert app.driver.in_flight == 1
            live.clock.now_s = 0.15
            assert (await read_reply(reader)).status == 200
            for status, count in {"400": 6, "404": 1, "405": 2, "413": 1, "414": 1, "431": 1}.items():
                assert live.metric(app, "retrystorm_target_bad_requests_total", status=status) == count
            writer.close()

    live.run(scenario())


def test_405_names_the_allowed_methods(live):
    async def scenario():
        async with live.serve() as app:
            reply = await fetch(app.port, "/admin/model", "POST", b"{}")
            assert reply.status == 405
            assert reply.headers["allow"] == "GET, PUT"

    live.run(scenario())


def test_keep_alive_and_pipelined_requests_are_answered_in_order(live):
    async def scenario():
        async with live.serve(live.clock) as app:
            reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
            writer.write(encode_request("GET", "/api") + encode_request("GET", "/admin/model"))
            await live.eventually(lambda: app.driver.in_flight == 1)
            live.clock.now_s = 0.15
            first, second = await read_reply(reader), await read_reply(reader)
            assert (first.status, first.body) == (200, b"OK")
            assert second.headers["content-type"] == "application/json"
            writer.write(encode_request("GET", "/healthz"))  # the connection is still open
            assert (await read_reply(reader)).status == 200
            writer.close()

    live.run(scenario())


def test_http_1_0_closes_after_the_response(live):
    async def scenario():
        async with live.serve() as app:
            received = await raw_exchange(app.port, b"GET /healthz HTTP/1.0\r\n\r\n")
            assert received.startswith(b"HTTP/1.1 200 OK\r\n")
            assert b"Connection: close\r\n" in received

    live.run(scenario())


def test_a_half_closed_request_is_still_answered_when_immediate(live):
    async def scenario():
        async with live.serve() as app:
            reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
            writer.write(encode_request("GET", "/healthz"))
            writer.write_eof()
            assert (await read_reply(reader)).status == 200
            writer.close()

    live.run(scenario())


def test_one_off_responses_are_never_served_from_the_cache():
    # A freed response's address is soon reused; a cache keyed by address once sent a
    # stale body (found by fuzzing the admin API).
    from retrystorm.target.service.responses import Encoder, Response

    encode = Encoder()
    for i in range(200):
        assert encode(Response.text(400, f"message {i}"), True).endswith(f"message {i}\n".encode())


def test_an_upgrade_request_is_answered_then_closed(live):
    # No upgrades: the request is served as HTTP/1.1 and the connection ends after it
    # (it used to stay open, ignoring everything the client sent next).
    async def scenario():
        async with live.serve() as app:
            data = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: upgrade\r\nUpgrade: websocket\r\n\r\n"
            received = await raw_exchange(app.port, data)
            assert received.startswith(b"HTTP/1.1 200 OK\r\n")

    live.run(scenario())
