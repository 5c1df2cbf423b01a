"""Where a process's CPU is accounted and how a cut is made and undone, against a fake cgroupfs.

cgroup v2 with the cpu controller is not mounted on the machines this runs on (they have v1), so
the v2 path is exercised here on a temporary directory laid out like cgroupfs: the same files,
written and read by the same code. The v1 path runs for real in ``test_throttle.py``.
"""

from pathlib import Path

import pytest

from retrystorm.chaos.backends.base import TargetRefusedError
from retrystorm.chaos.backends.cgroup import CgroupBackend
from retrystorm.chaos.backends.process import plan_process_cut
from retrystorm.chaos.cgroup_quota import QuotaCut
from retrystorm.chaos.cgroupfs import Mount, cgroup_path, mounts
from retrystorm.chaos.cgroups import CGROUP_HINT, CgroupCut, CgroupUnavailableError, cpu_mounts, locate

V1_HOST = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
V1_PROC = "4:memory:/x\n3:cpuset:/\n2:cpuacct:/a\n1:cpu:/b/c\n0::/\n"
PID = 4242


def test_mountinfo_gives_the_v1_cpu_hierarchy_before_v2_and_skips_cpuacct_and_cpuset():
    cpu, unified = cpu_mounts(V1_HOST)
    assert (cpu.version, cpu.path, cpu.controllers) == (1, Path("/sys/fs/cgroup/cpu"), frozenset({"cpu"}))
    assert (unified.version, unified.path) == (2, Path("/sys/fs/cgroup/unified"))
    assert cgroup_path(V1_PROC, cpu) == "/b/c"
    assert cgroup_path(V1_PROC, unified) == "/"
    joint = Mount(1, Path("/sys/fs/cgroup/cpu,cpuacct"), "/", frozenset({"cpu", "cpuacct"}))
    assert cgroup_path("5:cpu,cpuacct:/joint\n", joint) == "/joint"
    assert cpu_mounts("garbage\n\n1 2 3 - \n") == []


@pytest.fixture
def cgroupfs(tmp_path):
    """A v2 hierarchy at tmp/cg with app.slice/web.service (1.5 CPUs) holding PID, and a fake /proc."""
    mount = tmp_path / "cg"
    service = mount / "app.slice" / "web.service"
    service.mkdir(parents=True)
    (mount / "cgroup.subtree_control").write_text("cpu memory\n")
    (mount / "app.slice" / "cgroup.subtree_control").write_text("cpu memory\n")
    (mount / "app.slice" / "cpu.max").write_text("max 100000\n")
    (service / "cpu.max").write_text("150000 100000\n")
    (service / "cgroup.procs").write_text(f"{PID}\n")
    (mount / "app.slice" / "cgroup.procs").write_text("")
    proc = tmp_path / "proc"
    (proc / str(PID)).mkdir(parents=True)
    (proc / str(PID) / "cgroup").write_text("0::/app.slice/web.service\n")
    mountinfo = f"40 31 0:38 / {mount} rw,relatime - cgroup2 cgroup2 rw\n"
    return mount, proc, mountinfo


def test_v2_the_cut_is_a_sibling_with_cpu_max_of_capacity_times_the_group_s_limit(cgroupfs):
    mount, proc, mountinfo = cgroupfs
    place = locate(PID, proc=proc, mountinfo=mountinfo)
    assert place.directory == mount / "app.slice" / "web.service"
    assert place.base() == mount / "app.slice"  # v2: no processes in a group whose children take controllers
    cut = CgroupCut.plan(place, 0.4, "t", cpus_available=4)
    assert (cut.quota_us, cut.period_us, cut.cpus) == (60_000, 100_000, 0.6)  # 0.4 x 1.5 CPUs
    assert cut.apply([PID]) == [PID]
    assert (cut.group / "cpu.max").read_text() == "60000 100000"
    assert (cut.group / "cgroup.procs").read_text().split() == [str(PID)]
    assert cut.restore() == "restored"
    assert not cut.group.exists()
    assert (place.directory / "cgroup.procs").read_text().split()[-1] == str(PID)  # written back where it came from
    assert cut.restore() == "gone"  # idempotent


def test_v2_a_process_at_the_root_gets_a_child_of_the_root(cgroupfs):
    mount, proc, mountinfo = cgroupfs
    (proc / str(PID) / "cgroup").write_text("0::/\n")
    place = locate(PID, proc=proc, mountinfo=mountinfo)
    assert place.base() == place.directory == mount
    cut = CgroupCut.plan(place, 0.5, "t", cpus_available=2)
    assert cut.group == mount / "retrystorm-throttle-t"
    assert cut.quota_us == 100_000  # 0.5 x 2 CPUs: no limit above it


def test_v2_without_cpu_in_subtree_control_is_refused_naming_the_fix(cgroupfs):
    mount, proc, mountinfo = cgroupfs
    (mount / "app.slice" / "cgroup.subtree_control").write_text("memory\n")
    with pytest.raises(CgroupUnavailableError) as refused:
        locate(PID, proc=proc, mountinfo=mountinfo)
    assert "no cpu controller enabled in" in str(refused.value)
    assert CGROUP_HINT in str(refused.value)
    assert "\n" not in str(refused.value)


