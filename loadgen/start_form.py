"""The start form's retrystorm fields, readable and easy to find.

How Locust's React form shows a plugin's options ("Custom parameters"): each field's
label is ``Name (help)`` on one line, and MUI's outlined label is ``white-space: nowrap;
text-overflow: ellipsis`` at the field's width, so a long help ends in "…"; the fields
come in alphabetical order (the page's JSON has sorted keys), so the retry strategy sits
near the end; and the section is an accordion that starts collapsed, with no option to
open it (Locust renders it without ``defaultExpanded``). So:

* server-side, the help of every text or choice field leaves its label (the name
  stays) and goes into ``templateArgs.retrystorm_form`` with the fields' order
  (:data:`retrystorm.loadgen.options.OPTIONS`, the strategy first) and the strategy choices;
  checkbox labels wrap, so they keep their help;
* ``start_form.js`` shows each help in full on a line under its field (and as the
  field's ``title``), puts the fields in that order, gives the strategy field a list of
  the strategy families and client presets beside its free text, and opens "Custom
  parameters" once each time the form appears.

Nothing here changes what the form sends: the script adds nodes without a ``name``.
"""

from __future__ import annotations

import inspect
from importlib import resources
from typing import Any

from flask import Response, before_render_template

from retrystorm.loadgen.options import DEFAULT_STRATEGY, FLAG_DESTS, OPTIONS
from retrystorm.loadgen.page_scripts import add_page_script
from retrystorm.loadgen.strategies import STRATEGIES

SCRIPT_SRC = "/storm/form.js"
#: The key of the form's data in the page's ``templateArgs``.
FORM_KEY = "retrystorm_form"
_SUMMARY_CHARS = 90


def _summary(cls: type) -> str:
    text = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ").replace("``", "")
    return text if len(text) <= _SUMMARY_CHARS else text[: _SUMMARY_CHARS - 1].rstrip() + "…"


def strategy_choices() -> list[dict[str, str]]:
    """The strategy field's choices: the default spec, every family, every client preset.

    Each is ``{"name", "spec", "group", "summary"}``; a family's spec spells out its
    parameters at their defaults, to be edited in the field; a preset's is its name (the
    library's defaults, as ``--retry-preset`` gives them, without a long list to edit).
    """
    choices = [{"name": "default", "spec": DEFAULT_STRATEGY, "group": "default", "summary": "the seed's backoff"}]
    for name, cls in STRATEGIES.items():
        group = "preset" if getattr(cls, "is_preset", False) else "family"
        spec = name if group == "preset" else STRATEGIES.parse(name).spec()
        choices.append({"name": name, "spec": spec, "group": group, "summary": _summary(cls)})
    return choices


def field_order() -> list[str]:
    """The fields' order in the form: the options as :mod:`retrystorm.loadgen.options` lists them, then the switches."""
    return [option.dest for option in OPTIONS] + list(FLAG_DESTS)


def readable_form(extra_options: dict[str, dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Locust's ``extra_options`` with the help out of text and choice labels, and the form's data."""
    fields: dict[str, dict[str, Any]] = {}
    help_texts: dict[str, str] = {}
    for dest, field in extra_options.items():
        help_text = field.get("help_text") or ""
        wraps = isinstance(field.get("default_value"), bool)  # a checkbox's label wraps
        if help_text and not wraps:
            help_texts[dest] = help_text
        fields[dest] = {**field, "help_text": ""} if dest in help_texts else field
    data = {"help": help_texts, "order": field_order(), "strategies": strategy_choices()}
    return fields, data


def _on_render(_app: Any, template: Any, context: dict[str, Any], **_: Any) -> None:
    """``before_render_template``: adjust the index page's template arguments (a copy of them)."""
    args = context.get("template_args")
    if getattr(template, "name", None) != "index.html" or not isinstance(args, dict):
        return
    fields, data = readable_form(args.get("extra_options") or {})
    context["template_args"] = {**args, "extra_options": fields, FORM_KEY: data}


def add_start_form(web_ui: Any) -> None:
    """Make the start form's retrystorm fields readable (see the module's docstring)."""
    app = web_ui.app
    before_render_template.connect(_on_render, app)  # a module function: blinker keeps a weak reference

    @app.route(SCRIPT_SRC)  # type: ignore[untyped-decorator]
    def start_form_script() -> Response:
        script = resources.files("retrystorm.loadgen").joinpath("start_form.js").read_bytes()
        return Response(script, mimetype="text/javascript")

    add_page_script(app, SCRIPT_SRC)
