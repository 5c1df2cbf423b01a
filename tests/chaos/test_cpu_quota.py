"""The arithmetic of a CPU capacity cut: pure functions, exact figures and invariants."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrystorm.chaos.cpu_quota import (
    MIN_QUOTA_US,
    CfsLimit,
    ContainerCpu,
    allowance_cpus,
    check_capacity,
    container_cut,
    container_restore,
    throttled_quota_us,
    v2_cpu_max,
)
from retrystorm.errors import UserError


@pytest.mark.parametrize("capacity", [0, -0.1, 1.01, math.nan, math.inf, 0.0009, "0.4", True])
def test_a_capacity_outside_0_1_is_refused_in_one_line(capacity):
    with pytest.raises(UserError, match=r"^capacity: got .*expected a fraction of the target's CPU in \(0, 1\]"):
        check_capacity(capacity)


def test_the_allowance_is_the_tightest_quota_else_every_cpu():
    assert allowance_cpus([], 2) == 2.0
    assert allowance_cpus([CfsLimit(-1, 100_000), CfsLimit(None, 100_000)], 4) == 4.0
    assert allowance_cpus([CfsLimit(150_000, 100_000), CfsLimit(50_000, 50_000)], 4) == 1.0
    assert allowance_cpus([CfsLimit(800_000, 100_000)], 2) == 2.0  # a quota above the machine: the machine


@pytest.mark.parametrize(
    ("capacity", "allowance", "period", "quota"),
    [(0.4, 2.0, 100_000, 80_000), (0.3, 1.0, 100_000, 30_000), (0.29, 1.0, 100_000, 29_000),
     (1.0, 1.5, 100_000, 150_000), (0.001, 1.0, 100_000, MIN_QUOTA_US), (0.5, 1.0, 50_000, 25_000)],
)  # fmt: skip
def test_the_quota_is_capacity_times_allowance_per_period(capacity, allowance, period, quota):
    assert throttled_quota_us(capacity, allowance, period) == quota


@given(
    capacity=st.floats(min_value=0.001, max_value=1.0),
    allowance=st.floats(min_value=0.01, max_value=256.0),
    period=st.integers(min_value=1_000, max_value=1_000_000),
)
def test_the_quota_never_exceeds_the_allowance_and_never_falls_below_the_kernel_minimum(capacity, allowance, period):
    quota = throttled_quota_us(capacity, allowance, period)
    assert quota >= MIN_QUOTA_US
    assert quota <= max(MIN_QUOTA_US, allowance * period + 1e-6)


def test_v2_cpu_max_reads_max_and_numbers():
    assert v2_cpu_max("max 100000\n").cpus is None
    assert v2_cpu_max("50000 100000").cpus == 0.5


def test_a_container_limited_by_cpus_keeps_nanocpus_and_gets_exactly_them_back():
    before = ContainerCpu(nano_cpus=1_500_000_000, cpu_quota=0, cpu_period=0)
    assert container_cut(before, 0.4, 2) == {"NanoCpus": 600_000_000}
    assert container_restore(before) == {"NanoCpus": 1_500_000_000}


def test_a_container_with_a_quota_is_cut_through_its_quota_and_period():
    before = ContainerCpu(nano_cpus=0, cpu_quota=25_000, cpu_period=50_000)
    assert container_cut(before, 0.4, 2) == {"CpuQuota": 10_000}
    assert container_restore(before) == {"CpuQuota": 25_000}


def test_an_unlimited_container_is_cut_through_cpuquota_which_can_be_lifted_again():
    before = ContainerCpu(nano_cpus=0, cpu_quota=0, cpu_period=0)
    assert container_cut(before, 0.4, 2) == {"CpuQuota": 80_000}  # 0.4 x 2 CPUs
    assert container_restore(before) == {"CpuQuota": -1}  # the engine ignores 0; -1 is no quota
    assert container_restore(ContainerCpu(nano_cpus=0, cpu_quota=-1, cpu_period=0)) == {"CpuQuota": -1}


@pytest.mark.parametrize(("cpuset", "size"), [("0-1", 2), ("0,2-3", 3), ("5", 1), ("", None), ("a-b", None)])
def test_a_container_s_cpuset_counts_its_cpus(cpuset, size):
    from retrystorm.chaos.backends.docker_cpu import cpuset_size

    assert cpuset_size(cpuset) == size
