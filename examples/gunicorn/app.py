"""A tiny WSGI service for the worked example: every request takes 50 ms of a sync worker.

Two sync workers serve about 40 requests/s. Requests beyond that wait in the listen
backlog, and gunicorn serves them even after their client gave up: the retry storm of
docs/get-started/your-own-service.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

HANDLER_S = 0.05


def app(environ: dict[str, object], start_response: Callable[..., object]) -> Iterable[bytes]:
    """``/healthz`` at once; anything else after :data:`HANDLER_S` of work."""
    if environ.get("PATH_INFO") != "/healthz":
        time.sleep(HANDLER_S)
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "3")])
    return [b"OK\n"]
