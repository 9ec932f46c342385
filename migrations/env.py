"""Alembic environment: the URL comes from the orchestrator's settings."""

from alembic import context
from sqlalchemy import pool

from orchestrator.settings import Settings
from orchestrator.store.core.db import make_engine
from orchestrator.store.core.models import metadata

config = context.config
url = config.attributes.get("url") or config.get_main_option("sqlalchemy.url")
if not url:
    url = Settings.load().database_url


def run_migrations_offline() -> None:
    context.configure(url=url, target_metadata=metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    engine = make_engine(url, poolclass=pool.NullPool)
    with engine.connect() as conn:
        _run(conn)
    engine.dispose()


def _run(connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
