"""Run the shell snippets of the Get started, Concepts, Guides and Safety pages, so a renamed flag breaks the build.

``python scripts/docs/snippets.py [PAGE...]`` runs every page's snippets (default: the shell snippets of every
page of ``get-started/``, ``concepts/``, ``guides/`` and ``safety/``, and the scenarios of every page) and prints,
for each one that fails, ``docs/PAGE.md:LINE: ...`` with its output's last lines; it exits 1 if any failed.
``--list`` prints what would run.

A fenced block whose info string is ``sh`` runs as written unless the HTML comment on the line above it says
otherwise (it is invisible in the rendered page):

* ``<!-- docs-test: skip REASON -->``: not run (a Docker engine, a registry, a Grafana, minutes of live load);
  the reason is required.
* ``<!-- docs-test: instead COMMAND -->``: ``COMMAND`` runs in its place, a shortened equivalent (``--dry-run``,
  a shorter run, fewer cells).
* ``<!-- docs-test: serve URL... -->``: the block starts servers; it passes once every URL answers, and is then
  stopped.
* ``<!-- docs-test: scenario -->`` above a ``yaml`` block: the block is a scenario, validated by the loader.

A page's blocks run in order in one shell, in a scratch folder that links the repository's folders (so
``loadgen/locustfile.py`` and ``examples/`` resolve), with the interpreter's ``bin`` first on ``PATH``, in a network
namespace of its own: its servers listen on the documented ports (8070, 8071, 8089...) of a loopback no one
else uses, and nothing outlives the page. ``docs_serve SERVER URL [COMMAND]`` (a shell function) starts
``SERVER``, waits until ``URL`` answers, runs ``COMMAND`` if given, then stops the server.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import docsite

#: The pages whose snippets run (paths under docs/, by prefix).
RUN_UNDER = ("get-started/", "concepts/", "guides/", "safety/")
DIRECTIVES = ("skip", "instead", "serve", "scenario")
#: Seconds a page's snippets may take in all before the page fails.
PAGE_TIMEOUT_S = 900
_MARK = "@@docs-test"


class SnippetError(Exception):
    """A page's snippet cannot be read: an unknown directive, a skip without a reason."""


@dataclasses.dataclass(frozen=True, slots=True)
class Snippet:
    """One block of a page: where it is, what runs (``None``: skipped, with ``reason``), how."""

    page: str
    line: int
    kind: str
    command: str | None
    reason: str = ""
    urls: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def pages(docs: Path = docsite.DOCS) -> list[str]:
    """Every page (path under ``docs/``), own pages and stand-ins alike, that has a snippet to check."""
    found = set()
    for root in (docs, docs / docsite.INTERIM):
        for path in root.rglob("*.md"):
            relative = path.relative_to(root).as_posix()
            if relative.split("/")[0] != docsite.INTERIM and snippets(relative, docs):
                found.add(relative)
    return sorted(found)


def snippets(src_uri: str, docs: Path = docsite.DOCS) -> list[Snippet]:
    """The blocks of one page that the test reads: ``yaml`` blocks marked as scenarios on any page, and every ``sh``
    block of the pages under :data:`RUN_UNDER`."""
    source = docsite.page_source(src_uri, docs)
    if source is None:
        raise SnippetError(f"docs/{src_uri}: no such page")
    shown = source.relative_to(docs.parent).as_posix() if source.is_relative_to(docs.parent) else str(source)
    found = []
    for fence in docsite.fences(source.read_text(encoding="utf-8")):
        directive, _, argument = (fence.note or "").removeprefix("docs-test:").strip().partition(" ")
        if fence.note is not None and not fence.note.startswith("docs-test:"):
            directive, argument = "", ""
        language = fence.info.split()[0] if fence.info else ""
        if directive and directive not in DIRECTIVES:
            raise SnippetError(f"{shown}:{fence.line}: unknown docs-test directive {directive!r}; one of {DIRECTIVES}")
        if language == "yaml" and directive == "scenario":
            found.append(Snippet(shown, fence.line, "scenario", fence.text))
        elif language != "sh" or not src_uri.startswith(RUN_UNDER):
            continue
        elif directive == "skip":
            if not argument.strip():
                raise SnippetError(f"{shown}:{fence.line}: docs-test: skip needs a reason")
            found.append(Snippet(shown, fence.line, "skip", None, reason=argument.strip()))
        elif directive == "instead":
            found.append(Snippet(shown, fence.line, "instead", argument.strip(), reason=fence.text))
        elif directive == "serve":
            found.append(Snippet(shown, fence.line, "serve", fence.text, urls=tuple(argument.split())))
        else:
            found.append(Snippet(shown, fence.line, "run", fence.text))
    return found


