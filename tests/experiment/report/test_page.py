"""report.html as the template renders it: escaping, the run's metadata, outcomes in words, the rule's markup."""

import re
from html.parser import HTMLParser

import pytest
from hypothesis import given
from hypothesis import strategies as st
from markupsafe import escape

from retrystorm.experiment.report import ranking
from retrystorm.experiment.report.markup import to_html, to_plain
from retrystorm.experiment.report.model_fit import fit_rows
from retrystorm.experiment.report.page import Image, render
from retrystorm.experiment.scenario import Assertions
from tests.experiment.report.conftest import PNG_MAGIC, curves, document, parse, result, words

SCRIPT = "<script>alert(1)</script>"
AMPERSAND = "a&b"
RUN = {
    "scenario": "tiny",
    "seed": 3,
    "stack": "local processes (retrystorm target + headless Locust, SIGSTOP/SIGCONT)",
    "folder": "runs/tiny-20260101T000000Z",
    "strategies": {
        AMPERSAND: {
            "target": "retrystorm target on http://127.0.0.1:36101 (pid 27930)",
            "load": "headless Locust (pid 27933)",
            "started_utc": "2026-01-01T00:00:00.000+00:00",
            "ended_utc": "2026-01-01T00:00:40.500+00:00",
        }
    },
}


def page(doc, images=()) -> str:
    """The page of ``doc`` without plots (the template alone, as write_report renders it)."""
    return render(doc, list(images), {}, rule=ranking.__doc__ or "")


def runs(*labels, assertions=None):
    return [result(curves(label, server_back_s=None, users_back_s=None), assertions=assertions) for label in labels]


