"""Alerts: declared in DAG files or settings, raised by a watchdog, delivered off-thread.

Only the declaration helpers are imported here, so DAG files stay cheap to import.
"""

from orchestrator.alerts.model import email, webhook

__all__ = ["email", "webhook"]
