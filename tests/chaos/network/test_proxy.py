"""The fault proxy on loopback, in process: real TCP connections to a real upstream server through it."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
import time
from pathlib import Path

import pytest

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.network.control import ProxyControl, serve_control
from retrystorm.chaos.network.proxy import Proxy
from retrystorm.chaos.network.toxics import Delay, Hang, Loss, Reset


async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Echo every chunk; close after the client's end of stream."""
    with contextlib.suppress(OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    writer.close()


async def started(**kwargs) -> tuple[Proxy, asyncio.Server, int]:
    upstream = await asyncio.start_server(echo, "127.0.0.1", 0)
    port = upstream.sockets[0].getsockname()[1]
    proxy = Proxy(("127.0.0.1", port), rng=random.Random(1), **kwargs)
    _, listen = await proxy.start("127.0.0.1", 0)
    return proxy, upstream, listen


async def stopped(proxy: Proxy, upstream: asyncio.Server) -> None:
    await proxy.close()
    upstream.close()


async def round_trip(port: int, payload: bytes, timeout_s: float = 5.0) -> tuple[bytes, float]:
    """Send ``payload``, half-close, read to the end: what came back and how long it took."""
    start = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(payload)
    writer.write_eof()
    data = await asyncio.wait_for(reader.read(), timeout_s)
    writer.close()
    return data, time.monotonic() - start


def test_bytes_go_through_unchanged_both_ways():
    async def scenario():
        proxy, upstream, port = await started()
        payload = random.Random(2).randbytes(3 * 1024 * 1024)
        data, _ = await round_trip(port, payload)
        status = proxy.status()
        await stopped(proxy, upstream)
        return data == payload, status

    same, status = asyncio.run(scenario())
    assert same
    assert status["stats"]["bytes_upstream"] == status["stats"]["bytes_downstream"] == 3 * 1024 * 1024


def test_a_delay_holds_answers_for_at_least_its_latency_and_keeps_their_order():
    async def scenario():
        proxy, upstream, port = await started()
        proxy.set("d1", Delay(latency_s=0.3, jitter_s=0.2), time.monotonic() + 30)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        sent_at = time.monotonic()
        for index in range(200):  # many chunks, each with its own jittered delay: order must hold
            writer.write(f"{index:05d}".encode())
            await writer.drain()
            await asyncio.sleep(0.001)
        first = await reader.readexactly(5)
        waited = time.monotonic() - sent_at
        rest = await reader.readexactly(199 * 5)
        writer.close()
        await stopped(proxy, upstream)
        return first + rest, waited

    data, waited = asyncio.run(scenario())
    assert data == b"".join(f"{index:05d}".encode() for index in range(200))
    assert waited >= 0.1  # latency 0.3 s minus the most jitter: never sooner


def test_a_toxic_ends_at_its_deadline_by_the_proxy_itself():
    async def scenario():
        proxy, upstream, port = await started()
        proxy.set("d1", Delay(latency_s=5.0), time.monotonic() + 0.2)
        in_force = [active.id for active in proxy.toxics()]
        await asyncio.sleep(0.4)
        after = [active.id for active in proxy.toxics()]
        data, _ = await round_trip(port, b"ping")  # would wait 5 s with the delay in force
        stats = proxy.status()["stats"]
        await stopped(proxy, upstream)
        return in_force, after, data, stats

    in_force, after, data, stats = asyncio.run(scenario())
    assert in_force == ["d1"]
    assert after == []
    assert data == b"ping"
    assert stats["toxics_expired"] == 1
    assert "delayed_chunks_downstream" not in stats


def test_setting_a_kind_again_replaces_it_and_kinds_combine():
    async def scenario():
        proxy, upstream, _ = await started()
        now = time.monotonic()
        proxy.set("a", Delay(latency_s=0.1), now + 30)
        proxy.set("b", Delay(latency_s=0.2), now + 30)
        proxy.set("c", Loss(probability=0.5), now + 30)
        ids = sorted(active.id for active in proxy.toxics())
        await stopped(proxy, upstream)
        return ids

    assert asyncio.run(scenario()) == ["b", "c"]


@pytest.mark.parametrize("ahead_s", [-1.0, 0.0, float("nan"), float("inf"), 2e5])
def test_a_deadline_past_or_absurd_is_refused(ahead_s):
    async def scenario():
        proxy, upstream, _ = await started()
        try:
            proxy.set("x", Delay(latency_s=0.1), time.monotonic() + ahead_s)
        finally:
            await stopped(proxy, upstream)

    with pytest.raises(ValueError, match="deadline"):
        asyncio.run(scenario())


def test_a_hang_answers_nothing_then_closes_what_it_held_and_serves_new_connections():
    async def scenario():
        proxy, upstream, port = await started()
        proxy.set("h", Hang(), time.monotonic() + 30)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"hello")
        await writer.drain()
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(reader.read(1), 0.3)  # accepted, never answered
        held = proxy.status()["stats"]["held"]
        proxy.clear("h")
        ended = await asyncio.wait_for(reader.read(), 5)  # closed when the hang ends
        writer.close()
        data, _ = await round_trip(port, b"again")
        await stopped(proxy, upstream)
        return held, ended, data

    held, ended, data = asyncio.run(scenario())
    assert held == 1
    assert ended == b""
    assert data == b"again"


