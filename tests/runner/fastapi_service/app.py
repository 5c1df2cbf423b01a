"""A FastAPI service for the live test of a service nobody on the project wrote, under uvicorn.

``GET /orders/{id}`` is a plain synchronous FastAPI endpoint: FastAPI runs it in anyio's worker threads, and the
lifespan narrows their limit to :data:`THREADS`, as a service does to bound its database connections. Each
request holds one thread for :data:`HANDLER_S`, so the service answers about ``THREADS / HANDLER_S`` = 40
requests/s. uvicorn accepts every connection at once, and a request whose client gave up still waits for a
thread and is served (neither uvicorn nor FastAPI cancels a synchronous endpoint when its client disconnects):
abandoned work piles up in the threads' queue, the bottleneck a retry storm needs. ``/healthz`` answers at
once, outside the threads. ``POST /orders`` does not exist (405), nor does ``/`` (404).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI

THREADS = 2
HANDLER_S = 0.04


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    """Narrow the worker threads every synchronous endpoint runs in (anyio's default limiter; 40 by default)."""
    anyio.to_thread.current_default_thread_limiter().total_tokens = THREADS
    yield


app = FastAPI(lifespan=lifespan)


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    """Answered at once, on the event loop."""
    return {"status": "ok"}


@app.get("/orders/{order_id}")
def order(order_id: int) -> dict[str, int]:
    """One order, after :data:`HANDLER_S` of one worker thread."""
    time.sleep(HANDLER_S)
    return {"id": order_id, "qty": 1}
