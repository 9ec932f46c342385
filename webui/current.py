"""What a view needs of the app handling the current request: its store, settings
and clock, read from ``current_app.extensions`` (set by :func:`webui.app.create_app`).

Views import these instead of the app module, so the app factory can import the
views without an import circle.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from flask import current_app

from orchestrator.settings import Settings
from orchestrator.store import Store

from .layouts import Layouts

STORE_KEY = "orchestrator_store"
SETTINGS_KEY = "orchestrator_settings"
CLOCK_KEY = "orchestrator_clock"
LAYOUTS_KEY = "orchestrator_layouts"
LOG_MASK_KEY = "orchestrator_log_mask"
WAKE_SCHEDULER_KEY = "orchestrator_wake_scheduler"


def get_store() -> Store:
    """The store of the app handling the current request."""
    return current_app.extensions[STORE_KEY]


def get_settings() -> Settings:
    """The settings the app was built with."""
    return current_app.extensions[SETTINGS_KEY]


def get_layouts() -> Layouts:
    """The app's graph layouts, one per DAG version (see :mod:`webui.layouts`)."""
    return current_app.extensions[LAYOUTS_KEY]


def get_log_mask() -> Callable[[str], str] | None:
    """What masks the settings' secrets in the try logs this app shows (issue 24)."""
    return current_app.extensions.get(LOG_MASK_KEY)


def wake_scheduler() -> None:
    """Asset events were recorded: the scheduler should start their runs now."""
    wake = current_app.extensions.get(WAKE_SCHEDULER_KEY)
    if wake is not None:
        wake.set()


def now() -> datetime:
    """The current time from the app's clock (a fake one in tests)."""
    return current_app.extensions[CLOCK_KEY].now()