class Definitions(HTMLParser):
    """Each ``dt`` of the page with its ``dd``'s own text ('' when a list nests there) and the lists' depth."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.found: list[tuple[int, str, str]] = []
        self.term: list[str] | None = None
        self.definition: list[str] | None = None
        self.last_term = ""

    def handle_starttag(self, tag, attrs):
        if tag == "dl":
            if self.definition is not None:  # a list nested in a definition
                self.found.append((self.depth, self.last_term, ""))
                self.definition = None
            self.depth += 1
        elif tag == "dt":
            self.term = []
        elif tag == "dd":
            self.definition = []

    def handle_endtag(self, tag):
        if tag == "dl":
            self.depth -= 1
        elif tag == "dt" and self.term is not None:
            self.last_term, self.term = " ".join("".join(self.term).split()), None
        elif tag == "dd" and self.definition is not None:
            self.found.append((self.depth, self.last_term, " ".join("".join(self.definition).split())))
            self.definition = None

    def handle_data(self, data):
        for part in (self.term, self.definition):
            if part is not None:
                part.append(data)


def definitions(text: str) -> list[tuple[int, str, str]]:
    parser = Definitions()
    parser.feed(text)
    return parser.found


def test_template_escapes_every_label():
    doc = document(*runs(SCRIPT, AMPERSAND), description=f"{SCRIPT} & more", run=RUN)
    text = page(doc, [Image(f"{SCRIPT}: live; outages shaded", PNG_MAGIC)])
    assert "<script" not in text.lower()
    assert "script" not in parse(text).tags
    assert str(escape(SCRIPT)) in text and "a&amp;b" in text
    assert AMPERSAND not in text  # every "a&b" reached the page escaped
    assert text.count(str(escape(SCRIPT))) >= 5  # title of its verdicts, figures, headline, caption, alt, details
    reader = words(text)
    assert f"{SCRIPT}: live; outages shaded" in reader and f"{AMPERSAND}: every figure" in reader


def test_run_metadata_is_a_definition_list_not_json():
    text = page(document(*runs("fixed"), run=RUN))
    found = definitions(text)
    assert (1, "scenario", "tiny") in found and (1, "seed", "3") in found
    assert (1, "ran on", RUN["stack"]) in found and (1, "folder", "runs/tiny-20260101T000000Z") in found
    assert (1, "strategies", "") in found and (2, AMPERSAND, "") in found
    assert (3, "target", "retrystorm target on http://127.0.0.1:36101 (pid 27930)") in found
    assert (3, "started (UTC)", "2026-01-01 00:00:00") in found
    assert (3, "ended (UTC)", "2026-01-01 00:00:40.500") in found
    reader = words(text)
    assert "{" not in reader and '"scenario"' not in reader and "started_utc" not in reader


@pytest.mark.parametrize(
    ("ok", "findings", "expected", "css"),
    [
        (True, None, "every assertion held", "pass"),
        (False, None, "not every assertion held: see the verdicts", "fail"),
        (True, [{"text": "fixed never recovers", "holds": True}], "every assertion and every finding held", "pass"),
    ],
)
def test_outcome_reads_in_words(ok, findings, expected, css):
    extra = {"ok": ok, "findings": findings} if findings else {"ok": ok}
    text = page(document(*runs("fixed", assertions=Assertions(server_recovers_within="never")), **extra))
    assert (1, "outcome", expected) in definitions(text)
    assert f'<dd class="{css}">{expected}</dd>' in text
    assert not re.search(r"\b(ok|true|false)\b", words(text))


def test_outcome_is_left_out_when_nothing_was_checked():
    text = page(document(*runs("fixed"), ok=True))
    assert all(term != "outcome" for _, term, _ in definitions(text))
    assert not re.search(r"\b(ok|true)\b", words(text))


def test_every_figure_of_a_strategy_reads_in_words():
    (run,) = runs("fixed", assertions=Assertions(server_recovers_within="never"))
    doc = document(run)
    doc["results"][0]["readings_missed"] = {"target": 5, "client": 0}
    found = definitions(page(doc))
    assert (1, "assertions", "every one held") in found
    assert (1, "outages (pause to resume)", "30s to 50s") in found
    assert (1, "readings missed", "target 5, client 0") in found
    assert (1, "latency max", "3s") in found and (1, "strategy spec", "exponential:base=100ms") in found
    assert not any(re.search(r"[\[\]{}]|\b(true|false)\b", text) for _, _, text in found)


def test_simulated_results_and_curve_differences_are_tables_not_json():
    live, model = curves("fixed", server_back_s=8.0), curves("fixed", server_back_s=5.0)
    (run,) = [result(live)]
    compared = {"curves": {"goodput": {"mean_abs_diff": 7.224396, "live_mean": 44.064195, "seconds": 30}}}
    doc = document(run, simulated={"results": [result(model).to_json()], "compared": {"fixed": compared}})
    text = render(doc, [], {"fixed": fit_rows(live, model)}, rule="")
    reader = words(text)
    assert "Simulated figures" in reader and "fixed 13,000 10,000 9,500" in reader
    assert "goodput (req/s) 7.2 44.1 30" in reader and "server recovery 8s 5s -3s" in reader
    assert "{" not in reader and "mean_abs_diff" not in reader


def test_a_recovery_not_seen_is_measured_never():
    flapping = curves("flap", outages=((20.0, 25.0), (60.0, 65.0)), server_back_s=3.0, users_back_s=None)
    single = curves("stuck", server_back_s=None, users_back_s=None)
    doc = document(
        result(flapping, assertions=Assertions(client_recovers_within=30)),
        result(single, assertions=Assertions(server_recovers_within=15)),
    )
    assert doc["results"][1]["assertions"][0]["measured"] is None
    reader = words(page(doc))
    assert "client_recovers_within never, never 30s FAIL" in reader
    assert "server_recovers_within never 15s FAIL" in reader
    assert "none" not in reader.lower().split()


def test_ranking_rule_is_rendered_not_shown_as_markup():
    text = page(document(*runs("fixed")))
    rule = text[text.index('<h2 id="rule">') :]
    assert "<strong>Ranking rule.</strong>" in rule
    assert "<code>client_recovers_within: never</code>" in rule
    assert "<em>server</em>" in rule
    assert rule.count("<li>") == 7 and "<ol>" in rule
    assert "**" not in text and "``" not in text


def test_markup_escapes_the_text_before_adding_tags():
    html = to_html("**<b>bold</b>** & ``<i>x</i>``, *<script>* and 2 * 3\n\n- one\n  two\n- `<u>`")
    assert html == (
        "<p><strong>&lt;b&gt;bold&lt;/b&gt;</strong> &amp; <code>&lt;i&gt;x&lt;/i&gt;</code>, "
        "<em>&lt;script&gt;</em> and 2 * 3</p>\n<ul><li>one two</li><li><code>&lt;u&gt;</code></li></ul>"
    )


ALLOWED = {"p", "ol", "ul", "li", "strong", "em", "code"}


@given(st.text(alphabet=st.sampled_from(list("ab <>&\"'*`-1.\n/=")), max_size=80))
def test_markup_adds_only_its_own_tags(text):
    page = parse(str(to_html(text)))
    assert set(page.tags) <= ALLOWED
    assert "".join(page.text).replace(" ", "").count("<") == text.replace(" ", "").count("<")


def test_plain_text_of_the_rule_has_no_markup():
    plain = to_plain(ranking.__doc__ or "")
    assert "*" not in plain and "`" not in plain
    assert "Ranking rule. Strategies are sorted by these keys, each deciding only when all earlier ones tie:" in plain
    assert "\n1. outages after which the server recovered (more is better): a service that stays down" in plain
    assert "(client_recovers_within: never)" in plain
