"""Variables, connections and the secret box (the Fernet key) that encrypts them."""

from orchestrator.store.credentials.connection_store import ConnectionStore
from orchestrator.store.credentials.variable_store import VariableStore


class CredentialsAggregate(VariableStore, ConnectionStore):
    """Tables ``variables``, ``connections``."""


__all__ = ["CredentialsAggregate"]
