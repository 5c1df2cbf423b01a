"""The retrystorm locustfile plus a listener that writes every request event to a file.

Used by the tests to see the events Locust receives (names, times, contexts). The
file is named by the ``RETRYSTORM_EVENT_LOG`` environment variable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from locust import events

from retrystorm.loadgen.locustfile import SeedClient

LOG = Path(os.environ["RETRYSTORM_EVENT_LOG"])


@events.request.add_listener
def record(request_type: str, name: str, response_time: float, context: dict[str, Any], **kwargs: Any) -> None:
    exception = kwargs.get("exception")
    entry = {
        "type": request_type,
        "name": name,
        "response_time_ms": response_time,
        "context": context,
        "exception": None if exception is None else str(exception),
    }
    with LOG.open("a") as sink:
        sink.write(json.dumps(entry) + "\n")


__all__ = ["SeedClient"]
