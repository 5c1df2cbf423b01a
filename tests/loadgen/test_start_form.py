"""The start form's data: help out of the labels that cut it, the fields' order, the strategy choices."""

from retrystorm.loadgen.options import DEFAULT_STRATEGY, FLAG_DESTS, OPTIONS, load_options
from retrystorm.loadgen.start_form import FORM_KEY, _on_render, field_order, readable_form, strategy_choices
from retrystorm.loadgen.strategies import STRATEGIES

LONG_HELP = "Retry strategy spec: none, fixed:100ms, uniform, exponential:base=..,factor=.. (`retrystorm strategies`)."


def extra_options() -> dict:
    return {
        "retry_strategy": {"default_value": DEFAULT_STRATEGY, "help_text": LONG_HELP, "choices": None},
        "arrival": {"default_value": "closed", "help_text": "closed or open.", "choices": ["closed", "open"]},
        "keep_backoff": {"default_value": False, "help_text": "Keep the retry counter.", "choices": None},
        "no_help": {"default_value": "x", "help_text": None, "choices": None},
    }


def test_text_and_choice_labels_lose_their_help_to_the_line_under_the_field():
    fields, data = readable_form(extra_options())
    assert fields["retry_strategy"]["help_text"] == ""
    assert fields["retry_strategy"]["default_value"] == DEFAULT_STRATEGY
    assert fields["arrival"] == {**extra_options()["arrival"], "help_text": ""}
    assert fields["keep_backoff"]["help_text"] == "Keep the retry counter."  # a checkbox's label wraps
    assert fields["no_help"] == extra_options()["no_help"]
    assert data["help"] == {"retry_strategy": LONG_HELP, "arrival": "closed or open."}


def test_the_strategy_comes_first_then_the_options_in_their_order_then_the_switches():
    order = field_order()
    assert order[0] == "retry_strategy"
    assert order == [option.dest for option in OPTIONS] + list(FLAG_DESTS)


def test_every_choice_is_a_strategy_the_form_accepts():
    choices = strategy_choices()
    default = {"name": "default", "spec": DEFAULT_STRATEGY, "group": "default", "summary": "the seed's backoff"}
    assert choices[0] == default
    assert [c["name"] for c in choices[1:]] == STRATEGIES.names()
    for choice in choices:
        options = load_options({"retry_strategy": choice["spec"]})
        assert options.strategy_name == (choice["name"] if choice["group"] != "default" else "exponential")
        assert choice["summary"]
        assert len(choice["summary"]) <= 90
    assert {"name": "fixed", "spec": "fixed:100ms"}.items() <= next(c for c in choices if c["name"] == "fixed").items()


def test_the_index_template_gets_the_forms_data_and_other_templates_nothing():
    class Template:
        def __init__(self, name: str) -> None:
            self.name = name

    args = {"extra_options": extra_options(), "locustfile": "x.py"}
    context = {"template_args": args}
    _on_render(None, Template("index.html"), context)
    assert context["template_args"][FORM_KEY]["help"]["retry_strategy"] == LONG_HELP
    assert context["template_args"]["extra_options"]["retry_strategy"]["help_text"] == ""
    assert args["extra_options"]["retry_strategy"]["help_text"] == LONG_HELP  # Locust's own copy is left alone
    other = {"template_args": args}
    _on_render(None, Template("report.html"), other)
    assert other == {"template_args": args}
