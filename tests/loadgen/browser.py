"""Headless Chromium (Debian's ``chromium``) driven over the DevTools protocol, for web UI tests.

Clicks are real mouse events at an element's centre and typing is real text input, so a
page's own event handlers run as they do for a person. The protocol goes over a
WebSocket on loopback (aiohttp's client); the browser is one of the test's processes,
stopped by its pid.
"""

from __future__ import annotations

import itertools
import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import aiohttp

from tests.support.waiting import wait_until, wait_until_async

#: The flags of shared/docs/environment.md plus a DevTools port chosen by the browser.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--window-size=1300,800",
)


def chromium_path() -> str | None:
    return shutil.which("chromium")


def chromium_argv(profile: Path) -> list[str]:
    return [chromium_path() or "chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"]


def devtools_page_url(profile: Path, timeout_s: float = 60.0) -> str:
    """The WebSocket address of the browser's first page, once its DevTools server is up."""
    port_file = profile / "DevToolsActivePort"

    def first_page() -> str | None:
        if not (port_file.exists() and (lines := port_file.read_text().splitlines())):
            return None
        with urllib.request.urlopen(f"http://127.0.0.1:{int(lines[0])}/json/list", timeout=5) as response:
            pages = [t for t in json.loads(response.read()) if t.get("type") == "page"]
        return str(pages[0]["webSocketDebuggerUrl"]) if pages else None

    return wait_until(first_page, timeout_s=timeout_s, what="Chromium's DevTools to come up", every_s=0.1)


class Page:
    """One browser page: navigate, evaluate, click, type, wait."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket
        self.ids = itertools.count(1)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        """One protocol command; events that arrive meanwhile are skipped."""
        message_id = next(self.ids)
        await self.socket.send_json({"id": message_id, "method": method, "params": params})
        while True:
            message = await self.socket.receive_json(timeout=30)
            if message.get("id") == message_id:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                return dict(message.get("result", {}))

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, what: str, timeout_s: float = 30.0) -> Any:
        """Poll ``expression`` until it is truthy; fail naming ``what``."""
        return await wait_until_async(lambda: self.evaluate(expression), timeout_s=timeout_s, what=what, every_s=0.1)

    async def click(self, selector: str) -> None:
        """A left click with the mouse at the centre of the element ``selector`` matches.

        The field that has the focus is blurred first (the browser may still be scrolling to a
        field that was just typed into, and would move the page under the mouse), the element
        is scrolled into view, and the click waits until the element lies still for a few
        frames and is itself what lies under that point. Without the wait, one start-form
        click in about eight landed on another field while the page scrolled.
        """
        box = await self.wait_for(
            f"(async () => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " if (document.activeElement && document.activeElement !== e) document.activeElement.blur();"
            " e.scrollIntoView({block: 'center', behavior: 'instant'});"
            " const frames = (n) => (async () => { for (let i = 0; i < n; i++)"
            " await new Promise((done) => requestAnimationFrame(done)); })();"
            " await frames(2); const before = e.getBoundingClientRect(); const scrolled = window.scrollY;"
            " await frames(4); const r = e.getBoundingClientRect();"
            " if (r.x !== before.x || r.y !== before.y || window.scrollY !== scrolled) return null;"
            " const x = r.x + r.width / 2, y = r.y + r.height / 2;"
            " const hit = document.elementFromPoint(x, y);"
            " return hit && (hit === e || e.contains(hit)) ? {x, y} : null; })()",
            f"{selector} to be on the page, still, under the mouse",
        )
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            await self.send("Input.dispatchMouseEvent", type=kind, x=box["x"], y=box["y"], button="left", clickCount=1)

    async def type_into(self, selector: str, text: str) -> None:
        """Replace the text of the input ``selector`` matches, as typing would."""
        await self.wait_for(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false;"
            " e.focus(); e.select(); return true; })()",
            f"{selector} to take the focus",
        )
        await self.send("Input.insertText", text=text)
