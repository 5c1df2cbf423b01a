"""Whether the live ``slow`` trigger of a service of one's own can be played here (the local backend).

A slow cuts what a pause freezes (:mod:`retrystorm.runner.throttle_controls`, through the chaos
controller's throttle): the command's process group or a registered pid through a cgroup
(v1 ``cpu`` or v2 ``cpu.max``, :mod:`retrystorm.chaos.cgroups`), a labelled container or compose
service through ``docker update``. :func:`slow_refusal` says, before anything starts
(``--dry-run`` included), why it cannot, and what would make it possible.
"""

from __future__ import annotations

import os

from retrystorm.chaos.cgroups import CgroupUnavailableError, locate
from retrystorm.experiment.scenario.service import ServiceTarget

SIMULATE = "retrystorm sim run SCENARIO simulates it with a model"


def slow_refusal(spec: ServiceTarget) -> str | None:
    """Why a capacity cut of ``spec`` cannot be played live here (``None``: it can)."""
    kind = spec.pause_kind
    if kind is None:
        return (
            "a CPU cut needs something to cut: give target.command (the runner starts it; its process group is cut "
            f"through a cgroup), pid, container or service; {SIMULATE}"
        )
    if kind in ("container", "service", "cgroup", "unit"):
        return None  # docker update --cpus, or the cgroup's own quota; checked when the run starts
    # A command is born in the runner's cgroup, or in cgroups of its own beside it: where CPU is accounted there.
    chosen = spec.pid if kind == "pid" else spec.tree if kind == "tree" else None
    pid = chosen if chosen is not None else os.getpid()
    try:
        locate(pid)
    except CgroupUnavailableError as error:
        return f"{error}; {SIMULATE}"
    return None
