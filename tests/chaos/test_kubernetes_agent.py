"""The agent's Kubernetes mode on this host's real cgroups: a pod's containers, laid out as the kubelet lays them out
(systemd and cgroupfs drivers), each holding a real process tree, found through the pod list of a local API server
answering with recorded-shape responses, frozen whole and resumed on time, cut in place and restored, thawed by a
real watchdog when the agent is gone; and pods the selector or the node rule out are refused.

The API part runs against a local server, not a cluster (there is none here). The recorded list holds pods a real
API would have filtered out (another label, another node), to show the agent checks both again itself.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys

import pytest

from retrystorm.chaos.backends.agents import AgentsBackend
from retrystorm.chaos.backends.base import BackendError, TargetRefusedError, UnknownTargetError
from retrystorm.chaos.client import ChaosClient
from retrystorm.chaos.controller import OutageController
from retrystorm.chaos.freezer import Freezer, kubelet_cgroup
from retrystorm.chaos.journal import Journal
from retrystorm.chaos.kubernetes.api import KubeApi
from retrystorm.chaos.kubernetes.backend import KubernetesBackend
from retrystorm.chaos.kubernetes.pods import LabelSelector
from retrystorm.chaos.targets import FaultTarget
from tests.support.ports import free_port

from . import test_freezer
from .conftest import KeepingSwitch, RecordingSwitch, call, wait_for
from .kube_api import pod_list, serving
from .test_freezer import CPU_V1, FREEZER_V1, V2, cgroup_root, frozen, make_cgroup, members

start_in = test_freezer.start_in  # the fixture: a real process tree started in cgroups, killed afterwards

pytestmark = [
    pytest.mark.signals,
    pytest.mark.skipif(os.geteuid() != 0, reason="makes cgroups: needs root"),
    pytest.mark.skipif(not FREEZER_V1.is_dir() or not CPU_V1.is_dir(), reason="needs the v1 freezer and cpu"),
]
SELECTOR = LabelSelector.parse("retrystorm.io/chaos=allow,app=web")
WEB_0 = ("5e1f9a00-77aa-4b8e-9c2d-3f4a5b6c7d8e", "burstable", {"sidecar": "1f" * 32, "web": "cd" * 32})
HIERARCHIES = [h for h in (V2, FREEZER_V1, CPU_V1) if h is not None]


def _lay_out_web_0(root: str, driver: str, start_in) -> tuple[dict[str, list], dict[str, list[int]]]:
    """web-0's two container cgroups in every hierarchy, a real process tree in each: (directories, pids) by name."""
    uid, qos, containers = WEB_0
    directories, pids = {}, {}
    for name, container_id in containers.items():
        relative = kubelet_cgroup(uid, qos, driver=driver, container_id=container_id, cgroup_root=root)
        directories[name] = [make_cgroup(hierarchy, relative) for hierarchy in HIERARCHIES]
        pids[name] = start_in(directories[name])
    return directories, pids


@pytest.mark.parametrize("driver", ["cgroupfs", "systemd"])
def test_a_pods_containers_are_frozen_and_cut_through_their_kubelet_cgroups(driver, tmp_path, start_in):
    with cgroup_root(*HIERARCHIES) as root, serving(pod_list()) as (base, _):
        directories, pids = _lay_out_web_0(root, driver, start_in)
        backend = KubernetesBackend(KubeApi(base), SELECTOR, "node-a", cgroup_root=root)  # driver auto
        assert backend.targets() == ["shop/web-0", "shop/web-1"]  # db-0: labels; web-2: node-b; web-3: pending
        switch = RecordingSwitch()

        async def scenario() -> None:
            controller = OutageController(Journal(tmp_path / "j.jsonl"), dead_man=switch, recovery_backends=[backend])
            async with controller:
                target = FaultTarget("shop/web-0", backend)
                outage = await controller.pause(target, 0.3)
                assert all(frozen(pid, 2 if V2 else 1) for tree in pids.values() for pid in tree)
                while outage.status == "active":
                    await asyncio.sleep(0.02)
                assert outage.status == "resumed"
                throttle = await controller.throttle(target, 0.25, 30)
                for name, tree in pids.items():
                    quota = directories[name][-1] / "cpu.cfs_quota_us"
                    assert int(quota.read_text()) == int(0.25 * len(os.sched_getaffinity(tree[0])) * 100_000)
                    assert members(directories[name][-1]) == tree  # cut in place: nobody moved
                await throttle.end()
                records = Journal(tmp_path / "j.jsonl").records()  # journaled as cgroups: recovery thaws them alone
                assert {(r["op"], r["backend"]) for r in records} >= {("pause", "cgroup"), ("resume", "cgroup")}

        asyncio.run(scenario())
        guarded = {str(Freezer.at(found[0]).directory) for found in directories.values()}
        assert guarded <= {ident for ident, _, _ in switch.armed}  # each container's freeze had its dead-man switch
        for name, tree in pids.items():
            assert (directories[name][-1] / "cpu.cfs_quota_us").read_text().strip() == "-1"
            assert not any(frozen(pid, 1) for pid in tree)


