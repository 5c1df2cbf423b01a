"""A client of the chaos API (``retrystorm chaos serve``): the web UI's Chaos tab and the runner use it.

Four calls, each answering what a web UI tab needs in one round trip from the browser:

* :meth:`ChaosClient.overview`: every target with its state and its active outages
  (``GET /targets`` and ``GET /outages``, merged by :func:`merge_overview`);
* :meth:`ChaosClient.pause`: ``POST /outages {target, duration}``;
* :meth:`ChaosClient.resume`: ``DELETE /outages/{id}`` for every active outage of a target;
* :meth:`ChaosClient.outages`: ``GET /outages``, every outage with its start and end (the
  web UI's Retry storm tab shades them).

Every failure is a :class:`ChaosApiError` with an HTTP status for the web UI and one
readable line: the chaos API's own ``{"error": ...}`` message when it answered
(unknown target, refused, bad duration), or what went wrong reaching it and how to fix
it. Plain ``urllib``: in a Locust process gevent has patched its sockets.
"""

from __future__ import annotations

import datetime
import json
import logging
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any

from retrystorm.addresses import BadPortError, http_address
from retrystorm.errors import SpecError

logger = logging.getLogger(__name__)

#: How long one call to the chaos API may take (a pause waits for the kernel to stop the target).
TIMEOUT_S = 10.0


class ChaosApiError(Exception):
    """A chaos API call failed: ``status`` for the web UI, ``message`` one readable line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def check_chaos_url(text: str) -> str | None:
    """``--chaos-url`` as given: ``http(s)://HOST:PORT`` (a path prefix allowed), or none."""
    if text.strip().rstrip("/").lower() in ("", "none"):
        return None
    try:
        return http_address(text)
    except BadPortError:
        raise SpecError(f"got {text!r}: the chaos API's port must be a number from 1 to 65535") from None
    except ValueError:
        expected = "expected the chaos API's address, like http://127.0.0.1:8071, or none"
        raise SpecError(f"got {text!r}, {expected}") from None


