"""Regenerate the web UI's screenshots in docs/img/ from the example DAGs (issue 27).

A real ``orchestrator standalone`` runs the DAG files of ``dags/`` in a throwaway state
folder until their runs have finished; then Chromium (Playwright) opens each view and
saves a picture of it, so the pictures in the README and docs/webui.md never drift
from the code::

    python tools/screenshots.py                 # into docs/img/
    python tools/screenshots.py --out /tmp/img  # elsewhere
    python tools/screenshots.py --only dag_page,calendar

It needs Debian's ``chromium`` (``apt-get install chromium``) and the ``[test]`` extra
(Playwright). Each picture is named after its view; ``--only`` takes those names.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("ORCHESTRATOR_CHROMIUM", "/usr/bin/chromium")
WAIT_FOR = ("nightly_report", "fan_out", "flaky", "ingest_sales", "sales_report", "heartbeat_check")
VIEWPORT = {"width": 1360, "height": 900}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(state: Path, *argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, ORCHESTRATOR_STATE_DIR=str(state))
    env.pop("ORCHESTRATOR_DATABASE_URL", None)
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", *argv],
        cwd=state,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@contextlib.contextmanager
def standalone(state: Path, port: int) -> Iterator[subprocess.Popen]:
    """``orchestrator standalone`` on ``port`` over a copy of dags/ in ``state``."""
    shutil.copytree(ROOT / "dags", state / "dags")
    env = dict(
        os.environ,
        ORCHESTRATOR_STATE_DIR=str(state),
        ORCHESTRATOR_DAGS_FOLDER=str(state / "dags"),
        ORCHESTRATOR_WEB_PORT=str(port),
        ORCHESTRATOR_TASK_ENV_EXTRA="HTTP_NOTIFY_URL",
        HTTP_NOTIFY_URL=f"http://127.0.0.1:{port}/health",
    )
    env.pop("ORCHESTRATOR_DATABASE_URL", None)
    if os.geteuid() == 0:  # the example tasks are harmless: run them as this root user
        env["ORCHESTRATOR_ALLOW_ROOT_TASKS"] = "1"
    with open(state / "standalone.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "orchestrator", "standalone"],
            cwd=state,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield proc
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def wait_for_runs(state: Path, proc: subprocess.Popen, timeout: float = 120) -> dict[str, str]:
    """The latest successful run of each DAG of :data:`WAIT_FOR` (dag_id -> run_id)."""
    found: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(
                f"standalone stopped: {(state / 'standalone.log').read_text()[-2000:]}"
            )
        out = _cli(state, "runs", "list", "--state", "success", "--json", "--limit", "500")
        if out.returncode == 0:
            for run in json.loads(out.stdout):
                found.setdefault(run["dag_id"], run["run_id"])
        if all(d in found for d in WAIT_FOR):
            return found
        time.sleep(1)
    missing = sorted(set(WAIT_FOR) - set(found))
    raise SystemExit(f"no successful run of {', '.join(missing)} within {timeout:.0f} s")


def views(base: str, runs: dict[str, str]) -> dict[str, tuple[str, Callable, str | None]]:
    """name -> (path, what to do on the page before the picture, the element to picture
    alone, or None for the window)."""

    def nothing(page: object) -> None:
        return None

    def dark(page: object) -> None:
        page.locator(".theme-toggle").first.click()  # type: ignore[attr-defined]

    def first_day(page: object) -> None:
        days = page.locator(".calendar button.day.state-success")  # type: ignore[attr-defined]
        if days.count():
            days.first.click()

    def open_group(page: object) -> None:
        group = page.locator("svg.graph .group-node")  # type: ignore[attr-defined]
        if group.count():
            group.first.click()
            page.wait_for_timeout(500)  # type: ignore[attr-defined]

    report = runs["nightly_report"]
    flaky = f"/runs/{runs['flaky']}/tasks/call_api"
    return {
        "dag_list": ("/", nothing, None),
        "dag_page": ("/dags/nightly_report", nothing, None),
        "run_graph": (f"/runs/{report}", nothing, None),
        "task_page": (flaky, nothing, None),
        "mapped_instances": (f"/runs/{runs['fan_out']}", nothing, None),
        "calendar": ("/dags/heartbeat_check/calendar", first_day, None),
        "lineage": ("/assets/lineage", nothing, None),
        "dag_page_dark": ("/dags/nightly_report", dark, None),
        # one part of a page each, for docs/webui.md's sections
        "grid": ("/dags/flaky", nothing, "table.grid"),
        "graph": (f"/runs/{runs['fan_out']}", open_group, ".graph-card"),
        "gantt": (f"/runs/{runs['flaky']}", nothing, ".gantt-card"),
        "tries": (flaky, nothing, ".error-view, .table-wrap"),
        "log": (flaky, nothing, ".log-section"),
    }


def shoot(base: str, runs: dict[str, str], out: Path, only: set[str] | None) -> list[Path]:
    from playwright.sync_api import sync_playwright

    made = []
    out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            for name, (path, prepare, part) in views(base, runs).items():
                if only and name not in only:
                    continue
                page = browser.new_page(viewport=VIEWPORT)
                page.emulate_media(color_scheme="light")
                page.goto(base + path)
                page.wait_for_load_state("networkidle")
                prepare(page)
                page.wait_for_timeout(300)  # the toggle's and the graph's scripts settle
                target = out / f"{name}.png"
                if part is None:
                    page.screenshot(path=str(target), full_page=False)
                else:
                    page.locator(part).first.screenshot(path=str(target))
                made.append(target)
                page.close()
        finally:
            browser.close()
    return made


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="folder to write")
    ap.add_argument("--only", default="", help="comma-separated view names (default: all)")
    args = ap.parse_args(argv)
    only = {x.strip() for x in args.only.split(",") if x.strip()} or None
    if not os.access(CHROMIUM, os.X_OK):
        print(f"{CHROMIUM} is needed (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        port = _free_port()
        with standalone(state, port) as proc:
            runs = wait_for_runs(state, proc)
            made = shoot(f"http://127.0.0.1:{port}", runs, args.out, only)
    for path in made:
        print(f"{path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
