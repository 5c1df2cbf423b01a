"""What ``locust -f loadgen/locustfile.py`` loads: the seed's client as a Locust user.

Usage (docs/guides/locust.md has every option and metric)::

    locust -f loadgen/locustfile.py --host http://127.0.0.1:8070
    locust -f loadgen/locustfile.py --headless -u 1000 -r 200 -t 2m --host http://127.0.0.1:8070 \\
        --retry-strategy fixed:100ms --metrics-port 9646 --exit-code-on-error 0

With ``--load-spikes 60s+10s:x2`` (``retrystorm run`` sets it for a scenario's ``spike``
triggers), the user count follows :mod:`retrystorm.loadgen.spike_player`.

Importing this module patches the process with gevent (through Locust): nothing in
``target``, ``chaos``, ``sim`` or ``retrystorm.loadgen.strategies`` may import it.
"""

from __future__ import annotations

from locust import events

from retrystorm.loadgen.plugin import install
from retrystorm.loadgen.user import RetryingUser

install(events)


class SeedClient(RetryingUser):
    """One of the seed experiment's clients (all behaviour comes from the options)."""


__all__ = ["SeedClient"]
