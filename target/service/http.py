"""A lean HTTP/1.1 server on asyncio protocols and httptools (the llhttp parser).

Why not a framework: the target holds thousands of requests open for seconds to
minutes, and the seed's storm needs every request that reached the socket, even one
whose client has already gone, to be admitted at once. Here a request is parsed and
handed to the application inside ``data_received`` (no task, no coroutine per
request), a deferred response is one ``transport.write`` when the model releases it,
and a client that goes away is the protocol's ``connection_lost`` callback: free to
detect at any number of connections.

Requests on one connection are served one at a time, in order, as Go's ``net/http``
does: pipelined requests wait in the connection until the one before is answered.
Anything the parser rejects, or that is too large, gets a one-line 4xx and the
connection is closed after the responses it is owed. Only origin-form request targets
(``/path?query``) are served: an absolute-form one (``http://host/path``, what a
client sends to a proxy) or the asterisk form gets 400, ``CONNECT`` gets 405.

Connections are bounded (:mod:`retrystorm.target.service.limits`): one past ``max_connections``
is closed at once; one idle, or trickling a request, for too long is closed by a sweep
once per interval over every connection. Time is counted in sweeps: each connection
keeps the sweep by which it must have moved on (``_deadline``; 0 while a response is
owed, so a request held by the model never times out), and the server keeps the
deadlines a wait starting now gets, so serving a request only copies one of them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque

import httptools

from retrystorm.errors import shown
from retrystorm.target.service.limits import ConnectionLimits
from retrystorm.target.service.request import Handler, Request
from retrystorm.target.service.responses import INTERNAL_ERROR, Encoder, Response

logger = logging.getLogger(__name__)

__all__ = ["HttpConnection", "HttpServer", "Request"]

MAX_URL_BYTES = 8 * 1024
MAX_HEADER_BYTES = 16 * 1024
MAX_BODY_BYTES = 64 * 1024
#: Pipelined requests buffered per connection before it stops reading.
MAX_QUEUED = 16
#: Methods some route answers (named in the ``Allow`` header of a 405 to ``CONNECT``).
ALLOWED_METHODS = "GET, PUT, POST, DELETE"
#: The one request header the application reads (fault injection counts attempts with it).
ATTEMPT_HEADER = b"retrystorm-attempt"
_ATTEMPT_HEADER_LENGTH = len(ATTEMPT_HEADER)
#: The admin API's credentials (see :mod:`retrystorm.target.service.auth`).
AUTHORIZATION_HEADER = b"authorization"
_AUTHORIZATION_HEADER_LENGTH = len(AUTHORIZATION_HEADER)
#: Request targets whose headers the request guard reads (:mod:`retrystorm.target.service.auth`), and those headers:
#: only these requests keep them, so the hot path (``/api``) pays one comparison per request.
GUARDED_PREFIX = b"/admin"
GUARD_HEADERS = frozenset({b"host", b"origin", b"sec-fetch-site", b"content-type"})


class _RejectError(Exception):
    """Raised from a parser callback: answer ``status`` with ``message`` and close."""

    def __init__(self, status: int, message: str, headers: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers


def refuse_target(method: bytes, url: bytes) -> _RejectError:
    """Why a request target that is not a path (``/...``) is refused: 405 for ``CONNECT``, else 400."""
    if method == b"CONNECT":
        return _RejectError(405, "CONNECT not allowed: this is not a proxy", f"Allow: {ALLOWED_METHODS}\r\n")
    given = shown(url.decode("latin-1"))
    return _RejectError(400, f"request target {given} is not a path; send the path alone, e.g. GET /api HTTP/1.1")


class HttpServer:
    """Shared state of all connections: the handler, the encoder, the open connections,
    their limits, and what the limits did (refused and timed-out connections)."""

    def __init__(self, handler: Handler, limits: ConnectionLimits | None = None) -> None:
        self.handler = handler
        self.limits = limits = limits or ConnectionLimits()
        self._header_ticks = limits.ticks(limits.header_timeout_s)
        self._idle_ticks = limits.ticks(limits.idle_timeout_s)
        #: Sweeps done; a wait that starts now ends at the sweep numbered by these deadlines.
        self.sweeps = 0
        self.header_deadline = self._header_ticks + 1
        self.idle_deadline = self._idle_ticks + 1
        self.encode = Encoder()
        self.connections: set[HttpConnection] = set()
        self.closing = False
        #: Connections closed at once because ``max_connections`` were open.
        self.refused = 0
        #: Connections closed by a timeout: ``header`` (a request too slow to arrive), ``idle``.
        self.timed_out = {"header": 0, "idle": 0}
        self._refused_logged = 0
        self._date_timer: asyncio.TimerHandle | None = None
        self._sweep_timer: asyncio.TimerHandle | None = None

    def start(self) -> None:
        """Start the timers: the ``Date`` header re-read every second, and the sweep."""
        self._refresh_date()
        self._sweep()

    def stop(self) -> None:
        """Stop the timers."""
        for timer in (self._date_timer, self._sweep_timer):
            if timer is not None:
                timer.cancel()
        self._date_timer = self._sweep_timer = None

    def _refresh_date(self) -> None:
        self.encode.refresh()
        self._date_timer = asyncio.get_running_loop().call_later(1.0, self._refresh_date)

    def _sweep(self) -> None:
        """One more sweep: close the connections whose deadline it is (at least their timeout after it was set)."""
        self.sweeps = sweeps = self.sweeps + 1
        expired = [connection for connection in self.connections if 0 < connection._deadline <= sweeps]
        self.header_deadline = sweeps + self._header_ticks + 1
        self.idle_deadline = sweeps + self._idle_ticks + 1
        for connection in expired:
            connection.expire()
        if self.refused != self._refused_logged:
            logger.warning(
                "refused %d connections: %d open, the most --max-connections allows",
                self.refused - self._refused_logged,
                len(self.connections),
            )
            self._refused_logged = self.refused
        self._sweep_timer = asyncio.get_running_loop().call_later(self.limits.sweep_interval_s, self._sweep)

    def protocol(self) -> HttpConnection:
        """Protocol factory for ``loop.create_server``."""
        return HttpConnection(self)

    def close_idle(self) -> None:
        """Close every connection that owes no response (used at shutdown)."""
        for connection in list(self.connections):
            if connection.current is None:
                connection.close()

    def abort_all(self) -> None:
        """Drop every connection at once."""
        for connection in list(self.connections):
            connection.abort()


def _break_transport_cycle(transport: asyncio.BaseTransport | None) -> None:
    """Let reference counting free a closed transport of asyncio's selector loop.

    Such a transport keeps its read callback, a method bound to itself, in
    ``_read_ready_cb`` (CPython 3.11 to 3.13): a cycle that only the collector's rare full
    passes free, so every closed connection left its transport, socket object and
    dictionary behind (500 connections: 3,500 objects). Dropping the callback once the
    connection is lost breaks the cycle; another loop's transport has no such attribute.
    """
    if transport is not None and getattr(transport, "_read_ready_cb", None) is not None:
        transport._read_ready_cb = None  # type: ignore[attr-defined]


class HttpConnection(asyncio.Protocol):
    """One client connection: parse, dispatch in order, write responses."""

    __slots__ = (
        "_attempt",
        "_authorization",
        "_body",
        "_body_bytes",
        "_broken",
        "_deadline",
        "_guard_headers",
        "_guarded",
        "_header_bytes",
        "_idle",
        "_parser",
        "_paused",
        "_queue",
        "_server",
        "_transport",
        "_url",
        "current",
    )

    def __init__(self, server: HttpServer) -> None:
        self._server = server
        self._transport: asyncio.Transport | None = None
        self._parser: httptools.HttpRequestParser | None = httptools.HttpRequestParser(self)
        self._url = b""
        self._header_bytes = 0
        self._body: list[bytes] = []
        self._body_bytes = 0
        self._attempt: bytes | None = None
        self._authorization: bytes | None = None
        #: Whether the request being parsed is one the guard judges, and the headers it reads (first of each).
        self._guarded = False
        self._guard_headers: dict[bytes, bytes] = {}
        self._queue: deque[Request | Response] = deque()
        self._paused = False
        self._broken = False
        #: The sweep that closes it if it has not moved on by then (0: never, a response is owed).
        self._deadline = server.idle_deadline
        #: Owes nothing and has received nothing of a next request.
        self._idle = True
        #: The request whose response is owed now (``None`` when idle).
        self.current: Request | None = None

    @property
    def closed(self) -> bool:
        """True once the connection is gone."""
        return self._transport is None

    # asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        server = self._server
        if len(server.connections) >= server.limits.max_connections:
            server.refused += 1
            self._broken = True
            transport.close()  # at once and unread (nothing is buffered): the cheapest answer without room
            _break_transport_cycle(transport)  # it reads no more
            return
        self._transport = transport  # type: ignore[assignment]
        server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        _break_transport_cycle(self._transport)
        self._transport = None
        self._broken = True
        self._parser = None  # it refers back to this object: break the cycle, leave nothing to the collector
        self._server.connections.discard(self)
        self._queue.clear()
        current, self.current = self.current, None
        if current is not None:
            self._server.handler.disconnected(current)

    def eof_received(self) -> bool:
        # The client closed its side: Go's server takes that as the client going away too.
        return False

    def data_received(self, data: bytes) -> None:
        parser = self._parser
        if self._broken or parser is None:
            return
        if self._idle:  # the first bytes of a request: its header timeout starts
            self._idle = False
            self._deadline = self._server.header_deadline
        try:
            parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._broken = True  # no upgrades: answer what was parsed, then close
            if self.current is None and not self._queue and self._transport is not None:
                self._closing(self._transport)  # it was answered at once, before the parser said so
        except httptools.HttpParserCallbackError as error:
            cause = error.__context__
            if isinstance(cause, _RejectError):
                self._reject(cause.status, str(cause), cause.headers)
            else:  # a bug in a callback: answer 500 and close, rather than drop the connection
                logger.exception("failed to parse a request")
                self._reject(INTERNAL_ERROR.status, INTERNAL_ERROR.body.decode().rstrip("\n"))
        except httptools.HttpParserError as error:
            self._reject(400, f"malformed HTTP request: {error}")

    # httptools callbacks ---------------------------------------------------------------

    def on_url(self, url: bytes) -> None:
        self._url += url
        if len(self._url) > MAX_URL_BYTES:
            raise _RejectError(414, f"request target longer than {MAX_URL_BYTES} bytes")
        self._guarded = self._url.startswith(GUARDED_PREFIX)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value) + 4
        if self._header_bytes > MAX_HEADER_BYTES:
            raise _RejectError(431, f"request headers larger than {MAX_HEADER_BYTES} bytes in total")
        if len(name) == _ATTEMPT_HEADER_LENGTH and name.lower() == ATTEMPT_HEADER:  # the length test is cheaper
            self._attempt = value
        elif len(name) == _AUTHORIZATION_HEADER_LENGTH and name.lower() == AUTHORIZATION_HEADER:
            self._authorization = value
        elif self._guarded and (lowered := name.lower()) in GUARD_HEADERS:
            self._guard_headers.setdefault(lowered, value)

    def on_body(self, body: bytes) -> None:
        self._body_bytes += len(body)
        if self._body_bytes > MAX_BODY_BYTES:
            raise _RejectError(413, f"request body larger than {MAX_BODY_BYTES} bytes")
        self._body.append(body)

    def on_message_complete(self) -> None:
        parser = self._parser
        if parser is None:  # only reachable from parser.feed_data, so never in practice
            return
        url = self._url
        method = parser.get_method()
        if not url.startswith(b"/") or method == b"CONNECT":  # absolute form (http://host/path), CONNECT, or *
            raise refuse_target(method, url)
        path = url.partition(b"?")[0]
        request = Request(self, method, path.decode("latin-1"), parser.should_keep_alive(), self._attempt)
        self._deadline = 0  # a response is owed: no timeout until it is sent
        self._url = b""  # ready for the next message (cheaper than an on_message_begin callback)
        self._header_bytes = 0
        self._attempt = None
        if self._authorization is not None:
            request.authorization = self._authorization
            self._authorization = None
        if self._guarded:
            request.guard_headers = self._guard_headers
            self._guard_headers = {}
            self._guarded = False
        if self._body:
            request.body = b"".join(self._body)
            self._body = []
            self._body_bytes = 0
        if self.current is not None or self._queue:
            self._enqueue(request)
        else:
            self._dispatch(request)

    # dispatch --------------------------------------------------------------------------

    def _reject(self, status: int, message: str, headers: str = "") -> None:
        """Queue a 4xx for input the parser cannot take; the connection ends after it."""
        self._broken = True
        if status < 500:
            self._server.handler.bad_request(status)
        response = Response.text(status, message, headers)
        if self.current is None and not self._queue:
            self._write_final(response)
        else:
            self._enqueue(response)

    def _enqueue(self, item: Request | Response) -> None:
        """Hold a pipelined request (or a pending 4xx) until those before it are answered."""
        self._queue.append(item)
        if len(self._queue) >= MAX_QUEUED and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()

    def _dispatch(self, request: Request) -> None:
        self.current = request
        try:
            response = self._server.handler.handle(request)
        except Exception:
            logger.exception("failed to handle %s %s", request.method.decode("latin-1"), request.path)
            response = INTERNAL_ERROR
        if response is not None and self.current is request:
            self.respond(response)

    def respond(self, response: Response) -> bool:
        """Send the response owed for the current request; ``False`` if the client is gone."""
        request = self.current
        transport = self._transport
        if request is None or transport is None:
            return False
        self.current = None
        queue = self._queue
        server = self._server
        keep_alive = request.keep_alive and not server.closing and not (self._broken and not queue)
        encoded = (server.encode.keep_alive if keep_alive else server.encode.close).get(response)
        if encoded is None:
            encoded = server.encode(response, keep_alive)
        if request.method == b"HEAD" and response.body:  # the headers GET would get, no body
            encoded = encoded[: -len(response.body)]
        transport.write(encoded)
        if not keep_alive:
            self._closing(transport)
        elif queue:
            self._next()
        elif self._url or self._header_bytes:  # owing nothing, the next request begun: its header timeout
            self._deadline = server.header_deadline
        else:  # owing nothing: idle
            self._idle = True
            self._deadline = server.idle_deadline
        return True

    def _next(self) -> None:
        """Serve what waited behind the request just answered."""
        queue = self._queue
        while self.current is None and queue and self._transport is not None:
            item = queue.popleft()
            if isinstance(item, Response):
                self._write_final(item)
            else:
                self._dispatch(item)
        if self._paused and len(queue) < MAX_QUEUED // 2 and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        if self.current is None and not queue and not self._broken:
            server = self._server
            if self._url or self._header_bytes:
                self._deadline = server.header_deadline
            else:
                self._idle = True
                self._deadline = server.idle_deadline

    def _write_final(self, response: Response) -> None:
        """Write a 4xx the parser caused, then close."""
        transport = self._transport
        if transport is not None:
            transport.write(self._server.encode(response, False))
            self._closing(transport)
            logger.debug("closed a connection after %d: %s", response.status, response.body.strip())

    def _closing(self, transport: asyncio.Transport) -> None:
        self._broken = True
        self._queue.clear()
        self._deadline = self._server.header_deadline  # to flush what is written; then the sweep aborts it
        transport.close()

    def expire(self) -> None:
        """Its timeout ran out (the sweep calls this): close it; abort it if it was closing already."""
        transport = self._transport
        if transport is None:
            return
        if self._broken:
            transport.abort()  # a client that does not read its last response
            return
        self._server.timed_out["idle" if self._idle else "header"] += 1
        logger.debug("closing a connection: %s timeout", "idle" if self._idle else "header")
        self._closing(transport)

    def close(self) -> None:
        """Close after flushing what was written."""
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Close at once, discarding unsent data."""
        if self._transport is not None:
            self._transport.abort()
