"""The live runner: each strategy of a scenario against a fresh target, its fault timeline, verdicts.

``retrystorm run SCENARIO`` and ``retrystorm demo`` (:mod:`runner.cli`) run a
:class:`~runner.plan.Plan` on a :class:`~runner.orchestrate.Stack`. Two backends make
a stack, and never import each other: :mod:`runner.local` (fresh processes on
127.0.0.1) and :mod:`runner.compose` (a running compose stack's services). What they
share (the protocols, readings, errors, the plan) lives here, below them.
"""
