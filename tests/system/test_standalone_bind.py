"""Issue 24 item 13: `orchestrator standalone` bound to a non-loopback address (or with
web_login=always) without a user refuses before it migrates or starts anything (a real
process): no SQLite file created, no schema put into an empty PostgreSQL database, no
DAG parsed, no scheduler or worker registered."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from orchestrator.errors import ConfigError
from orchestrator.store import Store
from tests.conftest import PG_ADMIN_URL, START
from tests.system.cluster import free_port

DAG = (
    'from orchestrator import DAG\nwith DAG("probe", schedule="@hourly") as dag:\n'
    '    dag.shell("t", "true")\n'
)


def _standalone(tmp_path: Path, url: str, **env: str) -> subprocess.CompletedProcess:
    (tmp_path / "dags").mkdir(exist_ok=True)
    (tmp_path / "dags" / "probe.py").write_text(DAG)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    environ.update(
        ORCHESTRATOR_DATABASE_URL=url,
        ORCHESTRATOR_STATE_DIR=str(tmp_path / "state"),
        ORCHESTRATOR_DAGS_FOLDER=str(tmp_path / "dags"),
        ORCHESTRATOR_WEB_PORT=str(free_port()),
        **env,
    )
    return subprocess.run(
        [sys.executable, "-m", "orchestrator", "standalone"],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def _refused(done: subprocess.CompletedProcess) -> None:
    assert done.returncode != 0, done.stdout + done.stderr
    assert "requires a login, and there is no user yet" in done.stderr
    assert "web UI at" not in done.stdout  # it never got as far as serving


@pytest.mark.system
@pytest.mark.parametrize("env", [{"ORCHESTRATOR_WEB_HOST": "0.0.0.0"},
                                 {"ORCHESTRATOR_WEB_LOGIN": "always"}])  # fmt: skip
def test_a_new_sqlite_database_is_not_even_created(tmp_path, env):
    db = tmp_path / "new.db"
    _refused(_standalone(tmp_path, f"sqlite:///{db}", **env))
    assert not db.exists()


@pytest.mark.system
@pytest.mark.postgres
def test_an_empty_postgres_database_is_not_migrated(tmp_path):
    name = f"orch_bind_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    try:
        _refused(_standalone(tmp_path, url, ORCHESTRATOR_WEB_HOST="0.0.0.0"))
        engine = create_engine(url)
        try:
            assert inspect(engine).get_table_names() == []
        finally:
            engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.mark.system
def test_a_migrated_database_without_users_starts_nothing(tmp_path, database_url):
    store = Store(database_url)
    try:
        _refused(_standalone(tmp_path, database_url, ORCHESTRATOR_WEB_HOST="0.0.0.0"))
        assert store.list_dags() == []  # the DAG processor never ran
        assert store.count_users() == 0
    finally:
        store.dispose()


def test_with_a_user_the_check_lets_it_through(settings, store):
    from orchestrator.engine.services import check_login_possible

    wide = settings.with_(web_host="0.0.0.0")
    with pytest.raises(ConfigError, match="no user yet"):
        check_login_possible(wide)
    store.add_user("ada", "correct horse battery", START)
    check_login_possible(wide)
    check_login_possible(settings.with_(web_host="127.0.0.1"))  # loopback: no login needed
