"""Scripts of our own on Locust's web UI page: one ``<script src=... defer>`` each, before ``</body>``.

Locust's page is its React app; a tab or a form of ours is drawn by a script of its own
that the page loads after the app (:mod:`retrystorm.loadgen.chaos_tab`, :mod:`retrystorm.loadgen.storm_view`,
:mod:`retrystorm.loadgen.start_form`). One ``after_request`` hook per app adds every registered tag
to the index page, in the order they were added.
"""

from __future__ import annotations

from typing import Any

from flask import Response, request

_KEY = "retrystorm_page_scripts"


def script_tag(src: str) -> bytes:
    """The tag that loads ``src`` after the page is parsed."""
    return f'<script src="{src}" defer></script>'.encode()


def add_page_script(app: Any, src: str) -> None:
    """Load the script at ``src`` (a path of this app) on Locust's index page."""
    scripts: list[str] | None = app.extensions.get(_KEY)
    if scripts is None:
        scripts = app.extensions[_KEY] = []

        @app.after_request  # type: ignore[untyped-decorator]
        def load_scripts(response: Response) -> Response:
            page_html = response.mimetype == "text/html" and not response.direct_passthrough
            if request.endpoint == "locust.index" and page_html:
                page = response.get_data()
                tags = b"".join(script_tag(path) for path in app.extensions[_KEY] if script_tag(path) not in page)
                response.set_data(page.replace(b"</body>", tags + b"</body>", 1))
            return response

    if src not in scripts:
        scripts.append(src)
