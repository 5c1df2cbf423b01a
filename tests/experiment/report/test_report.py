"""The run report: files, page, ranking, simulated curves, file names."""

import base64
import dataclasses
import re

import pytest
from markupsafe import escape

from retrystorm.experiment.report import StrategyCurves, write_report
from retrystorm.experiment.report.plots import comparison_figure, png_bytes, strategy_figure
from retrystorm.experiment.report.ranking import headline, rank
from retrystorm.experiment.report.write import strategy_file_name
from retrystorm.experiment.scenario import Assertions
from tests.experiment.report.conftest import curves, document, parse, png_size, result, words

ODD = 'fixed:delay=100ms,<b>"x"</b>&y'
EXPO = "exponential:base=100ms,factor=2.718"
ASSERT_ODD = Assertions(server_recovers_within="never", max_amplification=3)
ASSERT_EXPO = Assertions(server_recovers_within=15, client_recovers_within=60, max_peak_in_flight=6000)


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory):
    """The seed's headline: fixed never recovers, exponential does; the simulation given for both."""
    live = [
        curves(ODD, server_back_s=None, users_back_s=None),
        curves(EXPO, server_back_s=6.0, users_back_s=41.0),
    ]
    simulated = [
        curves(ODD, server_back_s=None, users_back_s=None, stuck_in_flight=7800.0),
        curves(EXPO, server_back_s=4.0, users_back_s=30.0),
    ]
    runs = [
        result(live[0], attempts=120_000, succeeded=4_000, assertions=ASSERT_ODD),
        result(live[1], assertions=ASSERT_EXPO),
    ]
    doc = document(*runs, description="The seed <outage> & its retries", seed=7, started_utc="2025-01-01T00:00:00Z")
    folder = tmp_path_factory.mktemp("run")
    paths = write_report(folder, doc, live, simulated)
    return folder, paths, doc, (folder / "report.html").read_text(encoding="utf-8")


# --- tests ------------------------------------------------------------------------------------------


def test_the_file_set_is_written(seed_run):
    folder, paths, _, _ = seed_run
    names = [path.name for path in paths]
    assert names[-2:] == ["comparison.png", "report.html"]
    assert len(names) == 4
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)
    for path in paths[:-1]:
        assert png_size(path.read_bytes()) in ((1100, 1000), (1100, 800))


def test_page_parses_escapes_labels_and_embeds_every_png(seed_run):
    _, paths, _, text = seed_run
    page = parse(text)
    assert "script" not in page.tags and "link" not in page.tags and "b" not in page.tags  # the label's <b> escaped
    assert escape(ODD) in text and escape(EXPO) in text  # as the template's autoescaping writes them
    assert "<outage>" not in text and escape("The seed <outage> & its retries") in text
    joined = "".join(page.text)
    assert ODD in joined  # shown to the reader exactly as written
    assert "http://" not in text and "https://" not in text
    assert len(page.images) == 3
    embedded = [base64.b64decode(src.removeprefix("data:image/png;base64,"), validate=True) for src in page.images]
    assert all(src.startswith("data:image/png;base64,") for src in page.images)
    assert sorted(embedded) == sorted(path.read_bytes() for path in paths[:-1])
    assert png_size(embedded[0]) == (1100, 800)  # the comparison comes first


def test_page_shows_winner_verdicts_and_figures(seed_run):
    _, _, doc, text = seed_run
    page = words(text)
    assert f"{EXPO} wins" in page
    assert "Decided by server recoveries: 1 of 1 against 0 of 1" in page
    assert f"{EXPO} wins: its server came back 6s after the resume" in page
    assert f"{EXPO} came back: the server 6s after the resume" in page
    assert "its users had their goodput back 41s after the resume" in page
    assert "never came back: after the resume its users offered" in page and "12×" in page
    expo, odd = doc["results"][1], doc["results"][0]
    assert expo["server_recovery_s"] == 6.0 and expo["client_recovery_s"] == 41.0
    assert odd["passed"] is False and expo["passed"] is True
    # each verdict: measured beside the bound, the failed one marked
    assert "max_amplification 12× 3× FAIL" in page
    assert "server_recovers_within never never expected failure, confirmed" in page
    assert "max_peak_in_flight 5,000 6,000 pass" in page
    assert "1 of 5 assertions failed" in page
    assert text.count('class="failed"') == 1
    # figures table: success ratio, p99, peak, recoveries
    assert "40.0 %" in page and "95.0 %" in page and "5,000" in page and "never" in page
    assert "seed 7" in page and "started (UTC) 2025-01-01 00:00:00" in page


def test_simulation_fit_is_tabulated(seed_run):
    _, _, _, text = seed_run
    page = words(text)
    assert "Simulation beside the live run" in page
    assert "server recovery 6s 4s -2s" in page and "client recovery 41s 30s -11s" in page
    assert "peak in flight 5,000 7,800 ×1.56" in page


def test_simulated_curves_are_drawn_dashed_only_when_given():
    live, sim = curves("a"), curves("a", server_back_s=3.0)
    with_sim, without = strategy_figure(live, sim), strategy_figure(live)
    assert [len(axis.get_lines()) for axis in with_sim.axes] == [2, 2, 2, 2]
    assert [len(axis.get_lines()) for axis in without.axes] == [1, 1, 1, 1]
    assert {line.get_linestyle() for line in with_sim.axes[0].get_lines()} == {"-", "--"}
    assert [len(axis.patches) for axis in without.axes] == [1, 1, 1, 1]  # the outage shaded


