"""Client side: retry strategies (pure), the Locust users and client metrics.

This package imports no Locust itself; only ``retrystorm.loadgen.locustfile`` and the modules it
loads do, so asyncio code (target, chaos, sim) can import ``retrystorm.loadgen.strategies``.
"""
