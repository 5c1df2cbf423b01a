"""The throttle cycles of ``bench/torture.py --throttles``: cut a CPU-burning target, SIGKILL what cut it.

Each cycle starts a fresh CPU-burning victim (``python -c 'while True: pass'``; with ``--containers``,
in some cycles a labelled container of the offline base image on host networking, limited to 1.5 CPUs
by ``NanoCpus`` or by ``CpuQuota``, burning the same way), cuts it to a random capacity in 0.2..0.6 for
a random 2-5 s, and SIGKILLs the cutting process and its process group at a random moment of the cut.
Then it polls the victim every 50 ms: whether it is still throttled 1 s after the cut's deadline (the
journal's throttle time plus its duration), and when it was first seen restored.

A process counts as throttled while ``/proc/PID/cgroup`` puts it in a ``retrystorm-throttle-*`` cpu
cgroup or a throttle group its journal names still exists; a container while its ``HostConfig``
``NanoCpus``/``CpuQuota`` differ from what it had before the cut.

The cutting process is, in turn, ``chaos throttle pid:PID`` (``cli``) and ``chaos serve --target
victim=PID`` through ``POST /throttles`` (``serve``); with ``--containers`` also ``chaos serve --backend
docker`` (``serve-docker``). Beside each cycle, the same cut (capacity, duration, kill moment) by a
*baseline* controller whose dead-man switch arms nothing, which is then undone with ``retrystorm chaos
recover --journal`` (that cycle's journal) and checked.
"""

from __future__ import annotations

import dataclasses
import math
import random
import statistics
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

from torturelib import BASELINE, PYTHON, free_port, healthy, kill_group, last_deadline, post_json, start, wait

from retrystorm.chaos.cgroupfs import Mount, cgroup_path
from retrystorm.chaos.cgroups import GROUP_PREFIX
from retrystorm.chaos.journal import Journal

BURN = "while True: pass"
IMAGE = "retrystorm-base:bookworm"
#: A container victim's own CPU limit, by turns: 1.5 CPUs as ``--cpus`` sets it, and as a CFS quota.
LIMITS = ({"nano_cpus": 1_500_000_000}, {"cpu_quota": 150_000, "cpu_period": 100_000})
#: How long after its deadline a watchdog-guarded victim is watched for its restore.
PATIENCE_S = 10.0


def cpu_group(pid: int) -> str:
    """The process's path in the cgroup v1 cpu hierarchy ("" once it is gone), as the controller reads it."""
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return ""
    return cgroup_path(text, Mount(1, Path("/sys/fs/cgroup/cpu"), "/", frozenset({"cpu"}))) or ""


class BurningProcess:
    """A CPU-burning child of this benchmark, killed by its pid at the end."""

    kind = "process"

    def __init__(self) -> None:
        self.process = subprocess.Popen([PYTHON, "-c", BURN])
        self.pid = self.process.pid
        self.groups: list[Path] = []  # the throttle groups the cycle's journal named

    def throttled(self) -> bool:
        in_group = Path(cpu_group(self.pid)).name.startswith(GROUP_PREFIX)
        return in_group or any(group.is_dir() for group in self.groups)

    def follow(self, journal: Path) -> None:
        """Watch the throttle groups ``journal`` names too."""
        self.groups = [Path(r["ident"]) for r in Journal(journal).records() if r.get("op") == "throttle"]

    def backend_args(self) -> list[str]:
        return []

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


class BurningContainer:
    """A labelled, CPU-limited, CPU-burning container in a compose project of its own, removed by its id."""

    kind = "docker"

    def __init__(self, client: Any, limit: dict[str, int]) -> None:
        self.project = f"rstorture{uuid.uuid4().hex[:8]}"
        labels = {"retrystorm.chaos": "allow", "com.docker.compose.service": "victim",
                  "com.docker.compose.project": self.project}  # fmt: skip
        self.container = client.containers.run(
            IMAGE, ["python3", "-c", BURN], detach=True, network_mode="host", labels=labels, **limit
        )
        self.before = self.cpu()

    def cpu(self) -> tuple[int, int]:
        self.container.reload()
        host = self.container.attrs["HostConfig"]
        return int(host.get("NanoCpus") or 0), int(host.get("CpuQuota") or 0)

    def throttled(self) -> bool:
        return self.cpu() != self.before

    def follow(self, journal: Path) -> None:
        """Nothing to follow: the container's own settings say it all."""

    def backend_args(self) -> list[str]:
        return ["--backend", "docker", "--project", self.project]

    def stop(self) -> None:
        self.container.remove(force=True)


