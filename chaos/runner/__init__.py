"""The scenario runner: each strategy live against a fresh target, an outage timeline, verdicts.

``retrystorm run SCENARIO`` and ``retrystorm demo`` (:mod:`chaos.runner.cli`) run a
:class:`~chaos.runner.plan.Plan` on a :class:`~chaos.runner.orchestrate.Stack`; the
local stack (:mod:`chaos.runner.local`) starts ``retrystorm target`` and headless
Locust processes on 127.0.0.1.
"""