def test_unmatched_simulation_is_not_drawn_and_no_fit_without_it(tmp_path):
    live = [curves("a", outages=())]
    doc = document(result(live[0]))
    write_report(tmp_path, doc, live, [curves("other")])
    text = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Simulation beside the live run" not in text
    assert "a: live; outages shaded" in text


def test_comparison_overlays_every_strategy():
    figure = comparison_figure([curves("a"), curves("b"), curves("c")], "t")
    assert [len(axis.get_lines()) for axis in figure.axes] == [3, 3, 3]
    assert [line.get_label() for line in figure.axes[0].get_lines()] == ["a", "b", "c"]


def test_png_output_is_deterministic():
    entry = curves("a")
    assert png_bytes(strategy_figure(entry)) == png_bytes(strategy_figure(entry))


@pytest.mark.parametrize(
    ("label", "expected"),
    [
        ("exponential:base=100ms,factor=2", "strategy-1-exponential-base-100ms-factor-2.png"),
        ("../../etc/passwd", "strategy-1-etc-passwd.png"),
        (":::=,,", "strategy-1.png"),
        ("Fixed 100ms", "strategy-1-Fixed-100ms.png"),
        ("é" * 5 + "x" * 100, "strategy-1-" + "x" * 60 + ".png"),
    ],
)
def test_file_names_are_safe(label, expected):
    name = strategy_file_name(1, label)
    assert name == expected
    assert re.fullmatch(r"[A-Za-z0-9._-]+", name) and not name.startswith(".")


def test_colliding_labels_get_their_own_files(tmp_path):
    live = [curves("x:y", outages=()), curves("x=y", outages=()), curves("X:Y", outages=())]
    doc = document(*(result(entry) for entry in live))
    paths = write_report(tmp_path, doc, live)
    assert len({path.name.lower() for path in paths}) == 5
    assert all(path.parent == tmp_path for path in paths)


@pytest.mark.parametrize("reverse", [False, True])
def test_ranking_server_recovery_first(reverse):
    a = result(curves("stuck", server_back_s=None, users_back_s=None), attempts=10_100)
    b = result(curves("backoff", server_back_s=20.0, users_back_s=50.0), attempts=30_000)
    ranked = rank(document(*([b, a] if reverse else [a, b])))
    assert [s.label for s in ranked] == ["backoff", "stuck"]


def test_ranking_then_user_recovery_then_amplification():
    fast = result(curves("fast-users", server_back_s=8.0, users_back_s=10.0), attempts=20_000)
    slow = result(curves("slow-users", server_back_s=2.0, users_back_s=40.0), attempts=11_000)
    top = headline(document(slow, fast))
    assert top.title == "fast-users wins"
    assert top.reason == "Decided by user recovery time: 10s against 40s for slow-users."
    lean = result(curves("lean", outages=()), attempts=10_200)
    heavy = result(curves("heavy", outages=()), attempts=12_000)
    top = headline(document(heavy, lean))
    assert top.title == "lean wins" and "amplification" in top.reason
    assert "p99" in top.lines[0][1]


def test_ranking_ties_and_single_strategy():
    one, two = result(curves("one", outages=())), result(curves("two", outages=()))
    assert headline(document(one, two)).title == "No clear winner: one, two tie"
    assert headline(document(one)).title == "one: the only strategy run"


def test_several_outages_and_missing_values(tmp_path):
    flapping = curves("flap", outages=((20.0, 25.0), (60.0, 65.0)), server_back_s=3.0, users_back_s=None)
    empty = curves("idle", outages=())
    doc = document(
        result(flapping, assertions=Assertions(server_recovers_within=5)),
        result(empty, attempts=0, requests=0, succeeded=0, latencies=()),
    )
    row = doc["results"][0]
    assert row["server_recovery_s"] == [3.0, 3.0] and row["client_recovery_s"] == [None, None]
    paths = write_report(tmp_path, doc, [flapping, empty])
    page = words(paths[-1].read_text(encoding="utf-8"))
    assert "flap came back after each of 2 outages: the server 3s after the resume" in page
    assert "its users never got 90 % of their goodput back within the run" in page
    assert "server_recovers_within 3s, 3s 5s pass" in page
    assert "never, never" in page and "no outage" in page and "—" in page
    assert "flap wins" in page


def test_curves_round_trip_through_samples():
    entry = curves("a")
    again = StrategyCurves.from_samples("a", entry.samples(), entry.recovery_outages())
    assert again.times_s == entry.times_s and again.in_flight == entry.in_flight
    assert again.outages == entry.outages
    with pytest.raises(ValueError, match="differ in length"):
        StrategyCurves("b", [1.0], [], [], [], [], [])


def test_fit_uses_the_exact_simulated_peak_when_the_curves_carry_one():
    from retrystorm.experiment.report.model_fit import fit_rows

    live = curves("a", server_back_s=3.0)
    sim = dataclasses.replace(curves("a", server_back_s=3.0), peak_in_flight=410.0)
    rows = {row.figure: row for row in fit_rows(live, sim)}
    assert (rows["peak in flight"].live, rows["peak in flight"].simulated) == ("5,000", "410")
    assert rows["peak in flight"].off == "×0.08"


@pytest.mark.parametrize("outages", [((30.0, 50.0),), ()])
def test_log_panels_are_labelled_in_plain_numbers(outages):
    """In flight (symlog) and delay (log): 10 and 0.1, not powers of ten; a flat delay still shows two labels."""
    figure = strategy_figure(curves("a", outages=outages, server_back_s=None))
    figure.draw_without_rendering()
    for axis in figure.axes[2:]:
        shown = [label.get_text() for label in axis.get_yticklabels(which="both") if label.get_text()]
        assert len(shown) >= 2
        assert all(re.fullmatch(r"[\d,.]+", text) for text in shown), shown
