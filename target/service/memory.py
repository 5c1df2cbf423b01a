"""Give memory back to the system once a load peak has drained.

Thousands of requests in flight take thousands of small objects (connections, parsers,
requests, buffers); when they are gone, CPython's allocator and glibc's ``malloc`` keep
much of the freed memory, so the process's RSS stays near its peak. Once a second the
service looks at the number in flight: when it has fallen to 0 after a peak of at least
:data:`TRIM_AFTER_PEAK`, it runs a full collection (which also empties CPython's free
lists) and glibc's ``malloc_trim(0)`` (which returns free heap pages). Measured side by
side with ``bench/fidelity.py`` (10,000 in flight, then drained; one run each): RSS after
the drain 1.60 to 1.70 times the RSS before the load with both, 2.07 without them,
1.95 with ``malloc_trim`` alone.

The collection stops the event loop for a time that grows with the connections open
(1.2 ms with 1,000 keep-alive connections open, 12.5 ms with 5,000, here), so it waits
until at most :data:`MAX_CONNECTIONS_OPEN` are. Nothing is in flight then: no response is
late for it. Without glibc (musl, macOS) only the collection runs.
"""

from __future__ import annotations

import ctypes
import gc
import logging
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

#: The peak in flight after which a drain returns memory (smaller peaks leave little to return).
TRIM_AFTER_PEAK = 1000
#: The most connections open for the collection to run (it pauses the loop about 1 ms per 1,000).
MAX_CONNECTIONS_OPEN = 2000


def malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or ``None`` where the C library has none.

    Looked up among the symbols this process has loaded already (``dlopen(NULL)``): the C library is always one.
    (``ctypes.util.find_library`` would run ``ldconfig -p`` in a child process every time a service starts.)
    """
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_size_t]
    function.restype = ctypes.c_int
    trim: Callable[[int], int] = function
    return trim


class MemoryReturn:
    """After a drained peak: a full collection and ``malloc_trim(0)`` (see the module).

    ``in_flight`` and ``connections`` read the service; ``collect`` and ``trim`` default to
    :func:`gc.collect` and glibc's ``malloc_trim`` (``None``: none on this system).
    """

    def __init__(
        self,
        in_flight: Callable[[], int],
        connections: Callable[[], int],
        *,
        collect: Callable[[], object] = gc.collect,
        trim: Callable[[int], int] | None = None,
    ) -> None:
        self._in_flight = in_flight
        self._connections = connections
        self._collect = collect
        self._trim = trim if trim is not None else malloc_trim()
        self._peak = 0
        #: How many times memory was returned.
        self.returns = 0

    def check(self) -> None:
        """Look at the number in flight (once a second); return memory after a drained peak."""
        in_flight = self._in_flight()
        self._peak = max(self._peak, in_flight)
        if in_flight or self._peak < TRIM_AFTER_PEAK or self._connections() > MAX_CONNECTIONS_OPEN:
            return
        peak, self._peak = self._peak, 0
        started = time.perf_counter()
        self._collect()
        if self._trim is not None:
            self._trim(0)
        self.returns += 1
        took_ms = (time.perf_counter() - started) * 1e3
        logger.info("returned memory after a peak of %d in flight (the loop paused %.1f ms)", peak, took_ms)
