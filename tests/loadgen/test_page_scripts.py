"""Scripts of our own on Locust's page: each tag once, in order, on the index page only."""

from flask import Flask, render_template_string

from retrystorm.loadgen.page_scripts import add_page_script


def test_page_scripts_are_added_once_each_in_order_before_the_body_ends():
    app = Flask(__name__)

    @app.route("/", endpoint="locust.index")
    def index() -> str:
        return render_template_string("<html><body><div id=root></div></body></html>")

    @app.route("/other")
    def other() -> str:
        return "<html><body></body></html>"

    for src in ("/a.js", "/b.js", "/a.js"):
        add_page_script(app, src)
    client = app.test_client()
    page = client.get("/").get_data(as_text=True)
    assert page.endswith('<script src="/a.js" defer></script><script src="/b.js" defer></script></body></html>')
    assert "script" not in client.get("/other").get_data(as_text=True)
