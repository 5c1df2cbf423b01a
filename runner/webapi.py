"""Calls to a long-lived service's HTTP API (the target's admin API, the Locust master's).

One :class:`WebApi` per service: an ``aiohttp`` session made on first use (inside the
event loop), a timeout on every call, and one readable line when a call fails, as a
:class:`~retrystorm.runner.errors.RunFailedError` (the run cannot go on) naming the
service, the call and what went wrong: unreachable, an error status with the first
line of its body, or an answer that is not JSON.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import aiohttp

from retrystorm.runner.errors import RunFailedError

#: Bound on one call unless the caller gives another.
CALL_TIMEOUT_S = 10.0


def first_line(text: str, limit: int = 200) -> str:
    """The first non-blank line of ``text``, cut to ``limit`` characters."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


class WebApi:
    """The HTTP API of the service ``what`` at ``base_url``; ``token``: sent as ``Authorization: Bearer``."""

    def __init__(self, base_url: str, what: str, *, token: str = "") -> None:
        self.base_url = base_url.rstrip("/")
        self.what = what
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(headers=self._headers)
        return self._session

    async def call(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        form: Mapping[str, str] | None = None,
        timeout_s: float = CALL_TIMEOUT_S,
    ) -> str:
        """The body of a 2xx answer to ``method path``; otherwise :class:`RunFailedError`."""
        url = self.base_url + path
        try:
            async with self._client().request(
                method, url, json=json_body, data=form, timeout=aiohttp.ClientTimeout(total=timeout_s)
            ) as response:
                text = await response.text()
        except (aiohttp.ClientError, TimeoutError) as error:
            reason = str(error) or f"no answer within {timeout_s:g} s"
            raise RunFailedError(f"cannot reach {self.what} at {self.base_url} ({method} {path}): {reason}") from error
        if not 200 <= response.status < 300:
            raise RunFailedError(
                f"{self.what} at {self.base_url} answered {method} {path} with {response.status}: {first_line(text)}"
            )
        return text

    async def call_json(self, method: str, path: str, **options: Any) -> Any:
        """:meth:`call`, its answer read as JSON."""
        text = await self.call(method, path, **options)
        try:
            return json.loads(text)
        except ValueError:
            raise RunFailedError(
                f"{self.what} at {self.base_url} answered {method} {path} with something not JSON: {first_line(text)}"
            ) from None

    async def close(self) -> None:
        """Close the session (a later call opens a new one)."""
        if self._session is not None:
            await self._session.close()
            self._session = None
