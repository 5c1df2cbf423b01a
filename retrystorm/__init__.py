"""retrystorm: which client retry strategies let a stalled service come back."""

__version__ = "0.1.0"
