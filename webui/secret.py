"""The web UI's secret key: made once per state folder, kept in a 0600 file.

There is no default key. The first start writes ``<state_dir>/webui_secret``
(``secrets.token_hex(32)``, mode 0600); every later start, and every other process
sharing the state folder, reads the same key back.

>>> key = load_or_create_secret("/srv/orchestrator/state")   # doctest: +SKIP
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import stat

from orchestrator.errors import ConfigError

log = logging.getLogger(__name__)

SECRET_FILE = "webui_secret"
_VALID = re.compile(r"[0-9a-f]{64,}")


def load_or_create_secret(state_dir: str, path: str | None = None) -> str:
    """Return the key in ``path`` (default ``<state_dir>/webui_secret``), creating the
    file if missing.

    Creation is atomic (a private temporary file hard-linked into place), so two
    processes starting at once end up with the same key and nobody reads a half
    written file.
    """
    if path is None:  # the web_secret_file setting may put it elsewhere (issue 24)
        os.makedirs(state_dir, mode=0o700, exist_ok=True)
        path = os.path.join(state_dir, SECRET_FILE)
    else:
        os.makedirs(os.path.dirname(os.path.abspath(path)), mode=0o700, exist_ok=True)
    if not os.path.exists(path):
        _create(path)
    return _read(path)


def _create(path: str) -> None:
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32) + "\n")
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
            log.info("created the web UI secret key in %s", path)
        except FileExistsError:
            pass  # another process made it first: use theirs
    finally:
        os.unlink(tmp)


def _read(path: str) -> str:
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        log.warning("%s was readable by others (mode %o); setting mode 600", path, mode)
        os.chmod(path, 0o600)
    with open(path) as f:
        key = f.read().strip()
    if not _VALID.fullmatch(key):
        raise ConfigError(
            f"{path}: not a web UI secret key (expected 64+ hex characters); "
            "delete the file to make a new one"
        )
    return key
