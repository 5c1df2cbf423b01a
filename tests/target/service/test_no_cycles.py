"""Serving leaves no reference cycles: reference counting frees every connection, request
and transport, so the process can keep the cyclic collector's full passes rare (a full
pass over 10,000 open connections stops the event loop for a noticeable time)."""

import asyncio
import gc

from retrystorm.target.probe import encode_request, fetch, read_reply, send_and_leave
from retrystorm.target.service.http import HttpConnection, Request


def test_connections_and_requests_are_freed_without_the_collector(live):
    async def scenario():
        async with live.serve(live.clock) as app:
            gc.collect()
            gc.disable()
            gc.set_debug(gc.DEBUG_SAVEALL)
            try:
                await _traffic(app, live)
                gc.collect()
                ours = [obj for obj in gc.garbage if isinstance(obj, HttpConnection | Request) or _served(obj, app)]
            finally:
                gc.set_debug(0)
                gc.garbage.clear()
                gc.enable()
            assert ours == []

    live.run(scenario())


def _served(obj, app):
    """Whether ``obj`` is the transport of a connection the app served (its local port is the app's)."""
    if not isinstance(obj, asyncio.BaseTransport):
        return False
    sockname = obj.get_extra_info("sockname")
    return isinstance(sockname, tuple) and sockname[1] == app.port


async def _traffic(app, live):
    """Answered, abandoned, pipelined, malformed and admin requests; every connection closed."""
    streams = [await asyncio.open_connection("127.0.0.1", app.port) for _ in range(5)]
    for _, writer in streams:
        writer.write(encode_request("GET", "/api") + encode_request("GET", "/healthz"))
    for _ in range(5):
        await send_and_leave(app.port)
    await fetch(app.port, "/admin/model", "PUT", b'{"name": "exponential", "limit": -1}')
    await fetch(app.port, "/metrics")
    _, bad = await asyncio.open_connection("127.0.0.1", app.port)
    bad.write(b"NONSENSE\r\n\r\n")
    await live.eventually(lambda: app.driver.in_flight == 10)
    live.clock.now_s = 0.15
    for reader, writer in streams:
        assert (await read_reply(reader)).status == 200
        assert (await read_reply(reader)).status == 200
        writer.close()
        await writer.wait_closed()
    bad.close()
    await live.eventually(lambda: app.driver.in_flight == 0 and not app.http.connections)
