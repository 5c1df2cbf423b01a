"""The live runner: each strategy of a scenario against a fresh target, its fault timeline, verdicts.

``retrystorm run SCENARIO`` and ``retrystorm demo`` (:mod:`retrystorm.runner.cli`) run a
:class:`~retrystorm.runner.plan.Plan` on a :class:`~retrystorm.runner.orchestrate.Stack`. Two backends make
a stack, and never import each other: :mod:`retrystorm.runner.local` (fresh processes on
127.0.0.1) and :mod:`retrystorm.runner.compose` (a running compose stack's services). What they
share (the protocols, readings, errors, the plan) lives here, below them.
"""
