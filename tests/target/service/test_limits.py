"""Connection limits on a real server on 127.0.0.1: header and idle timeouts, never while a response is owed,
and a bound on open connections. Timeouts are short here; no test reads the clock: each waits (bounded) for a
connection to be closed, or checks that one is still open after another one, made to expire, was closed."""

import asyncio
import os
import signal

import pytest

from retrystorm.target.models import parse_model
from retrystorm.target.probe import encode_request, fetch, read_reply
from retrystorm.target.service import ConnectionLimits

SHORT = ConnectionLimits(header_timeout_s=0.4, idle_timeout_s=0.4)
#: Bound on any wait for the server to close a connection.
CLOSE_WITHIN_S = 20.0
TIMED_OUT = "retrystorm_target_timed_out_connections_total"
REFUSED = "retrystorm_target_refused_connections_total"


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """True when the server closes the connection (EOF, or a reset) within CLOSE_WITHIN_S."""
    try:
        rest = await asyncio.wait_for(reader.read(), CLOSE_WITHIN_S)
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return rest == b""


def test_a_connection_that_sends_nothing_is_closed_after_the_idle_timeout(live):
    async def scenario():
        async with live.serve(limits=SHORT) as app:
            reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
            assert await closed_by_server(reader)
            assert live.metric(app, TIMED_OUT, timeout="idle") == 1
            writer.close()

    live.run(scenario())


def test_a_keep_alive_connection_is_closed_after_the_idle_timeout(live):
    async def scenario():
        async with live.serve(limits=SHORT) as app:
            reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
            for _ in range(3):
                writer.write(encode_request("GET", "/healthz"))
                assert (await read_reply(reader)).status == 200
            assert await closed_by_server(reader)
            assert live.metric(app, TIMED_OUT, timeout="idle") == 1
            writer.close()

    live.run(scenario())


def test_slowloris_connections_are_closed_after_the_header_timeout_and_others_are_served(live):
    limits = ConnectionLimits(header_timeout_s=0.5, idle_timeout_s=3600)  # only the header timeout can close them
    count = 300

    async def scenario():
        async with live.serve(limits=limits) as app:
            streams = [await asyncio.open_connection("127.0.0.1", app.port) for _ in range(count)]
            for _, writer in streams:
                writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # a head that never ends
            done = asyncio.Event()

            async def attacked():
                try:
                    assert (await fetch(app.port, "/healthz")).status == 200  # served meanwhile
                    return await asyncio.gather(*(closed_by_server(reader) for reader, _ in streams))
                finally:
                    done.set()

            _, closed = await asyncio.gather(_trickle([writer for _, writer in streams], done), attacked())
            assert all(closed), f"{closed.count(False)} of {count} still open"
            assert live.metric(app, TIMED_OUT, timeout="header") == count
            assert live.metric(app, TIMED_OUT, timeout="idle") == 0
            await live.eventually(lambda: not app.http.connections)
            for _, writer in streams:
                writer.close()

    live.run(scenario())


async def _trickle(writers, done):
    """One more header line on every connection every 50 ms until ``done`` (or the test's own timeout)."""
    while not done.is_set():
        for writer in writers:
            if not writer.is_closing():
                writer.write(b"X-Slow: 1\r\n")
        await asyncio.sleep(0.05)


def test_no_timeout_while_a_response_is_owed_however_long_the_model_holds_it(live):
    async def scenario():
        async with live.serve(live.clock, limits=SHORT) as app:
            held_reader, held_writer = await asyncio.open_connection("127.0.0.1", app.port)
            # one request held by the model, one pipelined behind it, one that has begun arriving
            held_writer.write(encode_request("GET", "/api") + encode_request("GET", "/healthz") + b"GET /hea")
            await live.eventually(lambda: app.driver.in_flight == 1)
            control_reader, control_writer = await asyncio.open_connection("127.0.0.1", app.port)
            assert await closed_by_server(control_reader)  # sweeps ran past both timeouts
            assert not held_reader.at_eof()
            assert app.driver.in_flight == 1
            live.clock.now_s = 0.15  # the model releases it now
            assert (await read_reply(held_reader)).status == 200
            assert (await read_reply(held_reader)).status == 200
            # owing nothing, with a request half sent: the header timeout closes it
            assert await closed_by_server(held_reader)
            assert live.metric(app, TIMED_OUT, timeout="header") == 1
            for writer in (held_writer, control_writer):
                writer.close()

    live.run(scenario())


def test_past_max_connections_a_new_connection_is_closed_at_once_and_counted(live):
    limits = ConnectionLimits(max_connections=5)

    async def scenario():
        async with live.serve(model=parse_model("fixed:base_delay=1m"), limits=limits) as app:
            held = await live.hold(app, 5)
            reader, writer = await asyncio.open_connection("127.0.0.1", app.port)
            writer.write(encode_request("GET", "/healthz"))
            assert await closed_by_server(reader)  # no response: closed unread
            assert live.metric(app, REFUSED) == 1
            assert len(app.http.connections) == 5
            assert app.driver.in_flight == 5  # the held requests are untouched
            held[0][1].close()  # one leaves: room for one more
            await live.eventually(lambda: len(app.http.connections) == 4)
            assert (await fetch(app.port, "/healthz")).status == 200
            assert live.metric(app, REFUSED) == 1
            for _, held_writer in held[1:]:
                held_writer.close()
            writer.close()

    live.run(scenario())


def test_the_counters_are_in_the_metrics(live):
    async def scenario():
        async with live.serve() as app:
            text = (await fetch(app.port, "/metrics")).text
            assert f"{REFUSED} 0.0" in text
            assert f'{TIMED_OUT}{{timeout="header"}} 0.0' in text
            assert f'{TIMED_OUT}{{timeout="idle"}} 0.0' in text

    live.run(scenario())


@pytest.mark.live
@pytest.mark.signals
def test_the_time_a_frozen_server_stood_still_does_not_count_against_its_clients(live, target_process):
    # The idle timeout is 1 s; the server is frozen for 3 s while a client's keep-alive
    # connection is idle. After the resume the client's next request is served on it.
    target = target_process("--idle-timeout", "1s", "--model", "fixed", "--base-delay", "0")

    async def scenario():
        reader, writer = await asyncio.open_connection("127.0.0.1", target.port)
        writer.write(encode_request("GET", "/healthz"))
        assert (await read_reply(reader)).status == 200
        os.kill(target.proc.pid, signal.SIGSTOP)
        try:
            await asyncio.sleep(3)
            writer.write(encode_request("GET", "/healthz"))
            await writer.drain()
        finally:
            os.kill(target.proc.pid, signal.SIGCONT)
        assert (await asyncio.wait_for(read_reply(reader), CLOSE_WITHIN_S)).status == 200
        assert await closed_by_server(reader)  # and the idle timeout still works afterwards
        writer.close()

    live.run(scenario())
