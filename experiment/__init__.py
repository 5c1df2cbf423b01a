"""The experiment framework shared by the simulator and the live runner.

* :mod:`retrystorm.experiment.scenario`: the scenario file format, validated;
* :mod:`retrystorm.experiment.analysis`: recovery, verdicts and results from per-second series;
* :mod:`retrystorm.experiment.report`: plots, tables and ``report.html``.

Below it are the pure cores (strategies, think time, models) and the fault layer;
above it the simulator (:mod:`sim`) and the live runner (:mod:`runner`).
"""
