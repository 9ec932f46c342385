"""The orchestrator's own secrets, masked wherever it shows a log (issue 24, item 2).

A try's log masks the variables and connections the try read (``engine/masking.py``);
the settings' secrets are masked too, where the orchestrator writes or shows logs: its
own process logs (``observability.logging_setup.mask_with``), a try's log in the web
UI and API (``webui/logs.py``) and in ``orchestrator tasks logs``. They are: the
metrics token, the database URL's password, every key of ``secrets_key`` and of the
secrets key file, and the web UI secret (the files are read if they exist, never made).

>>> settings_masker(settings).mask("token=abc123abc123")  # doctest: +SKIP
'token=***'
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from sqlalchemy.engine import make_url

from orchestrator.engine.masking import Masker


def settings_secret_values(settings: Any) -> list[str]:
    """The secret values of ``settings`` (see the module docstring)."""
    values: list[str] = []
    if getattr(settings, "metrics_token", None):
        values.append(settings.metrics_token)
    with contextlib.suppress(Exception):
        password = make_url(settings.database_url).password
        if password:
            values.append(str(password))
    values += [k.strip() for k in (settings.secrets_key or "").split(",") if k.strip()]
    state = settings.state_dir
    key_file = getattr(settings, "secrets_key_file", None) or os.path.join(state, "secrets_key")
    web_file = getattr(settings, "web_secret_file", None) or os.path.join(state, "webui_secret")
    for path in (key_file, web_file):
        with contextlib.suppress(OSError, UnicodeError), open(path) as f:
            values += [k.strip() for k in f.read().replace(",", "\n").splitlines() if k.strip()]
    return values


def settings_masker(settings: Any) -> Masker:
    """A :class:`Masker` that knows the secret values of ``settings``."""
    masker = Masker()
    for value in settings_secret_values(settings):
        masker.add(value)
    return masker


class MaskedBytes:
    """A binary stream that masks what it writes to ``out`` (``tasks logs``); the end of
    a write that may begin a secret waits for the next write or ``flush``."""

    def __init__(self, out: Any, masker: Masker) -> None:
        self.out = out
        self.masker = masker
        self._held = b""

    def write(self, data: bytes) -> int:
        masked = self.masker.mask_bytes(self._held + bytes(data))
        keep = self.masker.held_back(masked)
        self._held = masked[len(masked) - keep :] if keep else b""
        self.out.write(masked[: len(masked) - keep])
        return len(data)

    def flush(self) -> None:
        held, self._held = self._held, b""
        if held:
            self.out.write(held)
        self.out.flush()
