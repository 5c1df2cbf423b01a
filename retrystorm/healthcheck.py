"""``retrystorm-healthcheck``: the containers' health checks, with nothing but the standard library.

Container images carry neither curl nor wget, and a health check runs every few
seconds, so this starts fast (no click, no project imports):

* ``retrystorm-healthcheck URL``: healthy when ``GET URL`` answers 2xx within 2 s;
* ``retrystorm-healthcheck --fresh FILE [--max-age SECONDS]``: healthy when ``FILE``
  was modified within the last ``SECONDS`` (default 10). A Locust worker touches
  ``$RETRYSTORM_HEARTBEAT_FILE`` with each report to its master (every few seconds,
  idle or not), so a fresh file means the worker runs and reports.

Exit 0 when healthy, 1 when not (one line on stderr saying why), 2 on bad arguments,
as Docker's ``HEALTHCHECK`` expects.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import urllib.error
import urllib.request

TIMEOUT_S = 2.0
DEFAULT_MAX_AGE_S = 10.0


def check_url(url: str, timeout_s: float = TIMEOUT_S) -> str | None:
    """Why ``GET url`` is unhealthy, or ``None`` when it answers 2xx in time."""
    if not url.startswith(("http://", "https://")):
        return f"expected an http:// or https:// URL, got {url!r}"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # noqa: S310 - scheme checked above
            status: int = response.status
    except urllib.error.HTTPError as error:
        return f"{url} answered {error.code}"
    except (OSError, ValueError) as error:
        return f"{url}: {error}"
    return None if 200 <= status < 300 else f"{url} answered {status}"


def check_fresh(path: str, max_age_s: float, now: float | None = None) -> str | None:
    """Why ``path`` is not fresh, or ``None`` when it was modified within ``max_age_s``."""
    try:
        modified = os.stat(path).st_mtime  # noqa: PTH116 - os.stat is cheaper to import than pathlib
    except OSError as error:
        return f"{path}: {error.strerror}"
    age_s = (time.time() if now is None else now) - modified
    return None if age_s <= max_age_s else f"{path} last touched {age_s:.0f} s ago (limit {max_age_s:g} s)"


def main(argv: list[str] | None = None) -> int:
    """Run one check; the exit status."""
    parser = argparse.ArgumentParser(prog="retrystorm-healthcheck", description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", help="healthy when GET URL answers 2xx")
    parser.add_argument("--fresh", metavar="FILE", help="healthy when FILE was modified recently")
    parser.add_argument("--max-age", type=float, default=DEFAULT_MAX_AGE_S, metavar="SECONDS")
    args = parser.parse_args(argv)
    if (args.url is None) == (args.fresh is None):
        parser.error("give either URL or --fresh FILE")
    problem = check_url(args.url) if args.url is not None else check_fresh(args.fresh, args.max_age)
    if problem is not None:
        sys.stderr.write(f"unhealthy: {problem}\n")
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
