"""Shared fixtures: real SQLite files and a real PostgreSQL database, a fake clock.

PostgreSQL tests skip when no server answers, unless ORCHESTRATOR_REQUIRE_POSTGRES=1
(as .ci/run sets), in which case they fail. The server is
ORCHESTRATOR_TEST_POSTGRES_URL (default: postgres@127.0.0.1:5432, trust auth).
"""

from __future__ import annotations

import os
import shutil
import textwrap
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from orchestrator.clock import FakeClock
from orchestrator.settings import Settings
from orchestrator.store import Store
from orchestrator.store.core.db import upgrade
from orchestrator.store.core.models import metadata
from tests.helpers import Harness

PG_ADMIN_URL = os.environ.get(
    "ORCHESTRATOR_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
)
REQUIRE_PG = os.environ.get("ORCHESTRATOR_REQUIRE_POSTGRES") == "1"
# issue 24: the suite runs as root (CI's containers), and a worker or standalone running
# as root without task_user refuses to run tasks unless told to; the processes the tests
# start inherit this (tests/system/test_task_user.py checks the refusal without it)
os.environ.setdefault("ORCHESTRATOR_ALLOW_ROOT_TASKS", "1")
START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _keep_umask() -> Iterator[None]:
    """Every orchestrator command sets a umask of 077 (issue 24); a test that runs one in
    this process must not leave it to the tests after it."""
    before = os.umask(0o022)
    os.umask(before)
    yield
    os.umask(before)


def _pg_available() -> str | None:
    try:
        engine = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text("select 1"))
        engine.dispose()
        return None
    except Exception as exc:  # noqa: BLE001
        return str(exc).splitlines()[0]


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    problem = _pg_available()
    if problem:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL is required (ORCHESTRATOR_REQUIRE_POSTGRES=1): {problem}")
        pytest.skip(f"PostgreSQL not available: {problem}")
    name = f"orch_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    upgrade(url)
    yield url
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def _truncate_pg(url: str) -> None:
    engine = create_engine(url)
    names = ", ".join(f'"{t.name}"' for t in metadata.sorted_tables)
    with engine.begin() as conn:
        conn.execute(text(f"TRUNCATE {names} RESTART IDENTITY CASCADE"))
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, migrated database for one test, on each backend."""
    if request.param == "sqlite":
        template = request.getfixturevalue("sqlite_template")
        path = tmp_path / "orchestrator.db"
        shutil.copy(template, path)
        return f"sqlite:///{path}"
    url = request.getfixturevalue("pg_database")
    _truncate_pg(url)
    return url


@pytest.fixture
def sqlite_url(sqlite_template: Path, tmp_path: Path) -> str:
    path = tmp_path / "orchestrator.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite:///{path}"


@pytest.fixture
def dags_dir(tmp_path: Path) -> Path:
    path = tmp_path / "dags"
    path.mkdir()
    return path


@pytest.fixture
def settings(database_url: str, tmp_path: Path, dags_dir: Path) -> Settings:
    return Settings.load(
        {},
        cwd=str(tmp_path),
        database_url=database_url,
        dags_folder=str(dags_dir),
        state_dir=str(tmp_path / "state"),
        lease_seconds=30,
        heartbeat_seconds=10,
        worker_concurrency=4,
        parse_timeout=10,
    )


@pytest.fixture
def store(settings: Settings) -> Iterator[Store]:
    s = Store(settings.database_url)
    yield s
    s.dispose()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def write_dag(dags_dir: Path) -> Callable[[str, str], Path]:
    """Write a DAG file (dedented) into the dags folder."""

    def write(name: str, source: str) -> Path:
        path = dags_dir / name
        path.write_text(textwrap.dedent(source))
        return path

    return write


@pytest.fixture
def harness(store: Store, settings: Settings, clock: FakeClock) -> Iterator[Harness]:
    """Processor, scheduler and worker on the test's store and fake clock."""
    h = Harness(store, settings, clock)
    yield h
    h.close()
