"""The HTTP layer: keep-alive, pipelining in order, and bad input answered with one-line 4xx."""

import asyncio

import pytest

from target.probe import encode_request, fetch, read_reply
from target.service.http import MAX_BODY_BYTES, MAX_HEADER_BYTES, MAX_URL_BYTES


async def raw_exchange(port, data):
    """Send ``data`` and read until the server closes the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(data)
    received = await reader.read(-1)
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
    (b"DELETE /api HTTP/1.1\r\nConnection: close\r\n\r\n", 405, "DELETE not allowed on /api; use GET"),
]


@pytest.mark.parametrize(("data", "status", "message"), BAD_INPUT)
def test_bad_input_gets_a_one_line_4xx(run, serving, data, status, message):
    async def scenario():
        async with serving() as app:
            received = await raw_exchange(app.port, data)
            head, _, body = received.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 %d " % status)
            assert body.count(b"\n") == 1
            assert message in body.decode()

    run(scenario())


def test_bad_input_loses_nothing_in_flight(run, serving, clock, metric, eventually):
    async def scenario():
        async with serving(clock) as app:
            reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
            writer.write(encode_request("GET", "/api"))
            await eventually(lambda: app.driver.in_flight == 1)
            for data, _, _ in BAD_INPUT:
                await raw_exchange(app.port, data)
            bad_admin = await fetch(app.port, "/admin/model", "PUT", b'{"name": "exponential", "limit": -1}')
            assert bad_admin.status == 400
            assert (await fetch(app.port, "/healthz")).status == 200
            assert app.driver.in_flight == 1
            clock.now_s = 0.15
            assert (await read_reply(reader)).status == 200
            for status, count in {"400": 3, "404": 1, "405": 1, "413": 1, "414": 1, "431": 1}.items():
                assert metric(app, "retrystorm_target_bad_requests_total", status=status) == count
            writer.close()

    run(scenario())


def test_405_names_the_allowed_methods(run, serving):
    async def scenario():
        async with serving() as app:
            reply = await fetch(app.port, "/admin/model", "POST", b"{}")
            assert reply.status == 405
            assert reply.headers["allow"] == "GET, PUT"

    run(scenario())


def test_keep_alive_and_pipelined_requests_are_answered_in_order(run, serving, clock, eventually):
    async def scenario():
        async with serving(clock) as app:
            reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
            writer.write(encode_request("GET", "/api") + encode_request("GET", "/admin/model"))
            await eventually(lambda: app.driver.in_flight == 1)
            clock.now_s = 0.15
            first, second = await read_reply(reader), await read_reply(reader)
            assert (first.status, first.body) == (200, b"OK")
            assert second.headers["content-type"] == "application/json"
            writer.write(encode_request("GET", "/healthz"))  # the connection is still open
            assert (await read_reply(reader)).status == 200
            writer.close()

    run(scenario())


def test_http_1_0_closes_after_the_response(run, serving):
    async def scenario():
        async with serving() as app:
            received = await raw_exchange(app.port, b"GET /healthz HTTP/1.0\r\n\r\n")
            assert received.startswith(b"HTTP/1.1 200 OK\r\n")
            assert b"Connection: close\r\n" in received

    run(scenario())


def test_a_half_closed_request_is_still_answered_when_immediate(run, serving):
    async def scenario():
        async with serving() as app:
            reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
            writer.write(encode_request("GET", "/healthz"))
            writer.write_eof()
            assert (await read_reply(reader)).status == 200
            writer.close()

    run(scenario())


def test_one_off_responses_are_never_served_from_the_cache():
    # A freed response's address is soon reused; a cache keyed by address once sent a
    # stale body (found by fuzzing the admin API).
    from target.service.http import Response, _Encoder

    encode = _Encoder()
    for i in range(200):
        assert encode(Response.text(400, f"message {i}"), True).endswith(f"message {i}\n".encode())
