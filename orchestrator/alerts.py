"""Alert helpers for DAG files: ``from orchestrator.alerts import email, slack, webhook``.

A public name kept for DAG files; the declarations live in
:mod:`orchestrator.authoring.alerts` and delivery in :mod:`orchestrator.observability.alerts`.
"""

from orchestrator.authoring.alerts import email, slack, webhook

__all__ = ["email", "slack", "webhook"]
