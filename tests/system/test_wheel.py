"""The wheel a user installs works outside the checkout (issue 13, item 1).

Built from a copy of the repository, installed with its dependencies into a fresh
virtualenv, run from an empty folder: ``db upgrade`` finds the migrations, and
``standalone`` serves a page and its CSS from inside the package. The editable
install of the same tree finds the web UI and the migrations the same way.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.system.cluster import free_port

ROOT = Path(__file__).resolve().parents[2]
JUNK = shutil.ignore_patterns(
    ".git", "__pycache__", ".orchestrator", "build", "dist", "*.egg-info", ".hypothesis"
)


def _run(argv: list, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    out = subprocess.run(
        argv, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=timeout
    )
    assert out.returncode == 0, (
        f"{argv}: {out.returncode}\n{out.stdout[-3000:]}{out.stderr[-3000:]}"
    )
    return out


def _clean_env() -> dict[str, str]:
    """No PYTHONPATH (the checkout must not leak in) and no ORCHESTRATOR_* settings."""
    return {
        k: v
        for k, v in os.environ.items()
        if k != "PYTHONPATH" and not k.startswith("ORCHESTRATOR_")
    }


def _source_copy(tmp_path: Path) -> Path:
    """A copy of the tree: building writes build/ and *.egg-info beside the sources."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=JUNK)
    return src


def _venv(path: Path) -> Path:
    _run([sys.executable, "-m", "venv", str(path)], path.parent)
    return path / "bin"


@pytest.mark.system
def test_the_wheel_upgrades_and_serves_from_an_empty_folder(tmp_path: Path) -> None:
    src = _source_copy(tmp_path)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), "."], src)
    [wheel] = tmp_path.glob("orchestrator-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {
        "orchestrator",
        wheel.name.split("-py")[0] + ".dist-info",
    }
    for needed in (
        "orchestrator/_migrations/env.py",
        "orchestrator/_migrations/script.py.mako",
        "orchestrator/_migrations/versions/0001_initial_schema.py",
        "orchestrator/webui/templates/base.html",
        "orchestrator/webui/static/style.css",
        "orchestrator/webui/views/api.py",
    ):
        assert needed in names

    bin_ = _venv(tmp_path / "venv")
    _run([str(bin_ / "pip"), "install", "-q", str(wheel)], tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    upgraded = _run([str(bin_ / "orchestrator"), "db", "upgrade"], empty)
    assert "latest schema version" in upgraded.stdout
    assert (empty / ".orchestrator" / "orchestrator.db").is_file()

    port = free_port()
    log_path = tmp_path / "standalone.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            # --allow-root-tasks: the suite runs as root (README, "Install from a wheel")
            [str(bin_ / "orchestrator"), "standalone", "--port", str(port), "--allow-root-tasks"],
            cwd=empty,
            env=_clean_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while "web UI at" not in log_path.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            html = page.read().decode()
        [css] = re.findall(r'href="([^"]+\.css[^"]*)"', html)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{css}", timeout=10) as sheet:
            assert sheet.headers["Content-Type"].startswith("text/css")
            assert len(sheet.read()) > 1000
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    text = log_path.read_text()
    assert "setup plugin" not in text and "Traceback" not in text, text  # item 2 as well
    assert (
        "site-packages/orchestrator"
        in _run(
            [str(bin_ / "python"), "-c", "import orchestrator.webui as w; print(w.__file__)"], empty
        ).stdout
    )


@pytest.mark.system
def test_an_editable_install_finds_the_web_ui_and_migrations_in_the_checkout(
    tmp_path: Path,
) -> None:
    src = _source_copy(tmp_path)
    bin_ = _venv(tmp_path / "venv")
    _run([str(bin_ / "pip"), "install", "-q", "-e", str(src)], tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    probe = (
        "import importlib.util\n"
        "from orchestrator.engine.services import web_ui\n"
        "from orchestrator.store.core.db import migrations_dir\n"
        "print(web_ui().__name__, web_ui('server').__file__, migrations_dir())\n"
        "print(importlib.util.find_spec('webui'))\n"
    )
    out = _run([str(bin_ / "python"), "-c", probe], empty).stdout.split("\n")
    assert out[0] == f"orchestrator.webui {src / 'webui' / 'server.py'} {src / 'migrations'}"
    assert out[1] == "None"  # nothing generic at the top level, editable or not
    assert (
        "latest schema version" in _run([str(bin_ / "orchestrator"), "db", "upgrade"], empty).stdout
    )
