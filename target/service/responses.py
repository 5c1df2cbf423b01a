"""HTTP responses as bytes on the wire, with a cached ``Date`` header."""

from __future__ import annotations

import time
from email.utils import formatdate
from http import HTTPStatus

_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    414: "URI Too Long",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def reason_phrase(status: int) -> str:
    """The standard reason phrase of ``status`` (``Unknown`` for a code without one)."""
    reason = _REASONS.get(status)
    if reason is None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = "Unknown"
    return reason


class Response:
    """A complete response: status, body, content type and extra header lines.

    A ``shared`` response (a constant such as ``OK``) is encoded once per second (the
    ``Date`` header) and then costs one dictionary look-up to send.
    """

    __slots__ = ("body", "content_type", "headers", "shared", "status")

    def __init__(
        self,
        status: int,
        body: bytes,
        content_type: str = "text/plain; charset=utf-8",
        headers: str = "",
        *,
        shared: bool = False,
    ) -> None:
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers
        self.shared = shared

    @classmethod
    def text(cls, status: int, message: str, headers: str = "", *, shared: bool = False) -> Response:
        """A plain-text response of one line."""
        return cls(status, (message + "\n").encode(), headers=headers, shared=shared)

    def encode(self, keep_alive: bool, date: bytes) -> bytes:
        """The bytes on the wire; ``Connection: close`` unless ``keep_alive``."""
        connection = "" if keep_alive else "Connection: close\r\n"
        head = (
            f"HTTP/1.1 {self.status} {reason_phrase(self.status)}\r\n"
            f"Content-Type: {self.content_type}\r\nContent-Length: {len(self.body)}\r\n"
            f"{self.headers}{connection}"
        ).encode("latin-1")
        return head + date + b"\r\n" + self.body


INTERNAL_ERROR = Response.text(500, "internal error: the server's log has the details", shared=True)


class Encoder:
    """Encodes responses with a ``Date`` header; shared ones once per date.

    :meth:`~retrystorm.target.service.http.HttpServer.start` re-reads the date every second from a timer, so the hot
    path reads no clock; a one-off response re-reads it itself.
    """

    def __init__(self) -> None:
        #: Encoded shared responses with and without keep-alive (read directly on the hot path).
        self.keep_alive: dict[Response, bytes] = {}
        self.close: dict[Response, bytes] = {}
        self._second = -1
        self.date = b""
        self.refresh()

    def refresh(self) -> None:
        """Re-read the wall clock; drop cached encodings when the second changed."""
        second = int(time.time())
        if second != self._second:
            self._second = second
            self.date = f"Date: {formatdate(second, usegmt=True)}\r\n".encode()
            self.keep_alive.clear()
            self.close.clear()

    def __call__(self, response: Response, keep_alive: bool) -> bytes:
        if not response.shared:
            self.refresh()
            return response.encode(keep_alive, self.date)
        cache = self.keep_alive if keep_alive else self.close
        encoded = cache.get(response)
        if encoded is None:
            self.refresh()
            encoded = cache[response] = response.encode(keep_alive, self.date)
        return encoded
