"""Torture: pause or CPU-cut a real target, SIGKILL whatever did it mid-fault, count what stays faulted.

Each cycle pauses a real target for a random 2-5 s and SIGKILLs the pausing process (and
its whole process group) at a random moment of the outage. One second after the outage's
deadline the target's own state is read (``/proc/PID/stat`` for a process, the engine for a
container): a target still frozen then counts as a failure. The pausing process is, in turn:

* ``chaos serve``: ``retrystorm chaos serve --target victim=PID``, paused over its HTTP API;
* ``chaos pause``: the one-shot command;
* ``run``: ``retrystorm run`` of a one-strategy scenario (its own target process and Locust);
* ``serve-docker`` (with ``--containers``): ``chaos serve --backend docker`` pausing a
  labelled container on host networking.

Side by side, the same cycles against a *baseline*: a controller exactly like
``chaos pause``'s but whose dead-man switch arms nothing, which is what every controller
was before the watchdog. It shows what the watchdog is for: without it every SIGKILLed
pause stays frozen until someone runs ``retrystorm chaos recover``.

With ``--throttles`` the cycles cut CPU instead (``bench/torture_throttles.py``): a fresh
CPU-burning victim is cut to a random capacity in 0.2..0.6 for 2-5 s, the cutting process
SIGKILLed mid-cut, and the victim polled every 50 ms: still throttled 1 s after the deadline
(a process in a ``retrystorm-throttle-*`` cpu cgroup, or its throttle group still there; a
container whose ``NanoCpus``/``CpuQuota`` differ from before), and how long after the
deadline it was restored. The cutting process is, in turn:

* ``cli``: ``retrystorm chaos throttle pid:PID --capacity C --for D``;
* ``serve``: ``retrystorm chaos serve --target victim=PID``, cut over ``POST /throttles``;
* ``serve-docker`` (with ``--containers``): ``chaos serve --backend docker`` cutting a
  labelled, CPU-limited container on host networking.

Every throttle cycle has its baseline twin (a controller whose dead-man switch arms nothing),
whose cut ``retrystorm chaos recover --journal`` then undoes and the bench checks. Throttles
need root and the cgroup v1 cpu hierarchy at ``/sys/fs/cgroup/cpu``; containers need an engine.

Prints one line per cycle and the counts; asserts nothing. Everything runs on 127.0.0.1,
every process it starts is stopped by its pid (containers by their id), and every target is
resumed or restored before the next cycle; journals and logs stay in a temporary folder it names.

    .venv/bin/python bench/torture.py [--cycles 30] [--seed 1] [--containers] [--throttles]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import signal
import subprocess
import tempfile
import textwrap
import time
from pathlib import Path

from torturelib import BASELINE, PYTHON, free_port, healthy, kill_group, last_deadline, post_json, start, wait, wall

from retrystorm.chaos.backends.procfs import process_start_ticks, process_state_letter
from retrystorm.chaos.journal import Journal

SCENARIO = textwrap.dedent(
    """\
    name: torture
    model: fixed:base_delay=10ms
    load: {{users: 5, think_time: exponential:1s, attempt_timeout: 2s, duration: {duration}s}}
    strategies: [fixed:100ms]
    faults: [{{at: 2s, for: {pause}s}}]
    """
)


class Victim:
    """A sleeping process to pause: a child of this benchmark, stopped by its pid at the end.

    In ``run`` cycles the runner starts its own target; :attr:`pid` then names that one.
    """

    def __init__(self) -> None:
        self.process = subprocess.Popen(["sleep", "3600"])
        self.follow(self.process.pid)

    def follow(self, pid: int) -> None:
        """Watch ``pid`` as it is now: its start time too, so a recycled pid is never taken for it."""
        self.pid, self.ticks = pid, process_start_ticks(pid)

    def frozen(self) -> bool:
        """Stopped, and still the process it was (a pid recycled for another process is not it)."""
        return process_start_ticks(self.pid) == self.ticks and process_state_letter(self.pid) in ("T", "t")

    def release(self) -> None:
        if process_start_ticks(self.pid) == self.ticks:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)


class ContainerVictim:
    """A labelled container of the offline base image, on host networking, removed by its id at the end."""

    def __init__(self, project: str) -> None:
        import docker  # only with --containers

        self.client = docker.from_env()
        labels = {
            "retrystorm.chaos": "allow",
            "com.docker.compose.service": "victim",
            "com.docker.compose.project": project,
        }
        self.container = self.client.containers.run(
            "retrystorm-base:bookworm", ["sleep", "3600"], detach=True, network_mode="host", labels=labels
        )

    def frozen(self) -> bool:
        self.container.reload()
        return self.container.status == "paused"

    def release(self) -> None:
        if self.frozen():
            self.container.unpause()

    def remove(self) -> None:
        self.container.remove(force=True)
        self.client.close()


def new_pauses(journal: Path, since: float) -> list[dict]:
    """Pause records of the journal written after ``since`` (wall clock)."""
    return [record for record in Journal(journal).records() if record.get("op") == "pause" and wall(record) >= since]


def resumed_at(journal: Path) -> float:
    """The wall-clock time of the latest resume in the journal (the watchdog journals the one it makes)."""
    resume = [record for record in Journal(journal).records() if record.get("op") == "resume"][-1]
    return wall(resume)


def cycle(mode: str, victim, timing: tuple[float, float], env: dict[str, str], folder: Path) -> tuple[bool, float]:
    """Pause ``victim`` for ``pause_s`` through ``mode``, SIGKILL it ``kill_at`` into the outage.

    Returns whether the target was still frozen 1 s after the outage's deadline (the journal's
    pause time plus its duration), and how long after the deadline it came back.
    """
    pause_s, kill_at = timing
    journal = Path(env["RETRYSTORM_CHAOS_JOURNAL"])
    if mode in ("serve", "serve-docker"):
        port = free_port()
        argv = [PYTHON, "-m", "retrystorm", "chaos", "serve", "--port", str(port), "--max-outage", "10s"]
        if mode == "serve":
            argv += ["--target", f"victim={victim.pid}"]
        else:
            argv += ["--backend", "docker", "--project", env["TORTURE_PROJECT"]]
        pauser = start(argv, env)
        wait(lambda: healthy(port), 30, "the chaos API")
        post_json(port, "/outages", {"target": "victim", "duration": f"{pause_s}s"})
        paused_at = time.monotonic()
    elif mode in ("pause", "baseline"):
        if mode == "pause":
            argv = [PYTHON, "-m", "retrystorm", "chaos", "pause", f"pid:{victim.pid}", "--for", f"{pause_s}s"]
        else:
            argv = [PYTHON, "-c", BASELINE, "pause", "process", str(victim.pid), str(pause_s), str(journal)]
        pauser = start(argv, env)
        wait(victim.frozen, 30, "the pause")
        paused_at = time.monotonic()
    else:  # run: the runner's own target is the victim
        (folder / "torture.yaml").write_text(SCENARIO.format(duration=int(pause_s) + 8, pause=pause_s))
        argv = [PYTHON, "-m", "retrystorm", "run", str(folder / "torture.yaml"), "--out", str(folder / "run")]
        since = time.time()  # the journal may be compacted at the runner's start: find its pause by time
        pauser = start(argv, env, cwd=folder)
        pause = wait(lambda: new_pauses(journal, since), 90, "the runner's pause")
        victim.follow(int(pause[0]["ident"].split("@")[0]))
        wait(victim.frozen, 10, "the pause")
        paused_at = time.monotonic()
    time.sleep(max(0.0, paused_at + kill_at - time.monotonic()))
    kill_group(pauser)
    # The clock starts when the target is frozen (the journal's record is written before): seen frozen at paused_at
    deadline = max(last_deadline(journal), time.time() - (time.monotonic() - paused_at) + pause_s)
    time.sleep(max(0.0, deadline + 1.0 - time.time()))
    frozen = victim.frozen()
    late = resumed_at(journal) - deadline if not frozen else float("nan")
    if victim.frozen():
        victim.release()  # whatever happened, the next cycle starts with a running target
    if mode == "run" and process_start_ticks(victim.pid) == victim.ticks:
        os.kill(victim.pid, signal.SIGKILL)  # the runner's orphaned target, by the pid and start the journal named
    return frozen, late


def run_pauses(cycles: int, seed: int, containers: bool, folder: Path, env: dict[str, str]) -> None:
    """The pause cycles (module docstring), one line each, then the counts."""
    rng = random.Random(seed)
    modes = ["serve", "pause", "run"] + (["serve-docker"] if containers else [])
    container = ContainerVictim(folder.name) if containers else None
    frozen = {"watchdog": 0, "baseline": 0}
    lateness: list[float] = []
    try:
        for index in range(cycles):
            mode = modes[index % len(modes)]
            pause_s = round(rng.uniform(2.0, 5.0), 2)
            kill_at = round(rng.uniform(0.1, pause_s - 0.1), 2)
            for arm in ("watchdog", "baseline"):
                if arm == "baseline" and mode != "pause":
                    continue  # the baseline is one way of pausing, the same cycles' "pause" ones
                victim = container if mode == "serve-docker" else Victim()
                try:
                    way = mode if arm == "watchdog" else "baseline"
                    stuck, late = cycle(way, victim, (pause_s, kill_at), env, folder)
                finally:
                    if isinstance(victim, Victim):
                        victim.release()
                        victim.process.kill()
                        victim.process.wait()
                frozen[arm] += stuck
                if arm == "watchdog" and not stuck:
                    lateness.append(late)
                shown = "STILL FROZEN" if stuck else f"back {late:+.2f} s after the deadline"
                print(f"{index + 1:3d} {arm:8s} {mode:12s} pause {pause_s:4.2f} s, killed at {kill_at:4.2f} s: {shown}")
        subprocess.run(  # anything the baseline left for the second net
            [PYTHON, "-m", "retrystorm", "chaos", "recover"], env=env, check=False, capture_output=True, timeout=60
        )
    finally:
        if container is not None:
            container.release()
            container.remove()
    baseline_cycles = sum(1 for i in range(cycles) if modes[i % len(modes)] == "pause")
    print()
    print(f"watchdog: {frozen['watchdog']} of {cycles} targets still frozen 1 s after their deadline")
    print(f"baseline (no dead-man switch): {frozen['baseline']} of {baseline_cycles} still frozen")
    if lateness:
        ordered = sorted(lateness)
        print(f"back after the deadline: median {ordered[len(ordered) // 2]:+.2f} s, worst {ordered[-1]:+.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cycles", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--containers", action="store_true", help="also a real container (needs an engine)")
    parser.add_argument("--throttles", action="store_true", help="cut CPU-burning targets' CPU instead of pausing")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="retrystorm-torture-"))
    env = {**os.environ, "RETRYSTORM_CHAOS_JOURNAL": str(folder / "journal.jsonl"), "TORTURE_PROJECT": folder.name}
    if args.throttles:
        from torture_throttles import run_throttles

        run_throttles(args.cycles, args.seed, args.containers, folder, env)
    else:
        run_pauses(args.cycles, args.seed, args.containers, folder, env)
    print(f"journals and logs: {folder}")


if __name__ == "__main__":
    main()
