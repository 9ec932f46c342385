"""The Alembic migrations and the models describe the same schema, on both backends."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text

from orchestrator.store.core.db import alembic_config, make_engine, upgrade
from orchestrator.store.core.models import metadata

PG_ADMIN_URL = os.environ.get(
    "ORCHESTRATOR_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A brand-new database with no tables at all."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh.db'}"
        return
    request.getfixturevalue("pg_database")  # skips (or fails) when there is no server
    name = f"orch_mig_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def _diffs(url: str) -> list:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(
                conn, opts={"compare_type": True, "compare_server_default": True}
            )
            return compare_metadata(ctx, metadata)
    finally:
        engine.dispose()


def _check(url: str) -> None:
    """``alembic check``: raises if autogenerate would write a new migration."""
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            cfg = alembic_config(url)
            cfg.attributes["connection"] = conn
            command.check(cfg)
    finally:
        engine.dispose()


def test_upgrade_head_matches_the_models(empty_database):
    upgrade(empty_database)
    assert _diffs(empty_database) == []
    _check(empty_database)
    engine = make_engine(empty_database)
    try:
        tables = set(inspect(engine).get_table_names())
        with engine.connect() as conn:
            version = conn.execute(text("select version_num from alembic_version")).scalar()
    finally:
        engine.dispose()
    assert tables == set(metadata.tables) | {"alembic_version"}
    head = ScriptDirectory.from_config(alembic_config(empty_database)).get_current_head()
    assert version == head


def test_downgrade_to_base_and_upgrade_again(empty_database):
    upgrade(empty_database)
    upgrade(empty_database)  # idempotent at head
    engine = make_engine(empty_database)
    try:
        with engine.begin() as conn:
            cfg = alembic_config(empty_database)
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "base")
        assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    finally:
        engine.dispose()
    upgrade(empty_database)
    assert _diffs(empty_database) == []


def test_check_notices_a_model_the_migrations_lack(empty_database):
    """The comparison is not vacuous: an extra column in the models is a difference."""
    from sqlalchemy import Column, Integer, MetaData, Table

    upgrade(empty_database)
    extra = MetaData()
    for table in metadata.sorted_tables:
        table.to_metadata(extra)
    Table("dag_runs", extra, Column("surprise", Integer), extend_existing=True)
    engine = make_engine(empty_database)
    try:
        with engine.connect() as conn:
            diffs = compare_metadata(MigrationContext.configure(conn), extra)
    finally:
        engine.dispose()
    assert [d[0] for d in diffs] == ["add_column"]
    assert diffs[0][2] == "dag_runs" and diffs[0][3].name == "surprise"


def test_0029_gives_every_existing_user_its_own_session_nonce(empty_database):
    """Issue 24, item 3: users from before 0029 get a random nonce each (and their
    tokens survive the column being added)."""
    engine = make_engine(empty_database)
    try:
        with engine.begin() as conn:
            cfg = alembic_config(empty_database)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "0028")
            for name in ("ada", "bob"):
                conn.execute(
                    text(
                        "insert into users (username, password_hash, created_at, role,"
                        " session_version) values (:n, 'x', CURRENT_TIMESTAMP, 'admin', 3)"
                    ),
                    {"n": name},
                )
            conn.execute(
                text(
                    "insert into api_tokens (token_id, user_id, name, secret_hash, role,"
                    " created_at) select 'tok1', id, 'ci', 'h', 'viewer', CURRENT_TIMESTAMP"
                    " from users where username = 'ada'"
                )
            )
            command.upgrade(cfg, "head")
        with engine.connect() as conn:
            nonces = conn.execute(text("select session_nonce from users")).scalars().all()
            tokens = conn.execute(text("select count(*) from api_tokens")).scalar()
    finally:
        engine.dispose()
    assert len(nonces) == 2 and len(set(nonces)) == 2
    assert all(len(n) == 32 and int(n, 16) >= 0 for n in nonces)
    assert tokens == 1
