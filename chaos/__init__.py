"""Faults only: what pauses, throttles or disturbs a registered target, and what guarantees it is undone.

- ``targets`` and ``registration``: what may be faulted (the allow-list, fixed when the controller starts);
- ``backends/``: how a target is paused (``process``: SIGSTOP/SIGCONT through a pidfd; ``cgroup``: the freezer;
  ``docker``: pause/unpause), and a container's CPU cut;
- ``lifecycle``: the one fault lifecycle (inject, guard, expire, revert, recover), played by pauses (``controller``)
  and CPU cuts (``throttles`` over ``cpu_quota``, ``cgroups``, ``cgroup_quota``, ``freezer``, ``containment``, all on
  ``cgroupfs``);
- ``watchdog/`` and ``deadman``: the dead-man switch, one supervisor process per journal that ends every fault at its
  deadline even when the controller died; ``journal`` and ``journal_file``: the record start-up recovery reads;
- ``kubernetes/``: the chaos agent's Kubernetes mode: the pods on its node that match a label selector, from the
  Kubernetes API, frozen and cut through their containers' cgroups by the ``cgroup`` backend;
- ``network/``: faults in the network (a fault proxy for delay, loss, hang and reset; partitions by route or link);
- ``api``, ``client``, ``cli``: the chaos API (``retrystorm chaos serve``: its ``bodies``, ``openapi``, ``metrics``,
  ``annotations`` and ``otel_spans``), its client, and the ``retrystorm chaos`` commands.

The scenarios, the live runner and the reports sit above this package and drive it; nothing here imports them.
"""
