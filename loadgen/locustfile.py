"""What ``locust -f loadgen/locustfile.py`` loads: the seed's client as a Locust user.

Usage (docs/guides/locust.md has every option and metric)::

    locust -f loadgen/locustfile.py --host http://127.0.0.1:8070
    locust -f loadgen/locustfile.py --headless -u 1000 -r 200 -t 2m --host http://127.0.0.1:8070 \\
        --retry-strategy fixed:100ms --metrics-port 9646 --exit-code-on-error 0
    locust -f loadgen/locustfile.py --headless -u 1000 -r 200 -t 2m --host http://127.0.0.1:8070 \\
        --http-client urllib3 --retry-strategy urllib3:total=5,backoff_factor=0.5,status_forcelist=[503]

``--http-client`` (also a field of the web UI's start form) chooses who retries: retrystorm's emulation of the
strategy (:class:`SeedClient`, the default) or urllib3's own ``Retry`` (:class:`Urllib3Client`); see
:mod:`retrystorm.loadgen.http_clients`. With ``--load-spikes 60s+10s:x2`` (``retrystorm run`` sets it for a
scenario's ``spike`` triggers), the user count follows :mod:`retrystorm.loadgen.spike_player`.

Importing this module patches the process with gevent (through Locust): nothing in
``target``, ``chaos``, ``sim`` or ``retrystorm.loadgen.strategies`` may import it.
"""

from __future__ import annotations

from locust import events

from retrystorm.loadgen import http_clients
from retrystorm.loadgen.plugin import install
from retrystorm.loadgen.urllib3_user import Urllib3User
from retrystorm.loadgen.user import RetryingUser

install(events)


class SeedClient(RetryingUser):
    """One of the seed experiment's clients (all behaviour comes from the options)."""


class Urllib3Client(Urllib3User):
    """One of the seed experiment's clients, retried by urllib3 (all behaviour comes from the options)."""


http_clients.install(events, {http_clients.EMULATION: SeedClient, http_clients.URLLIB3: Urllib3Client})

__all__ = ["SeedClient", "Urllib3Client"]
