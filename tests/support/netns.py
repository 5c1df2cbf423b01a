"""Hosts on one machine: network namespaces joined by veth pairs through a bridge, each with its own address.

A :class:`Lab` makes one namespace per host (``rs<PID>.<START>-<host>``) and a switch namespace holding a
bridge; each host's ``eth0`` is one end of a veth pair whose other end is a port of that bridge, with the
host's address on a private /24 (``10.77.0.0/24`` by default: the labs never touch the machine's own
namespace, so two labs at once do not collide). Nothing is added outside the namespaces it makes.

Removal on every exit path: :meth:`Lab.remove` kills every process still inside the lab's namespaces (they
are processes the lab's user started there) and deletes the namespaces, which deletes their veths and the
bridge. Use it as a context manager or a pytest fixture; a SIGKILLed test cannot clean up, so every new lab
first sweeps the labs whose creating process is gone (:func:`sweep_stale`), recognised by the pid and start
time in their names.

Root is needed (``ip netns add``); :func:`unavailable` says why a lab cannot be made here, for a skip.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: ``rs<PID>.<START TICKS>-<host>``: whose lab a namespace belongs to.
NAME = re.compile(r"rs(\d+)\.(\d+)-([a-z0-9-]+)")
SWITCH = "sw"
DEFAULT_SUBNET = "10.77.0.0/24"


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done


def _start_ticks(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rpartition(")")[2].split()[19])


def unavailable() -> str | None:
    """Why network namespaces cannot be made here (not root, no ``ip``), or ``None``."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "iproute2's ip is not installed"
    return None


def namespaces() -> list[str]:
    """Every named network namespace on this machine."""
    return [line.split()[0] for line in _ip("netns", "list").stdout.splitlines() if line.strip()]


def kill_inside(namespace: str) -> list[int]:
    """SIGKILL every process inside ``namespace`` (ones a lab's user started there); their pids."""
    found = _ip("netns", "pids", namespace, check=False).stdout.split()
    pids = [int(pid) for pid in found if pid.isdigit()]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)  # a frozen process dies only once it runs
            os.kill(pid, signal.SIGKILL)
    return pids


def sweep_stale() -> list[str]:
    """Remove the namespaces of labs whose creating process is gone (a SIGKILLed test); their names."""
    removed = []
    for namespace in namespaces():
        match = NAME.fullmatch(namespace)
        if match is None:
            continue
        pid, ticks = int(match.group(1)), int(match.group(2))
        if _start_ticks(pid) == ticks:
            continue  # its creator still runs
        kill_inside(namespace)
        _ip("netns", "del", namespace, check=False)
        removed.append(namespace)
    return removed


@dataclasses.dataclass(frozen=True, slots=True)
class Host:
    """One host of a lab: its namespace, its address, and its port on the switch."""

    name: str
    namespace: str
    address: str
    port: str

    def argv(self, *command: str) -> list[str]:
        """``command`` run inside this host's namespace."""
        return ["ip", "netns", "exec", self.namespace, *command]

    def run(self, *command: str, timeout_s: float = 30) -> subprocess.CompletedProcess[str]:
        """Run ``command`` here and wait for it."""
        return subprocess.run(self.argv(*command), capture_output=True, text=True, timeout=timeout_s, check=False)

    def wait_listening(self, address: str, port: int, timeout_s: float = 60) -> bool:
        """Until ``address:port`` accepts a connection from this host (bash's ``/dev/tcp``: no client to spawn for
        each try); ``False`` if it never did within ``timeout_s``."""
        tries = max(1, round(timeout_s * 10))
        probe = f"for _ in $(seq {tries}); do (echo > /dev/tcp/{address}/{port}) 2>/dev/null && exit 0; sleep 0.1; done"
        return self.run("bash", "-c", f"{probe}; exit 1", timeout_s=timeout_s * 2 + 10).returncode == 0

    def popen(self, command: Sequence[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start ``command`` here (``ip netns exec`` execs it: the pid is the command's)."""
        return subprocess.Popen(self.argv(*command), **kwargs)


class Lab:
    """Hosts named ``names`` on one switch (see the module docstring)."""

    def __init__(self, names: Sequence[str], subnet: str = DEFAULT_SUBNET) -> None:
        if len(set(names)) != len(names) or not names:
            raise ValueError(f"host names: got {names!r}, expected distinct names")
        network = ipaddress.ip_network(subnet)
        addresses = list(network.hosts())
        pid = os.getpid()
        self.tag = f"rs{pid}.{_start_ticks(pid)}"
        self.switch = f"{self.tag}-{SWITCH}"
        self.prefix_len = network.prefixlen
        self.hosts = {
            name: Host(name, f"{self.tag}-{name}", str(addresses[index]), f"p{index}")
            for index, name in enumerate(names)
        }
        self.made: list[str] = []

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def create(self) -> Lab:
        """Sweep stale labs, then make this one; on a failure, remove what was made and raise."""
        sweep_stale()
        try:
            self._namespace(self.switch)
            _ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            _ip("-n", self.switch, "link", "set", "br0", "up")
            for host in self.hosts.values():
                self._namespace(host.namespace)
                _ip("-n", host.namespace, "link", "set", "lo", "up")
                _ip("-n", host.namespace, "link", "add", "eth0", "type", "veth", "peer", "name", host.port,
                    "netns", self.switch)  # fmt: skip
                _ip("-n", self.switch, "link", "set", host.port, "master", "br0")
                _ip("-n", self.switch, "link", "set", host.port, "up")
                _ip("-n", host.namespace, "addr", "add", f"{host.address}/{self.prefix_len}", "dev", "eth0")
                _ip("-n", host.namespace, "link", "set", "eth0", "up")
        except BaseException:
            self.remove()
            raise
        return self

    def _namespace(self, name: str) -> None:
        _ip("netns", "add", name)
        self.made.append(name)

    def remove(self) -> None:
        """Kill what runs inside, delete every namespace (and so every veth and the bridge); never raises."""
        for namespace in reversed(self.made):
            with contextlib.suppress(Exception):
                kill_inside(namespace)
        time.sleep(0.05)
        for namespace in reversed(self.made):
            _ip("netns", "del", namespace, check=False)
        self.made.clear()

    def link_down(self, name: str) -> None:
        """Cut host ``name`` off: its port on the switch down (packets to and from it go nowhere)."""
        _ip("-n", self.switch, "link", "set", self.hosts[name].port, "down")

    def link_up(self, name: str) -> None:
        """Put host ``name``'s port back up."""
        _ip("-n", self.switch, "link", "set", self.hosts[name].port, "up")

    def __enter__(self) -> Lab:
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.remove()
