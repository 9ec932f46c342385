"""Virtual environments built once per (python, requirements, system_site_packages).

Each lives in ``<venv_cache_dir>/<key>`` (``key``: a hash of the interpreter's real
path, the sorted requirements and the flag) and is ready once its marker file
``orchestrator-venv.json`` exists. Builders of one key take an exclusive ``flock`` on
``<key>.lock`` first, so two workers (or two task processes of one worker) building the
same environment at once build it once: the second waits, then finds the marker. The
environment is built in place (a virtualenv is not relocatable: its scripts name its
folder), and the marker is written last, through an atomic rename, so a reader that
sees it sees a complete environment. A build that was killed (timeout, lost lease)
leaves a folder without a marker and frees its lock with its process; the next builder
removes that folder and starts again. A failed build removes its folder too.

It is built with ``uv`` when on ``PATH`` (``venv_installer=auto``) and ``python -m
venv`` plus pip otherwise; both read their usual configuration (``pip.conf``,
``uv.toml``; their environment variables only when the task environment lets them
through, ``task_env_extra``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from orchestrator.errors import OrchestratorError

MARKER = "orchestrator-venv.json"
# runs argv with its output copied into the try's log: (exit status, last output)
RunCommand = Callable[[list[str]], tuple[int, str]]


class VenvBuildError(OrchestratorError):
    """Building a task's virtual environment failed; the message has the installer's
    error, ``summary`` the first line alone (for a log that shows the output already)."""

    def __init__(self, message: str, summary: str | None = None) -> None:
        super().__init__(message)
        self.summary = summary or message


def venv_key(python: str, requirements: Sequence[str], system_site_packages: bool) -> str:
    spec = [os.path.realpath(python), sorted(requirements), bool(system_site_packages)]
    return hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:20]


def venv_python(folder: str) -> str:
    return os.path.join(folder, "bin", "python")


def choose_installer(setting: str) -> tuple[str, str | None]:
    """``("uv", path)`` or ``("pip", None)`` for the ``venv_installer`` setting."""
    uv = shutil.which("uv")
    if setting == "uv" and uv is None:
        raise VenvBuildError("venv_installer is 'uv' but no uv is on PATH")
    if setting in ("auto", "uv") and uv is not None:
        return "uv", uv
    return "pip", None


def _build_commands(
    installer: tuple[str, str | None],
    python: str,
    folder: str,
    requirements: Sequence[str],
    system_site_packages: bool,
) -> list[list[str]]:
    name, uv = installer
    site = ["--system-site-packages"] if system_site_packages else []
    if name == "uv":
        assert uv is not None
        steps = [[uv, "venv", "--python", python, *site, folder]]
        if requirements:
            steps.append([uv, "pip", "install", "--python", venv_python(folder), *requirements])
        return steps
    steps = [[python, "-m", "venv", *site, folder]]
    if requirements:
        steps.append(
            [venv_python(folder), "-m", "pip", "install", "--no-input",
             "--disable-pip-version-check", *requirements]
        )  # fmt: skip
    return steps


def ensure_venv(
    cache_dir: str,
    python: str,
    requirements: Sequence[str],
    system_site_packages: bool,
    *,
    installer: str,
    run: RunCommand,
    log: logging.Logger,
) -> str:
    """The interpreter of the ready environment, built first if needed; VenvBuildError."""
    key = venv_key(python, requirements, system_site_packages)
    folder = os.path.join(cache_dir, key)
    marker = os.path.join(folder, MARKER)
    if os.path.isfile(marker):
        log.info("virtual environment %s is ready (%s)", key, folder)
        return venv_python(folder)
    os.makedirs(cache_dir, exist_ok=True)
    with open(os.path.join(cache_dir, f"{key}.lock"), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.info("waiting for virtual environment %s: another process is building it", key)
            fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(marker):
            log.info("virtual environment %s was built by another process", key)
            return venv_python(folder)
        if os.path.lexists(folder):
            log.info("removing the unfinished build of virtual environment %s", key)
            shutil.rmtree(folder, ignore_errors=True)
        chosen = choose_installer(installer)
        log.info(
            "building virtual environment %s with %s: python %s, requirements %s%s",
            key, chosen[0], python, " ".join(requirements) or "(none)",
            ", system site packages" if system_site_packages else "",
        )  # fmt: skip
        for argv in _build_commands(chosen, python, folder, requirements, system_site_packages):
            status, tail = run(argv)
            if status != 0:
                shutil.rmtree(folder, ignore_errors=True)
                step = "pip install " + " ".join(requirements) if "install" in argv else "venv"
                if chosen[0] == "uv":
                    step = "uv " + step
                elif step == "venv":
                    step = "python -m venv"
                head = (
                    f"building virtual environment {key} failed: {step[:300]} "
                    f"exited with status {status}"
                )
                raise VenvBuildError(f"{head}:\n{tail.strip()}", f"{head} (its output is above)")
        _write_marker(marker, key, python, requirements, system_site_packages, chosen[0])
        log.info("built virtual environment %s", key)
    return venv_python(folder)


def _write_marker(
    marker: str,
    key: str,
    python: str,
    requirements: Sequence[str],
    system_site_packages: bool,
    installer: str,
) -> None:
    data = {
        "key": key,
        "python": os.path.realpath(python),
        "requirements": list(requirements),
        "system_site_packages": system_site_packages,
        "installer": installer,
        "built_at": datetime.now(UTC).isoformat(),
    }
    tmp = f"{marker}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump(data, fh, indent=2)
        fh.flush()
        with contextlib.suppress(OSError):
            os.fsync(fh.fileno())
    os.replace(tmp, marker)