@dataclasses.dataclass(frozen=True, slots=True)
class Plan:
    """One cycle: the capacity, the cut's length, and when into the cut its cutter is killed."""

    capacity: float
    cut_s: float
    kill_at: float

    @classmethod
    def draw(cls, rng: random.Random) -> Plan:
        cut_s = round(rng.uniform(2.0, 5.0), 2)
        return cls(round(rng.uniform(0.2, 0.6), 2), cut_s, round(rng.uniform(0.1, cut_s - 0.1), 2))


def cut(way: str, victim, plan: Plan, files: tuple[Path, Path], env: dict[str, str]) -> subprocess.Popen[bytes]:
    """Start cutting ``victim`` through ``way``; return the cutting process once the cut is in place.

    If the cut does not come, the cutting process is killed (by its group) before the error is raised.
    """
    (journal, log), capacity, seconds = files, str(plan.capacity), f"{plan.cut_s}s"
    journaled = ["--journal", str(journal)]
    port = free_port()
    if way in ("serve", "serve-docker"):
        argv = [PYTHON, "-m", "retrystorm", "chaos", "serve", "--port", str(port), "--max-outage", "10s", *journaled]
        argv += ["--target", f"victim={victim.pid}"] if way == "serve" else victim.backend_args()
    elif way == "cli":
        target = f"pid:{victim.pid}"
        argv = [PYTHON, "-m", "retrystorm", "chaos", "throttle", target, "--capacity", capacity, "--for", seconds]
        argv += journaled
    else:  # baseline
        what = str(victim.pid) if victim.kind == "process" else victim.project
        argv = [PYTHON, "-c", BASELINE, "throttle", victim.kind, what, str(plan.cut_s), str(journal), capacity]
    cutter = start(argv, env, log)
    try:
        if way in ("serve", "serve-docker"):
            wait(lambda: healthy(port), 30, "the chaos API")
            post_json(port, "/throttles", {"target": "victim", "capacity": plan.capacity, "duration": seconds})
        wait(victim.throttled, 30, f"the cut ({way}; see {log})")
    except BaseException:
        kill_group(cutter)
        raise
    return cutter


def watch(victim, deadline: float, patience_s: float) -> tuple[bool, float]:
    """Poll every 50 ms: whether ``victim`` is still throttled 1 s after ``deadline``, and when it was restored.

    The restore time (wall clock, relative to the deadline) is NaN if it was not seen within ``patience_s``.
    """
    stuck, restored = None, float("nan")
    while True:
        now = time.time()
        throttled = victim.throttled()
        if not throttled and math.isnan(restored):
            restored = now - deadline
        if stuck is None and now >= deadline + 1.0:
            stuck = throttled
        if stuck is not None and (not throttled or now >= deadline + patience_s):
            return stuck, restored
        time.sleep(0.05)


def recover(victim, journal: Path, env: dict[str, str]) -> bool:
    """``retrystorm chaos recover --journal`` for what a killed cutter left; whether the victim is restored."""
    argv = [PYTHON, "-m", "retrystorm", "chaos", "recover", "--journal", str(journal), *victim.backend_args()]
    subprocess.run(argv, env=env, check=False, capture_output=True, timeout=60)
    return not victim.throttled()