PRELUDE = r"""
set -u
ip link set lo up 2>/dev/null || true
docs_wait() {  # URL [SECONDS]: until URL answers (any HTTP status), or fail
    python3 - "$1" "${2:-60}" <<'EOF'
import sys, time, urllib.request, urllib.error
url, deadline = sys.argv[1], time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        urllib.request.urlopen(url, timeout=2).close()
        sys.exit(0)
    except urllib.error.HTTPError:
        sys.exit(0)
    except OSError:
        time.sleep(0.2)
sys.exit(f"{url} did not answer")
EOF
}
docs_stop() {  # PID: the process group started for a server
    kill -TERM -- "-$1" 2>/dev/null; for _ in $(seq 50); do kill -0 -- "-$1" 2>/dev/null || return 0; sleep 0.2; done
    kill -KILL -- "-$1" 2>/dev/null; return 0
}
docs_serve() {  # SERVER URL [COMMAND]: start SERVER, wait for URL, run COMMAND, stop SERVER
    setsid bash -c "$1" > "server-$$-$RANDOM.log" 2>&1 &
    local pid=$! status=0
    docs_wait "$2" 60 || { docs_stop "$pid"; return 1; }
    if [ $# -ge 3 ]; then bash -c "$3" || status=$?; fi
    docs_stop "$pid"
    return $status
}
export -f docs_wait docs_stop docs_serve
"""


def page_script(items: list[Snippet]) -> str:
    """The shell script of one page's snippets: each block in order, its status marked for the runner."""
    parts = [PRELUDE]
    for item in items:
        if item.kind in ("skip", "scenario") or item.command is None:
            continue
        if item.kind == "serve":
            waits = " && ".join(f"docs_wait {shlex.quote(url)} 60" for url in item.urls) or "true"
            body = f"docs_serve {shlex.quote(item.command)} {shlex.quote(item.urls[0])} {shlex.quote(waits)}"
        else:
            body = item.command
        block = item.reason if item.kind == "instead" else item.command
        parts.append(
            f"echo '{_MARK} start {item.line}'\n"
            f"export DOCS_BLOCK={shlex.quote(block)}\n"
            f"( set -e -o pipefail\n{body}\n)\n"
            f'echo "{_MARK} end {item.line} $?"\n'
        )
    return "\n".join(parts)


def _isolation() -> list[str]:
    """A network namespace of the page's own: ``unshare --net`` as root, a user namespace otherwise."""
    return ["unshare", "--net"] if os.geteuid() == 0 else ["unshare", "--map-root-user", "--net"]


