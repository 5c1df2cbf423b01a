"""A Chaos Toolkit extension: retrystorm's load with a retry strategy, its verdict as a probe, a control.

* :mod:`.actions`: ``start_load`` (a strategy's Locust load against a running service, back once its users spawn),
  ``run_load`` (the same, returning when the load ends: run it in the background), ``stop_load``, and
  ``pause_service`` (a pause through retrystorm's chaos API);
* :mod:`.probes`: ``verdict``, whether the service recovered from the pauses the chaos API made under that load, and
  the figures (recovery times, amplification, goodput, the load generator's validity);
* :mod:`.control`: ends each load as soon as its verdict is known (so an experiment does not sit out a long load),
  adds every session's final verdict to the journal, and leaves nothing running.

Needs the ``chaostoolkit`` extra (``pip install 'retrystorm[chaostoolkit]'``). ``docs/guides/chaos-toolkit.md`` walks an
experiment through.
"""

from __future__ import annotations

try:
    import chaoslib  # noqa: F401
except ImportError:
    raise ImportError(
        "retrystorm.integrations.chaostoolkit needs the chaostoolkit extra: pip install 'retrystorm[chaostoolkit]'"
    ) from None
