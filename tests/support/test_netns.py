"""The namespace lab: hosts that reach each other, cut off on demand, and removed on every exit path."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.netns import Lab, namespaces, sweep_stale, unavailable

pytestmark = [pytest.mark.live, pytest.mark.skipif(unavailable() is not None, reason=str(unavailable()))]
ROOT = Path(__file__).resolve().parents[2]

SERVE = (
    "import http.server as h; h.ThreadingHTTPServer(('{address}', 8000), h.SimpleHTTPRequestHandler).serve_forever()"
)
KILLED_CREATOR = (
    "import os, signal, sys; sys.path.insert(0, sys.argv[1]); from tests.support.netns import Lab; "
    "lab = Lab(['a', 'b']).create(); print(' '.join(lab.made), flush=True); os.kill(os.getpid(), signal.SIGKILL)"
)
FETCH = textwrap.dedent(
    """
    import sys, urllib.request
    try:
        print(urllib.request.urlopen('http://{address}:8000/', timeout=1.5).status)
    except OSError as error:
        print(type(error).__name__)
    """
)


def fetch(lab: Lab, source: str, target: str) -> str:
    done = lab[source].run(sys.executable, "-c", FETCH.format(address=lab[target].address))
    return done.stdout.strip()


def test_hosts_reach_each_other_are_cut_off_and_everything_is_removed():
    lab = Lab(["client", "server"])
    with lab:
        server = lab["server"].popen(
            [sys.executable, "-c", SERVE.format(address=lab["server"].address)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert lab["client"].wait_listening(lab["server"].address, 8000)
        assert not lab["client"].wait_listening(lab["server"].address, 8001, timeout_s=0.3)  # nothing there
        assert fetch(lab, "client", "server") == "200"
        assert lab["client"].address != lab["server"].address
        lab.link_down("server")
        assert fetch(lab, "client", "server") in ("TimeoutError", "URLError")
        lab.link_up("server")
        assert fetch(lab, "client", "server") == "200"
        made = set(lab.made)
    server.wait(timeout=10)  # killed by the removal: it ran inside the lab
    assert made.isdisjoint(namespaces())


def test_a_lab_left_by_a_killed_process_is_swept_by_the_next_one():
    creator = subprocess.run(
        [sys.executable, "-c", KILLED_CREATOR, str(ROOT)], capture_output=True, text=True, timeout=60, check=False
    )
    left = creator.stdout.split()
    assert len(left) == 3
    assert set(left) <= set(namespaces())  # SIGKILL: nothing cleaned up
    swept = sweep_stale()
    assert set(left) <= set(swept)
    assert set(left).isdisjoint(namespaces())