def test_pods_the_selector_or_the_node_rule_out_are_refused_and_a_wrong_layout_names_its_paths(tmp_path, start_in):
    with cgroup_root(*HIERARCHIES) as root, serving(pod_list()) as (base, _):
        _lay_out_web_0(root, "cgroupfs", start_in)
        backend = KubernetesBackend(KubeApi(base), SELECTOR, "node-a", cgroup_root=root)
        for other in ("shop/db-0", "shop/web-2", "web-0", "shop/nope"):
            with pytest.raises(UnknownTargetError, match=re.escape("matches retrystorm.io/chaos=allow,app=web")):
                backend.resolve(other)
        with pytest.raises(TargetRefusedError, match="no running container"):
            backend.resolve("shop/web-3")
        with pytest.raises(BackendError, match="no cgroup at"):
            backend.resolve("shop/web-1")  # listed, but nothing of it on this host
        systemd = KubernetesBackend(KubeApi(base), SELECTOR, "node-a", driver="systemd", cgroup_root=root)
        with pytest.raises(BackendError, match=r"kubepods\.slice"):
            systemd.resolve("shop/web-0")


def test_a_watchdog_thaws_every_container_when_the_agent_is_gone(tmp_path, start_in):
    """The same dead-man switch: the agent freezes the pod and vanishes; real watchdogs thaw both containers."""
    with cgroup_root(*HIERARCHIES) as root, serving(pod_list()) as (base, _):
        directories, _ = _lay_out_web_0(root, "systemd", start_in)
        backend = KubernetesBackend(KubeApi(base), SELECTOR, "node-a", cgroup_root=root)
        journal = Journal(tmp_path / "j.jsonl")
        switch = KeepingSwitch(journal.path)

        async def pause_and_vanish() -> None:
            await OutageController(journal, dead_man=switch).pause(FaultTarget("shop/web-0", backend), 0.5)

        freezers = [Freezer.at(found[0]) for found in directories.values()]  # v2 where mounted, as frozen
        try:
            asyncio.run(pause_and_vanish())
            assert [freezer.state() for freezer in freezers] == ["frozen", "frozen"]
            wait_for(lambda: all(f.state() == "thawed" for f in freezers), 20, "the watchdogs' thaw")
        finally:
            switch.disarm_all()


def test_chaos_serve_in_kubernetes_mode_freezes_a_pod_over_its_api_and_lists_only_open_pods(tmp_path, start_in):
    """The agent as the DaemonSet runs it, on loopback here: ``GET /targets`` lists the open pods on its node, and
    ``POST /outages`` freezes every container of one until its deadline; a pod the selector rules out is a 4xx; and
    the runner's agents backend (a scenario's ``hosts.agents``) freezes and resumes ``NAMESPACE/POD@NODE`` there."""
    with cgroup_root(*HIERARCHIES) as root, serving(pod_list()) as (api, _):
        _, pids = _lay_out_web_0(root, "cgroupfs", start_in)
        web_1 = kubelet_cgroup("0b6f3c2e-4d1a-4e7b-8a9c-1d2e3f4a5b6c", "guaranteed", driver="cgroupfs",
                               container_id="e4" * 32, runtime="cri-o", cgroup_root=root)  # fmt: skip
        for hierarchy in HIERARCHIES:
            make_cgroup(hierarchy, web_1)  # listed with its cgroup, as on a node; empty, never frozen here
        port = free_port()
        agent = subprocess.Popen(
            [sys.executable, "-m", "retrystorm", "chaos", "serve", "--port", str(port), "--backend", "kubernetes",
             "--pod-selector", "retrystorm.io/chaos=allow,app=web", "--node", "node-a", "--cgroup-root", root,
             "--kube-api", api, "--journal", str(tmp_path / "j.jsonl")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        base = f"http://127.0.0.1:{port}"
        try:
            wait_for(lambda: _answers(base), 30, "the agent to answer")
            status, targets = call(base, "GET", "/targets")
            assert status == 200
            assert [(t["backend"], t["target"], t["state"]) for t in targets] == [
                ("kubernetes", "shop/web-0", "running"), ("kubernetes", "shop/web-1", "running")]  # fmt: skip
            assert call(base, "POST", "/outages", {"target": "shop/db-0", "duration": "1s"})[0] == 404
            status, outage = call(base, "POST", "/outages", {"target": "shop/web-0", "duration": "1s"})
            assert status == 201, outage
            assert all(frozen(pid, 2 if V2 else 1) for tree in pids.values() for pid in tree)
            wait_for(lambda: call(base, "GET", f"/outages/{outage['id']}")[1]["status"] == "resumed", 20, "resume")
            assert not any(frozen(pid, 2 if V2 else 1) for tree in pids.values() for pid in tree)
            # the runner's side of a scenario across hosts: NAMESPACE/POD@NODE through that node's agent
            runner = AgentsBackend({"node-a": ChaosClient(base)}, hold_s=30, locate=lambda name: ("node-a", name[:-7]))
            (ref,) = runner.resolve("shop/web-0@node-a")
            runner.pause(ref)
            assert all(frozen(pid, 2 if V2 else 1) for tree in pids.values() for pid in tree)
            runner.resume(ref)
            assert not any(frozen(pid, 2 if V2 else 1) for tree in pids.values() for pid in tree)
        finally:
            agent.terminate()
            agent.communicate(timeout=20)


def _answers(base: str) -> bool:
    try:
        return call(base, "GET", "/healthz")[0] == 200
    except OSError:
        return False
