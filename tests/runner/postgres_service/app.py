"""A PostgreSQL-backed FastAPI service for the live tests of a database frozen whole and cut, under uvicorn.

``GET /orders/{id}`` is a synchronous endpoint (in anyio's worker threads, 40 by default) that takes a connection
from a psycopg pool of :data:`POOL` connections and runs one query of about :data:`QUERY_S` in the database. The
pool is the bottleneck: about ``POOL / QUERY_S`` = 50 requests/s. A request whose client gave up still waits for a
connection and runs its query, so abandoned work piles up in the pool's queue, as in a real pooled service. The
database is named by ``RETRYSTORM_TEST_PG_DSN`` (the test starts it). ``/healthz`` asks the database too.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from psycopg_pool import ConnectionPool

POOL = 2
QUERY_S = 0.04
#: How long a request waits for a connection before it fails (psycopg_pool's default is 30 s).
WAIT_S = 30.0

pool = ConnectionPool(os.environ["RETRYSTORM_TEST_PG_DSN"], min_size=POOL, max_size=POOL, open=False, timeout=WAIT_S)


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    """Open the pool (its connections made before the first request) and close it at the end."""
    pool.open(wait=True)
    yield
    pool.close()


app = FastAPI(lifespan=lifespan)


@app.get("/healthz")
def healthz() -> dict[str, str]:
    """The database answers."""
    with pool.connection() as connection:
        connection.execute("SELECT 1")
    return {"status": "ok"}


@app.get("/orders/{order_id}")
def order(order_id: int) -> dict[str, int]:
    """One order, after a query of :data:`QUERY_S` on one of the pool's connections."""
    with pool.connection() as connection:
        row = connection.execute("SELECT %s::int, pg_sleep(%s)", (order_id, QUERY_S)).fetchone()
    return {"id": row[0] if row else order_id, "qty": 1}
