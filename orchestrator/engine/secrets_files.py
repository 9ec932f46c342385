"""An example secrets backend: a directory of files, the shape of a Vault agent's or a
Kubernetes secret's mount.

    <root>/variables/<name>      the variable's value (one trailing newline dropped)
    <root>/connections/<name>    the connection's URI (surrounding whitespace dropped)

Enable it with::

    ORCHESTRATOR_SECRETS_BACKEND=orchestrator.engine.secrets_files:FilesSecretsBackend
    ORCHESTRATOR_SECRETS_BACKEND_KWARGS='{"root": "/var/run/secrets/orchestrator"}'

It is asked after the environment and the database. Names are the orchestrator's
(letters, digits, ``_ . -``), so a name can never reach outside ``root``. A file is
read each time it is asked for: a rotated secret is seen on the next read.
"""

from __future__ import annotations

import os

from orchestrator.authoring.credentials import NAME
from orchestrator.errors import ConfigError


class FilesSecretsBackend:
    def __init__(self, root: str, variables: str = "variables", connections: str = "connections"):
        if not isinstance(root, str) or not os.path.isdir(root):
            raise ConfigError(f"FilesSecretsBackend: root {root!r} is not a directory")
        self.variables = os.path.join(root, variables)
        self.connections = os.path.join(root, connections)

    def get_variable(self, name: str) -> str | None:
        text = _read(self.variables, name)
        return text[:-1] if text is not None and text.endswith("\n") else text

    def get_connection(self, name: str) -> str | None:
        text = _read(self.connections, name)
        return text.strip() if text is not None else None


def _read(folder: str, name: str) -> str | None:
    if not NAME.fullmatch(name) or name in (".", ".."):
        return None
    try:
        with open(os.path.join(folder, name), encoding="utf-8") as f:
            return f.read()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
