"""The secrets backend chain (issue 16 item 2): environment, then database, then the
configured backend; the example backend reading a directory of files (a Vault agent or
Kubernetes secret mount), used by a real try."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from orchestrator.authoring.credentials import Connection
from orchestrator.engine.secrets_chain import SecretsChain, load_backend
from orchestrator.engine.secrets_files import FilesSecretsBackend
from orchestrator.errors import ConfigError
from orchestrator.store.credentials.secret_box import box_of

FILES = "orchestrator.engine.secrets_files:FilesSecretsBackend"


@pytest.fixture
def mount(tmp_path: Path) -> Path:
    root = tmp_path / "mount"
    (root / "variables").mkdir(parents=True)
    (root / "connections").mkdir()
    (root / "variables" / "region").write_text("from-files\n")
    (root / "variables" / "vault_only").write_text("v4ult-value\n")
    (root / "connections" / "warehouse").write_text("postgresql://f:filepass99@files.host/db\n")
    (root / "connections" / "vaultdb").write_text("mysql://u:vaultpass77@vault.host:3306/x\n")
    return root


def _chain(store, settings, mount, environ=None):
    with_backend = settings.with_(
        secrets_backend=FILES, secrets_backend_kwargs=json.dumps({"root": str(mount)})
    )
    return SecretsChain(store, with_backend, environ or {})


def test_the_order_is_environment_then_database_then_backend(store, settings, clock, mount):
    box = box_of(settings)
    store.set_variable("region", "from-db", clock.now(), box)
    store.add_connection(Connection.from_uri("warehouse", "http://db.host"), clock.now(), box)
    chain = _chain(store, settings, mount)
    assert chain.variable("region").value == "from-db"
    assert chain.connection("warehouse").host == "db.host"
    assert chain.variable("vault_only").value == "v4ult-value"
    assert chain.variable("vault_only").secret  # a secrets manager's values are masked
    assert chain.connection("vaultdb").password == "vaultpass77"
    assert chain.variable("nowhere") is None and chain.connection("nowhere") is None
    env = {"ORCHESTRATOR_VAR_REGION": "from-env", "ORCHESTRATOR_CONN_VAULTDB": "ftp://e.host"}
    chain = _chain(store, settings, mount, env)
    assert chain.variable("region").value == "from-env"
    assert chain.connection("vaultdb").host == "e.host"


def test_files_backend_never_reads_outside_its_root(mount):
    backend = FilesSecretsBackend(str(mount))
    (mount / "secret_outside").write_text("nope")
    assert backend.get_variable("../secret_outside") is None
    assert backend.get_variable("..") is None
    assert backend.get_connection("vaultdb").startswith("mysql://")


@pytest.mark.parametrize(
    ("spec", "kwargs", "reason"),
    [
        ("no_colon", None, "expected module:Class"),
        ("no.such.module:X", None, "cannot import it"),
        (FILES, "{bad", "not JSON"),
        (FILES, '{"root": "/no/such/dir"}', "is not a directory"),
        ("json:JSONDecoder", None, "has no get_variable"),
    ],
)
def test_a_bad_backend_setting_is_refused_naming_it(spec, kwargs, reason):
    with pytest.raises(ConfigError, match=reason):
        load_backend(spec, kwargs)


def test_a_try_reads_the_files_backend_and_masks_it(store, settings, clock, write_dag, mount):
    from tests.helpers import Harness

    settings = settings.with_(
        secrets_backend=FILES, secrets_backend_kwargs=json.dumps({"root": str(mount)})
    )
    write_dag(
        "vault.py",
        """
        from orchestrator import DAG, task

        with DAG("vault", schedule=None) as dag:
            @task
            def read(ctx):
                print("got", ctx.variable("vault_only"), ctx.connection("vaultdb").password)

            dag.shell("shell", "echo {{ conn.vaultdb.host }} {{ conn.vaultdb.password }}")
        """,
    )
    harness = Harness(store, settings, clock)
    try:
        harness.parse()
        run = store.trigger_run("vault", clock.now())
        assert harness.run_until_finished(run.run_id).state == "success"
    finally:
        harness.close()
    logs = ""
    for task_id in ("read", "shell"):
        [one] = store.tries(run.run_id, task_id)
        logs += (Path(settings.log_dir) / one.log_path).read_text()
    assert "got *** ***" in logs and "vault.host ***" in logs
    assert "v4ult-value" not in logs and "vaultpass77" not in logs
