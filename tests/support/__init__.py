"""What the tests and the benchmarks share: free ports, waiting, HTTP, processes, ``/proc``, and the test tiers.

One implementation of each: a test or a bench that needs a port, a wait or a child process takes it from here.
The bench scripts import it too (``bench/benchlib.py`` puts the repository on the import path).
"""
