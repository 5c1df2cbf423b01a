"""The fault proxy: a TCP proxy in front of a service that plays network toxics (:mod:`.toxics`) on its traffic.

Clients connect to the proxy; for each connection it opens one to the service (the *upstream*) and copies bytes
both ways, asking the toxics in force what to do with each new connection and each chunk. Any TCP service works
(HTTP, gRPC, a database); no root and no kernel feature is needed, which is why it is the network path tested on
this project's machines, whose kernels have no ``netem``.

- **Deadlines are the proxy's own.** A toxic is set with the CLOCK_MONOTONIC time at which it ends
  (:meth:`Proxy.set`), and the proxy removes it then by itself: whoever set it may die, the toxic still ends on
  time. This is the dead-man switch of a network toxic, armed in the very act that injects it. A toxic never
  outlives the proxy either: a proxy that is gone carries no traffic, delayed or otherwise.
- **One toxic per kind.** Setting a kind again replaces the one in force (the timeline's levels say which
  holds when windows overlap); toxics of different kinds combine (:func:`.toxics.combine`).
- **Order kept.** Each direction of a connection is a reader and a deliverer: a chunk is read at once and
  leaves at its release time, ``max(read time + its delay, the previous chunk's release)``, so delays never
  reorder a stream and never throttle reading (a 200 ms latency adds 200 ms to an answer, not 200 ms per chunk).
- **Hangs end cleanly.** A connection that hung (nothing forwarded either way) is closed when its hang ends;
  a client that gives up first is noticed, since the proxy keeps reading (and dropping) what it sends.

Ceilings: :data:`MAX_CONNECTIONS` open connections (more are closed at once, counted as ``refused``);
:data:`CHUNK_BYTES` per read and :data:`QUEUED_CHUNKS` queued per direction, so a connection holds at most
``CHUNK_BYTES * QUEUED_CHUNKS`` bytes in memory per direction; :data:`UPSTREAM_CONNECT_TIMEOUT_S` to reach the
service (a refused or timed-out upstream connection resets the client's).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import logging
import math
import random
import socket
import struct
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from retrystorm.chaos.network.toxics import FORWARD, Action, Direction, Toxic, combine

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 10_000
CHUNK_BYTES = 64 * 1024
QUEUED_CHUNKS = 64
UPSTREAM_CONNECT_TIMEOUT_S = 10.0
#: A deadline further ahead than this is refused (a wall-clock time passed as monotonic, or a bug).
MAX_AHEAD_S = 24 * 3600.0


@dataclasses.dataclass(slots=True)
class ActiveToxic:
    """A toxic in force on a proxy until ``until_monotonic``."""

    id: str
    toxic: Toxic
    until_monotonic: float
    started_monotonic: float

    def to_json(self, now: float) -> dict[str, Any]:
        """``{"id", "toxic", "until_monotonic", "left_s"}``."""
        return {
            "id": self.id,
            "toxic": self.toxic.to_json(),
            "until_monotonic": self.until_monotonic,
            "left_s": round(max(0.0, self.until_monotonic - now), 3),
        }


class _Connection:
    """One client connection through the proxy."""

    _ids = itertools.count(1)

    def __init__(self, client: asyncio.StreamWriter) -> None:
        self.id = next(self._ids)
        self.client = client
        self.upstream: asyncio.StreamWriter | None = None
        #: Per toxic id: whether that toxic acts on this connection (drawn once).
        self.applies: dict[str, bool] = {}
        #: The id of the hang that holds this connection, if one does.
        self.hung_by: str | None = None
        self.done = asyncio.Event()

    def reset(self) -> None:
        """Close the client's side with RST (SO_LINGER 0), the upstream's plainly; end the connection."""
        sock = self.client.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.client.transport.abort()
        self.close()

    def close(self) -> None:
        """Close both sides (FIN) and end the connection."""
        for writer in (self.client, self.upstream):
            if writer is not None and not writer.is_closing():
                writer.close()
        self.done.set()


class Proxy:
    """Forwards connections to ``upstream`` (host, port), playing the toxics in force (see the module docstring).

    ``rng`` draws jitters, losses and which connections a partial hang or reset takes; ``clock`` is
    CLOCK_MONOTONIC (deadlines come from other processes on the same host).
    """

    def __init__(
        self,
        upstream: tuple[str, int],
        *,
        rng: random.Random,
        clock: Callable[[], float] = time.monotonic,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        self.upstream = upstream
        self.rng = rng
        self.clock = clock
        self.max_connections = max_connections
        self.stats: Counter[str] = Counter()
        self._toxics: dict[str, ActiveToxic] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._connections: set[_Connection] = set()
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        """Listen on ``host:port`` (port 0: any free one); the address bound."""
        self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True, limit=CHUNK_BYTES)
        bound = self._server.sockets[0].getsockname()
        return str(bound[0]), int(bound[1])

    async def close(self) -> None:
        """Stop listening, end every toxic and close every connection."""
        if self._server is not None:
            self._server.close()
        for toxic_id in list(self._toxics):
            self.clear(toxic_id, reason="proxy closing")
        for connection in list(self._connections):
            connection.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    # -- toxics ---------------------------------------------------------------------------------------------

    def set(self, toxic_id: str, toxic: Toxic, until_monotonic: float) -> ActiveToxic:
        """Put ``toxic`` in force until ``until_monotonic`` (replacing one of its kind); a ``ValueError`` for a
        deadline past, not finite, or more than :data:`MAX_AHEAD_S` ahead."""
        now = self.clock()
        ahead_s = until_monotonic - now
        if not math.isfinite(ahead_s) or ahead_s <= 0 or ahead_s > MAX_AHEAD_S:
            raise ValueError(f"deadline {ahead_s:.3f} s ahead: expected more than 0 and at most {MAX_AHEAD_S:.0f} s")
        for active in list(self._toxics.values()):
            if active.toxic.kind == toxic.kind or active.id == toxic_id:
                self.clear(active.id, reason=f"replaced by {toxic_id}")
        active = ActiveToxic(toxic_id, toxic, until_monotonic, now)
        self._toxics[toxic_id] = active
        loop = asyncio.get_running_loop()
        self._timers[toxic_id] = loop.call_later(ahead_s, self._expire, toxic_id)
        self.stats[f"toxics_set_{toxic.kind}"] += 1
        log.info("toxic %s in force for %.3f s: %s", toxic_id, ahead_s, toxic.to_json())
        return active

    def _expire(self, toxic_id: str) -> None:
        self._timers.pop(toxic_id, None)
        active = self._toxics.get(toxic_id)
        if active is not None:
            late_s = self.clock() - active.until_monotonic
            self.clear(toxic_id, reason=f"deadline ({late_s:+.3f} s)")
            self.stats["toxics_expired"] += 1

    def clear(self, toxic_id: str, *, reason: str = "cleared") -> bool:
        """End toxic ``toxic_id`` now (closing the connections its hang held); ``False`` if none was in force."""
        active = self._toxics.pop(toxic_id, None)
        timer = self._timers.pop(toxic_id, None)
        if timer is not None:
            timer.cancel()
        if active is None:
            return False
        for connection in list(self._connections):
            connection.applies.pop(toxic_id, None)
            if connection.hung_by == toxic_id:
                connection.close()
        log.info("toxic %s ended: %s", toxic_id, reason)
        return True

    def clear_all(self, reason: str = "cleared") -> list[str]:
        """End every toxic; their ids."""
        ids = list(self._toxics)
        for toxic_id in ids:
            self.clear(toxic_id, reason=reason)
        return ids

    def toxics(self) -> list[ActiveToxic]:
        """The toxics in force."""
        return list(self._toxics.values())

    def status(self) -> dict[str, Any]:
        """The toxics in force and the counters, as the control socket answers ``status``."""
        now = self.clock()
        return {
            "upstream": list(self.upstream),
            "toxics": [active.to_json(now) for active in self._toxics.values()],
            "open_connections": len(self._connections),
            "stats": dict(self.stats),
        }

    def _decide(self, connection: _Connection, ask: Callable[[Toxic], Action]) -> tuple[Action, str | None]:
        """The combined action of the toxics acting on ``connection``, and the hang's id if one holds it."""
        actions: list[Action] = []
        hang: str | None = None
        for active in list(self._toxics.values()):
            applies = connection.applies.get(active.id)
            if applies is None:
                applies = connection.applies[active.id] = active.toxic.applies_to_connection(self.rng)
            if applies:
                action = ask(active.toxic)
                actions.append(action)
                if action.verb == "hold":
                    hang = active.id
        return (combine(actions) if actions else FORWARD), hang

    # -- connections ----------------------------------------------------------------------------------------

    def _spawn(self, coroutine: Any, name: str) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.create_task(coroutine, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._connections) >= self.max_connections:
            self.stats["refused"] += 1
            writer.transport.abort()
            return
        connection = _Connection(writer)
        self._connections.add(connection)
        self.stats["connections"] += 1
        try:
            await self._serve(connection, reader)
        except (OSError, asyncio.IncompleteReadError) as error:
            log.debug("connection %d: %s", connection.id, error)
        finally:
            connection.close()
            self._connections.discard(connection)

    async def _serve(self, connection: _Connection, client_reader: asyncio.StreamReader) -> None:
        action, hang = self._decide(connection, lambda toxic: toxic.on_connect(self.rng))
        if action.verb == "reset":
            self.stats["reset"] += 1
            connection.reset()
            return
        if action.verb == "hold":
            await self._hold(connection, client_reader, hang)
            return
        if action.delay_s > 0:
            self.stats["delayed_connects"] += 1
            await asyncio.sleep(action.delay_s)
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(*self.upstream, limit=CHUNK_BYTES), UPSTREAM_CONNECT_TIMEOUT_S
            )
        except (OSError, TimeoutError) as error:
            self.stats["upstream_failures"] += 1
            log.debug("connection %d: upstream %s:%d: %s", connection.id, *self.upstream, error)
            connection.reset()
            return
        connection.upstream = upstream_writer
        directions: tuple[tuple[Direction, asyncio.StreamReader, asyncio.StreamWriter], ...] = (
            ("upstream", client_reader, upstream_writer),
            ("downstream", upstream_reader, connection.client),
        )
        pumps = [
            self._spawn(self._pump(connection, direction, reader, writer), f"{direction}-{connection.id}")
            for direction, reader, writer in directions
        ]
        await asyncio.gather(*pumps, return_exceptions=True)

    async def _hold(self, connection: _Connection, reader: asyncio.StreamReader, hang: str | None) -> None:
        """A hung connection: read and drop what the client sends until it leaves or the hang ends."""
        connection.hung_by = hang
        self.stats["held"] += 1
        while not connection.done.is_set():
            reading = asyncio.create_task(reader.read(CHUNK_BYTES))
            ended = asyncio.create_task(connection.done.wait())
            await asyncio.wait([reading, ended], return_when=asyncio.FIRST_COMPLETED)
            ended.cancel()
            if not reading.done():
                reading.cancel()
                return
            if not reading.result():
                return

    async def _pump(
        self, connection: _Connection, direction: Direction, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        """Read ``direction``'s chunks at once, deliver each at its release time; half-close at the end.

        A socket error on either side closes the whole connection; this never raises it.
        """
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue(QUEUED_CHUNKS)
        deliverer = self._spawn(self._deliver(connection, queue, writer), f"deliver-{direction}-{connection.id}")
        last_release = 0.0
        try:
            while data := await reader.read(CHUNK_BYTES):
                self.stats[f"bytes_{direction}"] += len(data)
                action, hang = self._decide(connection, lambda toxic: toxic.on_chunk(direction, self.rng))
                if action.verb == "reset":
                    self.stats["reset"] += 1
                    connection.reset()
                    return
                if action.verb == "hold" and connection.hung_by is None:
                    connection.hung_by = hang
                    self.stats["held"] += 1
                if connection.hung_by is not None:
                    continue  # a hung connection forwards nothing, either way, until its hang ends
                if action.delay_s > 0:
                    self.stats[f"delayed_chunks_{direction}"] += 1
                last_release = max(self.clock() + action.delay_s, last_release)
                await queue.put((last_release, data))
            await queue.put(None)
            await deliverer
        except OSError as error:
            log.debug("connection %d, %s: %s", connection.id, direction, error)
            connection.close()
        finally:
            deliverer.cancel()

    async def _deliver(
        self, connection: _Connection, queue: asyncio.Queue[tuple[float, bytes] | None], writer: asyncio.StreamWriter
    ) -> None:
        """Write each chunk at its release time; at the end of the stream, half-close (or close) the other side."""
        try:
            while (item := await queue.get()) is not None:
                release, data = item
                wait_s = release - self.clock()
                if wait_s > 0:
                    await asyncio.sleep(wait_s)
                if connection.hung_by is not None or writer.is_closing():
                    continue
                writer.write(data)
                await writer.drain()
            if connection.hung_by is None and not writer.is_closing():
                if writer.can_write_eof():
                    writer.write_eof()
                else:
                    writer.close()
        except OSError as error:
            log.debug("connection %d: delivering: %s", connection.id, error)
            connection.close()
