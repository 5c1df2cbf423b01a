"""Faults in the network: a fault proxy in front of a TCP service (delay, loss, hang, reset), partitions by route."""
