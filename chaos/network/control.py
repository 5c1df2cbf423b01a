"""The fault proxy's control socket: set, clear and list its toxics from another process on the same host.

A Unix stream socket (mode 0600, in a folder of mode 0700): only its owner (root, for a chaos agent) can reach
it, and nothing is exposed to the network. One JSON object per line each way:

``{"op": "set", "id": "n1", "toxic": {"kind": "delay", "latency_s": 0.2}, "until_monotonic": 1234.5}``
    put a toxic in force until a CLOCK_MONOTONIC time (the proxy ends it then by itself) -> ``{"ok": true}``
``{"op": "clear", "id": "n1"}``
    end it now -> ``{"ok": true, "cleared": true|false}`` (false: it was not in force)
``{"op": "clear_all"}``
    end every toxic -> ``{"ok": true, "cleared": [ids]}``
``{"op": "status"}``
    -> ``{"ok": true, "pid", "listen", "upstream", "toxics": [...], "open_connections", "stats"}``

A refused request answers ``{"ok": false, "error": "one line"}``. CLOCK_MONOTONIC is one clock for every process
of a Linux host, so a deadline computed by the agent, the runner or a watchdog means the same instant to the proxy.
:class:`ProxyControl` is the client (blocking, standard library only: a watchdog process imports it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import stat
from pathlib import Path
from typing import Any

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.network.proxy import Proxy
from retrystorm.chaos.network.toxics import Toxic, toxic_from_json
from retrystorm.errors import UserError

log = logging.getLogger(__name__)

#: The longest request line read, in bytes.
MAX_LINE_BYTES = 16 * 1024
#: How long a client waits for the proxy's answer.
CONTROL_TIMEOUT_S = 5.0
#: The longest toxic id.
MAX_ID_CHARS = 64


def _refuse(message: str) -> dict[str, Any]:
    return {"ok": False, "error": message}


def answer(proxy: Proxy, request: Any, listen: tuple[str, int]) -> dict[str, Any]:
    """The answer to one request (see the module docstring); never raises for a bad request."""
    if not isinstance(request, dict):
        return _refuse("expected a JSON object with an op")
    op = request.get("op")
    try:
        if op == "set":
            toxic_id = _toxic_id(request.get("id"))
            toxic = toxic_from_json(request.get("toxic"))  # type: ignore[arg-type]
            until = request.get("until_monotonic")
            if isinstance(until, bool) or not isinstance(until, int | float):
                return _refuse(f"until_monotonic: got {until!r:.40}, expected a CLOCK_MONOTONIC time in seconds")
            proxy.set(toxic_id, toxic, float(until))
            return {"ok": True}
        if op == "clear":
            return {"ok": True, "cleared": proxy.clear(_toxic_id(request.get("id")))}
        if op == "clear_all":
            return {"ok": True, "cleared": proxy.clear_all()}
        if op == "status":
            return {"ok": True, "pid": os.getpid(), "listen": list(listen), **proxy.status()}
    except (UserError, ValueError) as error:
        return _refuse(str(error))
    return _refuse(f"op: got {op!r:.40}, expected set, clear, clear_all or status")


def _toxic_id(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS or not value.isprintable():
        raise UserError(f"id: got {value!r:.80}, expected a name of at most {MAX_ID_CHARS} characters")
    return value


#: The prefix of the private folder ``retrystorm run`` makes for a proxy's control socket.
RUN_FOLDER_PREFIX = "retrystorm-proxy-"


def remove_private_folder(folder: Path) -> None:
    """Remove the folder ``retrystorm run`` made for the socket, once empty, so a runner killed by SIGKILL leaves
    nothing in ``/tmp`` after its proxy's bounded life; any other folder (a user's ``--control``) is left alone."""
    if folder.name.startswith(RUN_FOLDER_PREFIX):
        with contextlib.suppress(OSError):  # not empty, or already gone: leave it
            folder.rmdir()


def private_socket_path(path: Path) -> Path:
    """Make ``path``'s folder (mode 0700 if created) and remove a stale socket there; refuse anything else."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        found = path.lstat()
    except FileNotFoundError:
        return path
    if not stat.S_ISSOCK(found.st_mode):
        raise UserError(f"control socket {path}: exists and is not a socket; remove it or choose another path")
    if ProxyControl(path, timeout_s=1.0).reachable():
        raise UserError(f"control socket {path}: a proxy answers there already; stop it or choose another path")
    path.unlink()
    return path


async def serve_control(proxy: Proxy, path: Path, listen: tuple[str, int]) -> asyncio.Server:
    """Serve the control socket of ``proxy`` at ``path`` (mode 0600)."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                try:
                    request = json.loads(line)
                except ValueError:
                    reply = _refuse("expected one JSON object per line")
                else:
                    reply = answer(proxy, request, listen)
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        except (OSError, ValueError, asyncio.LimitOverrunError) as error:  # a line over the limit, a peer gone
            log.debug("control connection: %s", error)
        finally:
            writer.close()

    old_umask = os.umask(0o177)  # the socket is created 0600: no window in which others could connect
    try:
        server = await asyncio.start_unix_server(handle, path=str(path), limit=MAX_LINE_BYTES)
    finally:
        os.umask(old_umask)
    return server


class ProxyControl:
    """A client of one proxy's control socket (blocking)."""

    def __init__(self, path: Path, *, timeout_s: float = CONTROL_TIMEOUT_S) -> None:
        self.path = path
        self.timeout_s = timeout_s

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request, return the answer; :class:`BackendError` if the proxy cannot be reached or refuses."""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(self.timeout_s)
                sock.connect(str(self.path))
                sock.sendall(json.dumps(request).encode() + b"\n")
                data = b""
                while not data.endswith(b"\n"):
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    data += chunk
        except OSError as error:
            raise BackendError(f"cannot reach the fault proxy at {self.path}: {error}") from None
        try:
            reply = json.loads(data)
        except ValueError:
            raise BackendError(f"the fault proxy at {self.path} did not answer JSON") from None
        if not isinstance(reply, dict) or reply.get("ok") is not True:
            refusal = reply.get("error") if isinstance(reply, dict) else None
            raise BackendError(f"the fault proxy at {self.path} refused: {refusal or reply!r:.200}")
        return reply

    def set(self, toxic_id: str, toxic: Toxic, until_monotonic: float) -> None:
        """Put ``toxic`` in force until ``until_monotonic``."""
        self.call({"op": "set", "id": toxic_id, "toxic": toxic.to_json(), "until_monotonic": until_monotonic})

    def clear(self, toxic_id: str) -> bool:
        """End ``toxic_id`` now; whether it was in force."""
        return bool(self.call({"op": "clear", "id": toxic_id}).get("cleared"))

    def clear_all(self) -> list[str]:
        """End every toxic; their ids."""
        cleared = self.call({"op": "clear_all"}).get("cleared")
        return [str(item) for item in cleared] if isinstance(cleared, list) else []

    def status(self) -> dict[str, Any]:
        """The proxy's toxics and counters."""
        return self.call({"op": "status"})

    def reachable(self) -> bool:
        """Whether a proxy answers at :attr:`path`."""
        with contextlib.suppress(BackendError):
            self.status()
            return True
        return False