def _utc(text: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(text)


def merge_overview(
    targets: Sequence[Mapping[str, Any]], outages: Sequence[Mapping[str, Any]], now: datetime.datetime
) -> list[dict[str, Any]]:
    """Each target of ``GET /targets`` with its active outages and the seconds each has left.

    ``remaining_s = duration_s - (now - started_utc)``, at least 0 (the chaos API resumes
    the target when it reaches 0).
    """
    rows = []
    for target in targets:
        active = [
            {
                "id": outage["id"],
                "duration_s": outage["duration_s"],
                "remaining_s": max(0.0, outage["duration_s"] - (now - _utc(outage["started_utc"])).total_seconds()),
            }
            for outage in outages
            if outage["status"] == "active"
            and outage["target"] == target["target"]
            and outage["backend"] == target["backend"]
        ]
        rows.append({**target, "outages": active})
    return rows


class ChaosClient:
    """Calls the chaos API at ``base_url`` with ``token`` as bearer token (if any)."""

    def __init__(self, base_url: str, token: str = "", *, timeout_s: float = TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout_s = timeout_s

    def overview(self) -> list[dict[str, Any]]:
        """Every target, its state, and its active outages (see :func:`merge_overview`)."""
        targets = self._call("GET", "/targets")
        outages = self._call("GET", "/outages")
        return merge_overview(targets, outages, datetime.datetime.now(datetime.UTC))

    def pause(self, target: str, duration: str, backend: str | None = None) -> dict[str, Any]:
        """Pause ``target`` for ``duration`` (text such as ``30s``, checked by the chaos API)."""
        body: dict[str, Any] = {"target": target, "duration": duration}
        if backend:
            body["backend"] = backend
        outage: dict[str, Any] = self._call("POST", "/outages", body)
        return outage

    def resume(self, target: str, backend: str | None = None) -> list[dict[str, Any]]:
        """End every active outage of ``target`` now; the outages as they ended."""
        active = [
            outage
            for outage in self._call("GET", "/outages")
            if outage["status"] == "active" and outage["target"] == target and backend in (None, outage["backend"])
        ]
        if not active:
            raise ChaosApiError(
                409,
                f"{target!r} has no active outage to end: only pauses made through the chaos API can be ended "
                "here (`retrystorm chaos recover` resumes what a stopped controller left paused)",
            )
        return [self._call("DELETE", f"/outages/{urllib.parse.quote(outage['id'])}") for outage in active]

    def throttle(self, target: str, capacity: float, duration: str, backend: str | None = None) -> dict[str, Any]:
        """Cut ``target``'s CPU to ``capacity`` of its allowance for ``duration`` (``POST /throttles``)."""
        body: dict[str, Any] = {"target": target, "capacity": capacity, "duration": duration}
        if backend:
            body["backend"] = backend
        throttle: dict[str, Any] = self._call("POST", "/throttles", body)
        return throttle

    def end_throttles(self, target: str, backend: str | None = None) -> list[dict[str, Any]]:
        """Restore every active throttle of ``target`` now; the throttles as they ended ([] when none was active)."""
        active = [
            throttle
            for throttle in self._call("GET", "/throttles")
            if throttle["status"] == "active"
            and throttle["target"] == target
            and backend in (None, throttle["backend"])
        ]
        return [self._call("DELETE", f"/throttles/{urllib.parse.quote(throttle['id'])}") for throttle in active]

    def network(self, body: dict[str, Any]) -> dict[str, Any]:
        """Start a fault in the network (``POST /network``): a toxic on a registered proxy, or a partition."""
        fault: dict[str, Any] = self._call("POST", "/network", body)
        return fault

    def end_network(self, fault_id: str) -> dict[str, Any]:
        """End a network fault now (``DELETE /network/{id}``)."""
        ended: dict[str, Any] = self._call("DELETE", f"/network/{urllib.parse.quote(fault_id)}")
        return ended

    def network_faults(self) -> list[dict[str, Any]]:
        """Every network fault the agent knows (``GET /network``)."""
        found: list[dict[str, Any]] = self._call("GET", "/network")
        return found

    def network_targets(self) -> dict[str, Any]:
        """What the agent may fault in the network (``GET /network-targets``): proxies, peers, interfaces."""
        found: dict[str, Any] = self._call("GET", "/network-targets")
        return found

    def outages(self) -> list[dict[str, Any]]:
        """Every outage the chaos API knows, as ``GET /outages`` lists them."""
        outages = self._call("GET", "/outages")
        if not isinstance(outages, list):
            raise ChaosApiError(502, f"{self.base_url}/outages did not answer a list: is it the chaos API?")
        return outages

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        url = self.base_url + path  # check_chaos_url admits http and https only
        request = urllib.request.Request(url, data=data, method=method, headers=headers)  # noqa: S310
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                return json.loads(response.read())
        except urllib.error.HTTPError as error:
            raise self._refusal(error) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise ChaosApiError(
                502, f"cannot reach the chaos API at {self.base_url}: {reason}; is `retrystorm chaos serve` running?"
            ) from None
        except ValueError:
            raise ChaosApiError(502, f"{self.base_url}{path} did not answer JSON: is it the chaos API?") from None

    def _refusal(self, error: urllib.error.HTTPError) -> ChaosApiError:
        """The chaos API's own message for a 4xx/5xx answer."""
        try:
            message = str(json.loads(error.read())["error"])
        except (ValueError, KeyError, TypeError, OSError):
            message = f"HTTP {error.code} {error.reason}"
        if error.code == 401:
            where = "set --chaos-token or RETRYSTORM_CHAOS_TOKEN to the token `retrystorm chaos serve` uses"
            return ChaosApiError(502, f"the chaos API refused the token ({message}): {where}")
        status = error.code if 400 <= error.code < 500 else 502
        return ChaosApiError(status, message)
