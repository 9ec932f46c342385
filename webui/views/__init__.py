"""Blueprints: ``pages`` (HTML), ``api`` (JSON under /api/v1), ``health``."""
