"""Integrations with the tools around retrystorm: :mod:`retrystorm.integrations.chaostoolkit` (Chaos Toolkit)."""