def cycle(way: str, victim, plan: Plan, folder: Path, env: dict[str, str]) -> tuple[bool, float, bool]:
    """Cut ``victim`` through ``way``, SIGKILL the cutter ``plan.kill_at`` into the cut, watch the restore.

    Returns (still throttled 1 s after the deadline, restore delay after it, restored at the end). What
    the watchdog did not restore (always so for the baseline) is recovered from the cycle's journal.
    """
    name = f"{uuid.uuid4().hex[:8]}-{way}"
    journal, log = folder / f"{name}.jsonl", folder / f"{name}.log"
    cutter = None
    try:
        cutter = cut(way, victim, plan, (journal, log), env)
        in_place = time.time()  # cut() returns once the cut is in place: its clock starts then
        time.sleep(plan.kill_at)
        kill_group(cutter)
        victim.follow(journal)
        deadline = max(last_deadline(journal, "throttle"), in_place + plan.cut_s)
        stuck, late = watch(victim, deadline, 1.0 if way == "baseline" else PATIENCE_S)
    finally:  # also on an error or Ctrl-C: nothing is left throttled, no throttle group left behind
        if cutter is not None and cutter.returncode is None:  # not reaped yet: its group id is still its own
            kill_group(cutter)
        victim.follow(journal)
        restored = not victim.throttled() or recover(victim, journal, env)
    return stuck, late, restored


@dataclasses.dataclass(slots=True)
class Tally:
    """Counts of one kind of target (processes, containers) and one arm (watchdog, baseline)."""

    cycles: int = 0
    stuck: int = 0
    unrestored: int = 0
    delays: list[float] = dataclasses.field(default_factory=list)

    def add(self, stuck: bool, late: float, restored: bool) -> None:
        self.cycles += 1
        self.stuck += stuck
        self.unrestored += not restored
        if not math.isnan(late):  # NaN: never seen restored
            self.delays.append(late)

    def summary(self) -> str:
        line = f"{self.stuck} of {self.cycles} still throttled 1 s after their deadline"
        if self.delays:
            line += f"; restored {statistics.median(self.delays):+.2f} s (median), {max(self.delays):+.2f} s (worst)"
            line += " after the deadline"
        return line + f"; {self.unrestored} left throttled at the end"


def run_throttles(cycles: int, seed: int, containers: bool, folder: Path, env: dict[str, str]) -> None:
    """The throttle cycles (module docstring), one line each, then the counts per kind of target and arm."""
    rng = random.Random(seed)
    ways = ["cli", "serve"] + (["serve-docker"] if containers else [])
    client = None
    if containers:
        import docker  # only with --containers

        client = docker.from_env()
    tallies: dict[tuple[str, str], Tally] = {}
    try:
        for index in range(cycles):
            way, plan = ways[index % len(ways)], Plan.draw(rng)
            for arm in ("watchdog", "baseline"):
                victim = BurningContainer(client, LIMITS[index % 2]) if way == "serve-docker" else BurningProcess()
                try:
                    stuck, late, restored = cycle(way if arm == "watchdog" else "baseline", victim, plan, folder, env)
                finally:
                    victim.stop()
                tallies.setdefault((victim.kind, arm), Tally()).add(stuck, late, restored)
                shown = "STILL THROTTLED" if stuck else f"restored {late:+.2f} s after the deadline"
                if arm == "baseline":
                    shown += "; chaos recover restored it" if restored else "; chaos recover FAILED to restore it"
                print(
                    f"{index + 1:3d} {arm:8s} {way:12s} capacity {plan.capacity:.2f} for {plan.cut_s:4.2f} s, "
                    f"killed at {plan.kill_at:4.2f} s: {shown}",
                    flush=True,
                )
    finally:
        if client is not None:
            client.close()
    report(tallies)


def report(tallies: dict[tuple[str, str], Tally]) -> None:
    """The counts: processes then containers, the watchdog then the baseline; and any throttle group left."""
    print()
    for kind, arm in sorted(tallies, key=lambda key: (key[0] != "process", key[1] != "watchdog")):
        label = "baseline (no dead-man switch)" if arm == "baseline" else "watchdog"
        print(f"{'processes' if kind == 'process' else 'containers'}, {label}: {tallies[kind, arm].summary()}")
    left = sorted(str(group) for group in Path("/sys/fs/cgroup/cpu").rglob(f"{GROUP_PREFIX}*"))
    print(f"{GROUP_PREFIX}* groups under /sys/fs/cgroup/cpu at the end (anyone's): {', '.join(left) or 'none'}")
