"""Chaos: fault backends, scenarios, the runner, reports and the chaos API."""