def test_a_hang_that_starts_on_an_open_connection_stops_it_too():
    async def scenario():
        proxy, upstream, port = await started()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"one")
        first = await reader.readexactly(3)
        proxy.set("h", Hang(), time.monotonic() + 30)
        writer.write(b"two")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(reader.read(1), 0.3)
        proxy.clear("h")
        rest = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        await stopped(proxy, upstream)
        return first, rest

    assert asyncio.run(scenario()) == (b"one", b"")


def test_a_reset_resets_new_and_open_connections():
    async def scenario():
        proxy, upstream, port = await started()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"one")
        await reader.readexactly(3)
        proxy.set("r", Reset(), time.monotonic() + 30)
        writer.write(b"two")
        with pytest.raises((ConnectionResetError, asyncio.IncompleteReadError)):
            await asyncio.wait_for(reader.readexactly(3), 5)
        writer.close()
        with pytest.raises(ConnectionResetError):
            await round_trip(port, b"new")
        resets = proxy.status()["stats"]["reset"]
        await stopped(proxy, upstream)
        return resets

    assert asyncio.run(scenario()) == 2


def test_loss_delays_segments_but_never_loses_bytes():
    async def scenario():
        proxy, upstream, port = await started()
        proxy.set("l", Loss(probability=0.3, rto_s=0.01), time.monotonic() + 30)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for index in range(100):
            writer.write(f"{index:04d}".encode())
            await writer.drain()
            await asyncio.sleep(0.002)
        data = await asyncio.wait_for(reader.readexactly(400), 30)
        writer.close()
        stats = proxy.status()["stats"]
        await stopped(proxy, upstream)
        return data, stats

    data, stats = asyncio.run(scenario())
    assert data == b"".join(f"{index:04d}".encode() for index in range(100))
    assert sum(count for name, count in stats.items() if name.startswith("delayed_")) > 0


def test_an_upstream_that_refuses_resets_the_client():
    async def scenario():
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            closed_port = sock.getsockname()[1]
        proxy = Proxy(("127.0.0.1", closed_port), rng=random.Random(1))
        _, port = await proxy.start("127.0.0.1", 0)
        try:
            await round_trip(port, b"x")
        finally:
            failures = proxy.status()["stats"]["upstream_failures"]
            await proxy.close()
        return failures

    with pytest.raises(ConnectionResetError):
        asyncio.run(scenario())


def test_connections_beyond_the_ceiling_are_closed_at_once():
    async def scenario():
        proxy, upstream, port = await started(max_connections=2)
        held = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        for reader, writer in held:
            writer.write(b"x")
            await reader.readexactly(1)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        refused = await asyncio.wait_for(reader.read(), 5)
        refused_count = proxy.status()["stats"]["refused"]
        for _, held_writer in held:
            held_writer.close()
        writer.close()
        await stopped(proxy, upstream)
        return refused, refused_count

    assert asyncio.run(scenario()) == (b"", 1)


def test_the_control_socket_sets_clears_and_refuses_in_one_line(tmp_path: Path):
    path = tmp_path / "control" / "proxy.sock"

    async def scenario():
        proxy, upstream, port = await started()
        path.parent.mkdir(mode=0o700)
        server = await serve_control(proxy, path, ("127.0.0.1", port))
        control = ProxyControl(path)

        def calls():
            mode = path.stat().st_mode & 0o777
            control.set("n1", Delay(latency_s=0.05), time.monotonic() + 30)
            status = control.status()
            refusals = []
            for request in ({"op": "nope"}, {"op": "set", "id": "n2", "toxic": {"kind": "delay"}}, [1]):
                try:
                    control.call(request)  # type: ignore[arg-type]
                except BackendError as error:
                    refusals.append(str(error))
            with socket.socket(socket.AF_UNIX) as raw:
                raw.connect(str(path))
                raw.sendall(b"not json\n")
                garbage = json.loads(raw.makefile().readline())
            return mode, status, control.clear("n1"), control.clear("n1"), refusals, garbage

        found = await asyncio.to_thread(calls)
        server.close()
        await stopped(proxy, upstream)
        return found

    mode, status, cleared, again, refusals, garbage = asyncio.run(scenario())
    assert mode == 0o600
    assert [toxic["id"] for toxic in status["toxics"]] == ["n1"]
    assert status["toxics"][0]["toxic"] == {
        "kind": "delay",
        "latency_s": 0.05,
        "jitter_s": 0.0,
        "direction": "downstream",
    }
    assert (cleared, again) == (True, False)
    assert "op: got 'nope'" in refusals[0]
    assert "delay:" in refusals[1]
    assert "expected a JSON object" in refusals[2]
    assert all("\n" not in refusal for refusal in refusals)
    assert garbage == {"ok": False, "error": "expected one JSON object per line"}
