"""The built-in experiments, each a ``retrystorm sim`` command (a test checks that this list and the commands agree):

- ``wyegelwel``: the seed simulation (Yegelwel, "Exploring backoff", 2016): a burst against a small queue service;
- ``smira``: the seed outage (github.com/smira/exponential-backoff): 1000 clients, the server frozen 30 s;
- ``contention``: optimistic concurrency under contention (Brooker, AWS Architecture Blog, 2015);
- ``edge``: each strategy's metastability edge, the shortest outage it does not recover from;
- ``osdi22``: the retry experiment of "Metastable Failures in the Wild" (OSDI'22), its four published runs;
- ``brooker``: Marc Brooker's collapse simulation, a 5 s load spike with and without backoff.

Beside them: ``base`` (what an experiment hands to the output layer) and ``scenario_runs`` (every strategy of a
scenario file, simulated and analysed, for ``retrystorm sim run``).
"""
