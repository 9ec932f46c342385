"""tools/screenshots.py regenerates the docs' pictures from the example DAGs (issue 27):
a real standalone, real runs, a real browser; each picture a PNG of the viewport."""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.webui.test_browser import chromium_path  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.system
def test_the_screenshot_script_draws_each_view_from_the_example_dags(
    tmp_path: Path,
    chromium_path,  # noqa: F811
):
    out = tmp_path / "img"
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "screenshots.py"), "--out", str(out),
         "--only", "dag_page,run_graph,lineage"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    made = sorted(p.name for p in out.iterdir())
    assert made == ["dag_page.png", "lineage.png", "run_graph.png"]
    for name in made:
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n", name
        width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
        assert (width, height) == (1360, 900), name
        assert len(data) > 20_000, name  # a drawn page, not a blank one
    assert "dag_page.png" in done.stdout


def test_the_readme_pictures_are_views_the_script_draws():
    from tools import screenshots

    names = set(screenshots.views("http://x", {d: "r" for d in screenshots.WAIT_FOR}))
    assert {"dag_list", "dag_page", "run_graph", "task_page", "calendar", "lineage"} <= names
    assert {"grid", "graph", "gantt", "tries", "log", "dag_page_dark"} <= names
    webui = (ROOT / "docs" / "webui.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for name in names:  # every picture the script makes is shown in the docs
        assert f"img/{name}.png" in webui or f"docs/img/{name}.png" in readme, name
    for picture in ("docs/img/dag_page.png", "docs/img/run_graph.png"):
        assert picture in readme and Path(ROOT, picture).name.removesuffix(".png") in names