def isolation_problem() -> str | None:
    """Why a page cannot get a network namespace of its own here (``None`` when it can)."""
    try:
        done = subprocess.run([*_isolation(), "true"], capture_output=True, text=True, timeout=30, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"unshare: {error}"
    return None if done.returncode == 0 else f"unshare: {done.stderr.strip() or done.returncode}"


def _scratch(folder: Path) -> None:
    """Link the repository's top-level folders and files into the page's scratch folder."""
    for entry in docsite.ROOT.iterdir():
        if entry.name.startswith(".") or entry.name in ("runs", "maps", "site"):
            continue
        (folder / entry.name).symlink_to(entry)


def run_page(src_uri: str, docs: Path = docsite.DOCS) -> list[str]:
    """Run one page's snippets; one line per failure (``docs/PAGE.md:LINE: ...``), none when all passed."""
    items = snippets(src_uri, docs)
    failures = [_check_scenario(item) for item in items if item.kind == "scenario"]
    runnable = [item for item in items if item.kind in ("run", "instead", "serve")]
    if runnable:
        failures += _run_shell(runnable)
    return [failure for failure in failures if failure]


def _run_shell(items: list[Snippet]) -> list[str]:
    with tempfile.TemporaryDirectory(prefix="retrystorm-docs-snippets-") as scratch:
        folder = Path(scratch)
        _scratch(folder)
        bin_dir = str(Path(sys.executable).parent)
        env = {
            **os.environ,
            "PATH": os.pathsep.join([bin_dir, os.environ.get("PATH", "")]),
            "REPO": str(docsite.ROOT),
            "RETRYSTORM_CHAOS_JOURNAL": str(folder / "chaos-journal.jsonl"),
            "COLUMNS": "120",
        }
        process = subprocess.Popen(  # noqa: S603 - the page's own snippets, run as the docs say
            [*_isolation(), "bash", "-s"],
            cwd=folder,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        try:
            output, _ = process.communicate(page_script(items), timeout=PAGE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            output += f"\n(the page's snippets took more than {PAGE_TIMEOUT_S} s)"
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
    return _failures(items, output)


def _failures(items: list[Snippet], output: str) -> list[str]:
    """The blocks that did not end with status 0, each with the last lines it printed."""
    by_line = {item.line: item for item in items}
    blocks: dict[int, list[str]] = {}
    statuses: dict[int, int] = {}
    current: int | None = None
    for line in output.splitlines():
        if line.startswith(f"{_MARK} start "):
            current = int(line.split()[2])
            blocks[current] = []
        elif line.startswith(f"{_MARK} end "):
            _, _, number, status = line.split()
            statuses[int(number)] = int(status)
            current = None
        elif current is not None:
            blocks[current].append(line)
    failures = []
    for line_number, item in by_line.items():
        status = statuses.get(line_number)
        if status == 0:
            continue
        tail = "\n    ".join(blocks.get(line_number, output.splitlines())[-12:])
        what = "did not finish" if status is None else f"exited {status}"
        failures.append(f"{item.where}: the snippet ({item.kind}) {what}:\n    {tail}")
    return failures


def _check_scenario(item: Snippet) -> str:
    """A scenario block must load as a scenario file does."""
    from retrystorm.errors import UserError  # noqa: PLC0415 - only pages with scenario blocks need the loader
    from retrystorm.experiment.scenario import loader  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix="retrystorm-docs-scenario-") as scratch:
        path = Path(scratch) / "scenario.yaml"
        path.write_text(item.command or "", encoding="utf-8")
        try:
            loader.load_scenario(path)
        except UserError as error:
            first = str(error).splitlines()[0]
            at = re.match(rf"{re.escape(str(path))}:(\d+): (.*)", first)
            if at is None:
                return f"{item.where}: the scenario does not load: {first}"
            return f"{item.page}:{item.line + int(at[1])}: the scenario does not load: {at[2]}"
    return ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pages", nargs="*", help="pages under docs/ (default: every page with a snippet to check)")
    parser.add_argument("--list", action="store_true", help="print each snippet and what would run; run nothing")
    args = parser.parse_args(argv)
    failed = False
    for page in args.pages or pages():
        if args.list:
            for item in snippets(page):
                sys.stdout.write(f"{item.where}: {item.kind} {item.command or item.reason}\n")
            continue
        for failure in run_page(page):
            failed = True
            sys.stdout.write(failure + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
