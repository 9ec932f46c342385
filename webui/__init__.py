"""The orchestrator web UI: a Flask app built by :func:`create_app`.

>>> from orchestrator.settings import Settings
>>> from webui import create_app
>>> from webui.server import serve
>>> serve(create_app(Settings.load()), "127.0.0.1", 8080)   # doctest: +SKIP
"""

from .app import create_app

__all__ = ["create_app"]
