"""``retrystorm sim run SCENARIO --out DIR`` writes the run report a live run writes: report.html and its PNGs."""

import base64
import json
import textwrap

from click.testing import CliRunner

from retrystorm.sim.cli import sim
from tests.experiment.report.conftest import parse, words

TINY = textwrap.dedent(
    """\
    name: tiny
    seed: 5
    model: exponential:limit=6,k=3
    load: {users: 40, think_time: exponential:2s, attempt_timeout: 1s, duration: 30s}
    strategies:
      - fixed:100ms
      - {label: "a<b>&c", strategy: exponential}
    faults: [{at: 10s, for: 5s}]
    assertions:
      fixed:100ms: {server_recovers_within: never}
    """
)


def test_sim_run_out_writes_report_html(tmp_path):
    scenario, folder = tmp_path / "tiny.yaml", tmp_path / "out"
    scenario.write_text(TINY)
    outcome = CliRunner().invoke(sim, ["run", str(scenario), "--out", str(folder)])
    assert outcome.exit_code == 0, outcome.output
    names = {path.name for path in folder.iterdir()}
    assert {"report.html", "comparison.png", "requests.png", "timeseries.png", "results.json"} <= names
    assert {"strategy-1-fixed-100ms.png", "strategy-2-a-b-c.png"} <= names
    text = (folder / "report.html").read_text(encoding="utf-8")
    page = parse(text)
    assert "b" not in page.tags and "a&lt;b&gt;&amp;c" in text  # the label, escaped
    embedded = [base64.b64decode(src.removeprefix("data:image/png;base64,")) for src in page.images]
    assert len(embedded) == 4  # comparison, one per strategy, requests.png
    assert (folder / "requests.png").read_bytes() in embedded and (folder / "comparison.png").read_bytes() in embedded
    reader = words(text)  # fixed 100 ms retries never bring this small server back, exponential backoff does
    assert "a<b>&c wins" in reader and "fixed:100ms never came back" in reader
    assert "server_recovers_within never never expected failure, confirmed" in reader
    assert "outcome every assertion held" in reader
    assert "ran on the simulator, in virtual time" in reader and "seed 5" in reader
    assert "fixed:100ms: simulated; outages shaded" in reader
    assert "Simulation beside the live run" not in reader  # nothing live to set it beside
    assert "run" not in json.loads((folder / "results.json").read_text())  # the --json document, as before
