"""Torture a command target: its server ``setsid()``\\ s, the runner is SIGKILLed mid-pause; count what is left.

Each cycle runs ``retrystorm run`` of a one-strategy scenario whose ``target.command`` is a small HTTP server
that forks, and whose child ``setsid()``\\ s (leaving the command's process group and session) before it serves.
Once the server is frozen (its cgroup's freezer reports it), the runner's whole process group is SIGKILLed at a
random moment of the 2-4 s pause. Then:

* **frozen**: the server still frozen 1 s after the pause's deadline;
* **alive**: any process of the command (the parent or the setsid child) still alive 10 s after the kill.

Before the runner started a command in a cgroup of its own, the setsid child was never frozen at all and
outlived every SIGKILLed runner. Prints one line per cycle and the counts; asserts nothing. Needs root and a
cgroup hierarchy that can freeze. Everything runs on 127.0.0.1; each cycle's server is killed by its pid if the
runner left it; journals and logs stay in a temporary folder it names.

    .venv/bin/python bench/torture_command.py [--cycles 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import tempfile
import textwrap
import time
from pathlib import Path

from torturelib import PYTHON, free_port, kill_group, start, wait

from retrystorm.chaos.backends.procfs import process_start_ticks

SERVER = textwrap.dedent(
    """\
    import http.server, os, sys, time
    port, pid_file = int(sys.argv[1]), sys.argv[2]
    if os.fork() == 0:
        os.setsid()  # out of the command's process group and session
        with open(pid_file, "w") as out:
            out.write(str(os.getpid()))

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

            def log_message(self, *args):
                pass

        http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
    while True:
        time.sleep(1)
    """
)
SCENARIO = textwrap.dedent(
    """\
    name: torture-command
    target: {{url: "http://127.0.0.1:{port}", command: python server.py {port} server.pid, ready: /}}
    load: {{users: 3, think_time: constant:200ms, attempt_timeout: 2s, duration: 12s}}
    strategies: [fixed:100ms]
    faults: [{{at: 2s, for: {pause}s}}]
    """
)


def _v2_mount() -> Path | None:
    """Where cgroup v2 is mounted (``/sys/fs/cgroup`` or, on a hybrid host, ``/sys/fs/cgroup/unified``)."""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        fields = line.split()
        if fields[fields.index("-") + 1] == "cgroup2":
            return Path(fields[4])
    return None


def freezer_state(pid: int) -> str:
    """``FROZEN``/``THAWED`` of the cgroup of ``pid`` that froze it (v2 ``cgroup.events``, else the v1 freezer's
    ``freezer.state``), ``gone`` if it is in neither's root-less cgroup or exited."""
    try:
        lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    except OSError:
        return "gone"
    v2 = _v2_mount()
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "" and v2 is not None and path != "/":
            with contextlib.suppress(OSError):
                events = (v2 / path.lstrip("/") / "cgroup.events").read_text()
                return "FROZEN" if "frozen 1" in events.splitlines() else "THAWED"
        if "freezer" in controllers.split(",") and path != "/":
            with contextlib.suppress(OSError):
                return Path(f"/sys/fs/cgroup/freezer{path}/freezer.state").read_text().strip()
    return "gone"


def alive(pid: int, ticks: int | None) -> bool:
    """Still the same process (not a zombie, not a recycled pid)."""
    if ticks is None or process_start_ticks(pid) != ticks:
        return False
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def cycle(folder: Path, rng: random.Random, number: int) -> tuple[bool, bool, str]:
    """One run SIGKILLed mid-pause: (frozen 1 s after the deadline, alive 10 s after the kill, a note)."""
    work = folder / f"c{number}"
    work.mkdir()
    (work / "server.py").write_text(SERVER)
    pause_s = rng.uniform(2.0, 4.0)
    (work / "s.yaml").write_text(SCENARIO.format(port=free_port(), pause=f"{pause_s:.2f}"))
    runner = start(
        [PYTHON, "-m", "retrystorm", "run", "s.yaml", "--allow-saturated", "--out", "out", "--journal", "j.jsonl"],
        os.environ.copy(), work / "runner.log", cwd=work,
    )  # fmt: skip
    server = None
    try:
        wait(lambda: (work / "server.pid").exists() and (work / "server.pid").read_text(), 60, "the server")
        server = int((work / "server.pid").read_text())
        ticks = process_start_ticks(server)
        wait(lambda: freezer_state(server) == "FROZEN", 60, "the server to be frozen")
        frozen_at = time.monotonic()
        time.sleep(rng.uniform(0.1, 0.9) * pause_s)
        kill_group(runner)
        killed_at = time.monotonic()
        time.sleep(max(0.0, frozen_at + pause_s + 1.0 - time.monotonic()))
        still_frozen = freezer_state(server) == "FROZEN" and alive(server, ticks)
        time.sleep(max(0.0, killed_at + 10.0 - time.monotonic()))
        left = [pid for pid in _command_pids(work, server) if alive(pid, process_start_ticks(pid))]
        return still_frozen, bool(left), f"pause {pause_s:.1f} s, killed {killed_at - frozen_at:.1f} s in"
    finally:
        if runner.poll() is None:
            kill_group(runner)
        if server is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(server, signal.SIGKILL)


def _command_pids(work: Path, server: int) -> list[int]:
    """The setsid server and the command's parent (found by its command line in its folder)."""
    found = [server]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                if b"server.py" in argv and (entry / "cwd").resolve() == work:
                    found.append(int(entry.name))
    return sorted(set(found))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="torture-command-"))
    print(f"journals and logs in {folder}; load {os.getloadavg()[0]:.1f}")
    frozen = alive_after = 0
    for number in range(args.cycles):
        still_frozen, left, note = cycle(folder, rng, number)
        frozen += still_frozen
        alive_after += left
        print(f"cycle {number:2d}: {note}; frozen 1 s after the deadline: {still_frozen}; "
              f"a process of the command alive 10 s after the kill: {left}", flush=True)  # fmt: skip
    print(f"{args.cycles} cycles: {frozen} frozen 1 s after the deadline, {alive_after} with a process left 10 s after")


if __name__ == "__main__":
    main()
