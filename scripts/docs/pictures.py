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
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
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


def screenshot(page: Path, picture: Path, work: Path, *, width: int = 1200, height: int = 1500) -> None:
    """A headless Chromium's screenshot of ``page`` (a file), ``width`` x ``height`` pixels."""
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    argv = [chromium, *CHROMIUM, f"--user-data-dir={work / 'chromium'}", f"--window-size={width},{height}"]
    _run([*argv, f"--screenshot={picture}", page.as_uri()], cwd=work)


PICTURES: dict[str, Callable[[Path], None]] = {"storm": storm, "map": map_picture, "demo": demo}


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
