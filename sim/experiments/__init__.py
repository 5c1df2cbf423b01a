"""The built-in experiments: the seed simulation, the seed outage, contention, the edge."""
