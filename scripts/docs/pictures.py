"""Make the documentation's pictures with the project's own commands: ``python scripts/docs/pictures.py [NAME...]``.

Each picture is made by a command a reader can run, and written to ``docs/assets/``; the pages say which
command made it. Without a NAME, every picture is made again. They are committed (a build never runs
them: the live ones take minutes), so the commit that changed a picture is the commit it shows.

* ``storm``: ``retrystorm sim run smira-sigstop``'s ``comparison.png``: the seed outage simulated, fixed
  100 ms retries against the seed's backoff (seeded: the same at every run).
* ``map``: ``retrystorm map smira-sigstop`` over the freeze's length and the users, ``map.png`` (seeded).
* ``demo``: ``retrystorm demo`` live (about 3 minutes on 127.0.0.1): its printed results
  (``demo-output.txt``) and a screenshot of its ``report.html`` taken with headless Chromium
  (``report.png``).
* ``storm-tab``: the Locust web UI's Retry storm tab during a storm (about 90 s on 127.0.0.1, on free ports): a
  ``retrystorm target``, a ``retrystorm chaos serve`` that may pause it and Locust's web UI with ``--chaos-url``;
  300 users retrying with ``fixed:100ms`` are started through ``POST /swarm``, the target is paused for 10 s
  through ``POST /outages``, and the tab (``/?tab=storm``) is photographed a minute later
  (``retry-storm-tab.png``). Every process is stopped by its process group at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "docs" / "assets"
RETRYSTORM = [sys.executable, "-m", "retrystorm"]
#: Chromium's flags for a headless screenshot (shared/docs/environment.md), without a profile of the user's.
CHROMIUM = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def _run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    sys.stderr.write(f"$ {' '.join(argv)}\n")
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)  # noqa: S603
    if done.returncode != 0:
        sys.stderr.write(done.stdout + done.stderr)
        raise SystemExit(f"{argv[0]} exited {done.returncode}")
    return done.stdout


def storm(work: Path) -> None:
    """The seed outage, simulated: fixed 100 ms retries never come back, the seed's backoff does."""
    _run([*RETRYSTORM, "sim", "run", "smira-sigstop", "--out", str(work / "storm")], cwd=work)
    shutil.copyfile(work / "storm" / "comparison.png", ASSETS / "storm-vs-recovery.png")


def map_picture(work: Path) -> None:
    """Where each strategy of the seed outage tips over: freeze length by users."""
    argv = [*RETRYSTORM, "map", "smira-sigstop", "--vary", "faults[0].for=5s..60s:12"]
    argv += ["--vary", "load.users=200..2000:10", "--out", str(work / "map")]
    _run(argv, cwd=work)
    shutil.copyfile(work / "map" / "map.png", ASSETS / "map.png")


def demo(work: Path) -> None:
    """``retrystorm demo`` live: its results as printed, and its report as a browser shows it."""
    env = {**os.environ, "COLUMNS": "150", "RETRYSTORM_CHAOS_JOURNAL": str(work / "journal.jsonl")}
    printed = _run([*RETRYSTORM, "demo", "--out", str(work / "demo")], cwd=work, env=env)
    lines = [line.rstrip() for line in printed.splitlines() if not line.startswith(("report:", "run folder:"))]
    (ASSETS / "demo-output.txt").write_text("\n".join(lines).strip("\n") + "\n", encoding="utf-8")
    screenshot(work / "demo" / "report.html", ASSETS / "report.png", work)


def screenshot(page: Path | str, picture: Path, work: Path, *, width: int = 1200, height: int = 1500) -> None:
    """A headless Chromium's screenshot of ``page`` (a file or a URL), ``width`` x ``height`` pixels."""
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    argv = [chromium, *CHROMIUM, f"--user-data-dir={work / 'chromium'}", f"--window-size={width},{height}"]
    address = page.as_uri() if isinstance(page, Path) else page
    _run([*argv, "--virtual-time-budget=5000", f"--screenshot={picture}", address], cwd=work)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(url: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=2).close()  # noqa: S310 - a loopback address this script started
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.2)
        else:
            return
    raise SystemExit(f"{url} did not answer within {timeout_s:.0f} s")


def _post(url: str, data: bytes, content_type: str) -> None:
    headers = {"Content-Type": content_type}
    request = urllib.request.Request(url, data=data, method="POST", headers=headers)  # noqa: S310 - loopback, ours
    urllib.request.urlopen(request, timeout=30).close()  # noqa: S310 - a loopback address this script started


@contextmanager
def _processes(work: Path) -> Iterator[Callable[[str, list[str]], subprocess.Popen[bytes]]]:
    """Start processes in sessions of their own, each logged to ``work``; stop every one by its group at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        sys.stderr.write(f"$ {' '.join(argv)} &\n")
        log = (work / f"{name}.log").open("wb")
        env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(work / "journal.jsonl"), "RETRYSTORM_CHAOS_TOKEN": ""}
        process = subprocess.Popen(  # noqa: S603 - the project's own commands
            argv, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        started.append(process)
        return process

    try:
        yield start
    finally:
        for process in reversed(started):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(started):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def storm_tab(work: Path) -> None:
    """The Retry storm tab during a storm: 300 users retrying every 100 ms, the target paused for 10 s."""
    target_port, chaos_port, web_port = _free_port(), _free_port(), _free_port()
    target_url, chaos_url, web = (f"http://127.0.0.1:{port}" for port in (target_port, chaos_port, web_port))
    locustfile = ROOT / "loadgen" / "locustfile.py"
    with _processes(work) as start:
        target = start("target", [*RETRYSTORM, "target", "--port", str(target_port), "--report-interval", "0"])
        _wait(target_url + "/healthz")
        start("chaos", [*RETRYSTORM, "chaos", "serve", "--port", str(chaos_port), "--target", f"target={target.pid}"])
        _wait(chaos_url + "/healthz")
        locust = [sys.executable, "-m", "locust", "-f", str(locustfile), "--host", target_url]
        start("locust", [*locust, "--web-host", "127.0.0.1", "--web-port", str(web_port), "--chaos-url", chaos_url])
        _wait(web + "/")
        form = {"user_count": "300", "spawn_rate": "300", "host": target_url, "retry_strategy": "fixed:100ms",
                "think_time": "exponential:3s", "attempt_timeout": "2s"}  # fmt: skip
        _post(web + "/swarm", urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded")
        time.sleep(20)
        _post(chaos_url + "/outages", json.dumps({"target": "target", "duration": "10s"}).encode(), "application/json")
        time.sleep(60)
        screenshot(web + "/?tab=storm", ASSETS / "retry-storm-tab.png", work, width=1300, height=980)


PICTURES: dict[str, Callable[[Path], None]] = {
    "storm": storm,
    "map": map_picture,
    "demo": demo,
    "storm-tab": storm_tab,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", choices=[*PICTURES, []], help="pictures to make (default: all)")
    names = parser.parse_args().names or list(PICTURES)
    ASSETS.mkdir(parents=True, exist_ok=True)
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"retrystorm-docs-{name}-") as work:
            PICTURES[name](Path(work))
        sys.stderr.write(f"{name}: done\n")


if __name__ == "__main__":
    main()
