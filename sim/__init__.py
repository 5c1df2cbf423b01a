"""Discrete-event simulator: the strategies and models in virtual time."""