def test_no_cpu_hierarchy_is_refused(cgroupfs):
    _, proc, _ = cgroupfs
    with pytest.raises(CgroupUnavailableError, match="no cgroup v1 cpu or cgroup v2 hierarchy is mounted"):
        locate(PID, proc=proc, mountinfo="31 23 0:28 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n")


def test_the_process_backend_refuses_a_cut_without_a_cgroup_as_a_user_error(cgroupfs):
    def nowhere(pid: int):
        raise CgroupUnavailableError(f"no writable cgroup cpu controller for pid {pid}")

    with pytest.raises(TargetRefusedError, match=r"^cannot throttle 'web': no writable cgroup cpu controller"):
        plan_process_cut("web", [PID], 0.4, "t", place_of=nowhere)


def test_members_of_one_cgroup_share_one_cut(cgroupfs):
    mount, proc, mountinfo = cgroupfs
    place = locate(PID, proc=proc, mountinfo=mountinfo)
    cuts = plan_process_cut("web", [PID, PID + 1], 0.4, "t", place_of=lambda _pid: place)
    assert len(cuts) == 1
    assert cuts[0].pids == [PID, PID + 1]
    assert (cuts[0].ref.backend, cuts[0].ref.ident) == ("cgroup", str(mount / "app.slice" / "retrystorm-throttle-t-0"))
    assert (cuts[0].cpus_before, cuts[0].cpus_during) == (1.5, 0.6)


@pytest.mark.parametrize(
    ("group", "original"),
    [("/sys/fs/cgroup/cpu/system.slice", "/"), ("relative/retrystorm-throttle-x", "/"),
     ("/sys/fs/cgroup/cpu/../retrystorm-throttle-x", "/"), ("/sys/fs/cgroup/cpu/retrystorm-throttle-x", "rel"),
     ("/sys/fs/cgroup/cpu/retrystorm-throttle-x", "/etc")],
)  # fmt: skip
def test_undo_refuses_anything_but_a_throttle_group_beside_its_original(group, original):
    undo = {"version": 1, "group": group, "original": original, "quota_us": 1000, "period_us": 100_000}
    with pytest.raises(ValueError, match=r"expected an absolute path|not the parent or a sibling"):
        CgroupCut.from_undo(undo)


def test_a_cgroup_that_is_not_writable_is_refused_naming_root_or_delegation(cgroupfs, monkeypatch):
    mount, proc, mountinfo = cgroupfs
    monkeypatch.setattr(
        "retrystorm.chaos.cgroups.os.access", lambda _path, _mode: False
    )  # as for a user without delegation
    with pytest.raises(CgroupUnavailableError) as refused:
        locate(PID, proc=proc, mountinfo=mountinfo)
    assert f"{mount / 'app.slice'} (cgroup v2) is not writable" in str(refused.value)
    assert "run as root" in str(refused.value)
    assert "Delegate=yes" in str(refused.value)


def test_v2_a_cgroup_s_own_cpu_max_is_cut_in_place_and_written_back_exactly(cgroupfs):
    """A cgroup target (a unit, a pod's container) keeps its processes: its own cpu.max is lowered and restored."""
    mount, _, mountinfo = cgroupfs
    known = mounts(mountinfo)
    service = mount / "app.slice" / "web.service"
    (service / "cgroup.freeze").write_text("0\n")
    (service / "cgroup.events").write_text("populated 1\nfrozen 0\n")
    backend = CgroupBackend(known)
    backend.register("web", "/app.slice/web.service")
    (cut,) = backend.plan_cpu_cut("web", backend.resolve("web"), 0.4, "t")
    assert (cut.cpus_before, cut.cpus_during) == (1.5, 0.6)  # 0.4 of its own 1.5 CPUs
    assert cut.undo() == {"kind": "cgroup-quota", "version": 2, "directory": str(service),
                          "quota_us": 150_000, "period_us": 100_000}  # fmt: skip
    cut.apply()
    assert (service / "cpu.max").read_text() == "60000 100000"
    assert (service / "cgroup.procs").read_text().split() == [str(PID)]  # nobody moved
    assert QuotaCut.from_undo(cut.undo(), known).restore() == "restored"  # as recovery does, from the journal
    assert (service / "cpu.max").read_text() == "150000 100000"


def test_v2_a_cgroup_without_a_quota_gets_max_back(cgroupfs):
    mount, _, _ = cgroupfs
    service = mount / "app.slice" / "web.service"
    (service / "cpu.max").write_text("max 100000\n")
    cut = QuotaCut.plan(2, service, 0.5, 2.0)
    cut.apply()
    assert (service / "cpu.max").read_text() == "100000 100000"
    assert cut.restore() == "restored"
    assert (service / "cpu.max").read_text() == "max 100000"


@pytest.mark.parametrize(
    "changes",
    [{"quota_us": 1e999}, {"quota_us": "1"}, {"period_us": 0}, {"version": 1}, {"kind": "cgroup"},
     {"directory": "/etc"}, {"quota_us": 2**64}],
)  # fmt: skip
def test_a_journaled_in_place_cut_is_checked_before_anything_is_written(cgroupfs, changes):
    mount, _, mountinfo = cgroupfs
    undo = {"kind": "cgroup-quota", "version": 2, "directory": str(mount / "app.slice" / "web.service"),
            "quota_us": 150_000, "period_us": 100_000} | changes  # fmt: skip
    with pytest.raises(ValueError, match=r"expected|not under|no cgroup v1"):
        QuotaCut.from_undo(undo, mounts(mountinfo))
