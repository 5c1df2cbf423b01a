"""A minimal HTTP/1.1 client on asyncio streams, for talking to a target directly.

Health checks, tests and benchmarks need what ordinary clients hide: hold thousands of
connections open cheaply, send a request and walk away from it (an abandoning client),
or pipeline requests on one connection. Responses must carry ``Content-Length`` (the
target's always do).
"""

from __future__ import annotations

import asyncio
import dataclasses

_MAX_HEAD_BYTES = 64 * 1024


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    """A parsed response."""

    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        """The body as text."""
        return self.body.decode("utf-8", "replace")


def encode_request(
    method: str = "GET",
    path: str = "/",
    body: bytes = b"",
    *,
    close: bool = False,
    headers: dict[str, str | None] | None = None,
) -> bytes:
    """One request on the wire, with ``Host: 127.0.0.1`` and, with a body, ``Content-Type: application/json``
    and ``Content-Length``; ``headers`` adds to them or replaces them (``None``: leave the header out)."""
    given = {name.lower(): (name, value) for name, value in (headers or {}).items()}
    defaults = {"host": ("Host", "127.0.0.1")}
    if body:
        defaults["content-type"] = ("Content-Type", "application/json")
    fields = {**defaults, **given}
    lines = [f"{method} {path} HTTP/1.1"]
    lines += [f"{name}: {value}" for name, value in fields.values() if value is not None]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    if close:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


async def read_reply(reader: asyncio.StreamReader) -> Reply:
    """Read one response from ``reader``; raises ``asyncio.IncompleteReadError`` on EOF."""
    head = await reader.readuntil(b"\r\n\r\n")
    if len(head) > _MAX_HEAD_BYTES:
        raise ValueError("response head too large")
    status_line, *header_lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    body = await reader.readexactly(length)
    return Reply(int(status_line.split()[1]), headers, body)


async def fetch(
    port: int,
    path: str = "/",
    method: str = "GET",
    body: bytes = b"",
    *,
    host: str = "127.0.0.1",
    timeout_s: float = 30.0,
    headers: dict[str, str | None] | None = None,
) -> Reply:
    """One request on a fresh connection, closed afterwards."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(encode_request(method, path, body, close=True, headers=headers))
        return await asyncio.wait_for(read_reply(reader), timeout_s)
    finally:
        writer.close()


async def send_and_leave(port: int, path: str = "/api", *, host: str = "127.0.0.1") -> None:
    """Send a request and close the connection without waiting: an abandoning client."""
    _, writer = await asyncio.open_connection(host, port)
    writer.write(encode_request("GET", path))
    await writer.drain()
    writer.close()
    await writer.wait_closed()
