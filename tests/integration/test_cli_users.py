"""`orchestrator users add/password/delete/list` against a real store (both backends),
and the CLI's trigger path refusing a conf beyond max_conf_bytes."""

from __future__ import annotations

import io
import json

import pytest

from orchestrator.cli import main


@pytest.fixture
def cli(settings, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)

    def run(*argv: str, stdin: str = "") -> int:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        return main(list(argv))

    return run


def test_users_add_list_password_delete(cli, capsys, store):
    assert cli("users", "add", "ada", "--password-stdin", stdin="long enough password\n") == 0
    assert cli("users", "add", "bob", "--password-stdin", stdin="another long one\n") == 0
    capsys.readouterr()
    assert cli("users", "list", "--json") == 0
    assert [u["username"] for u in json.loads(capsys.readouterr().out)] == ["ada", "bob"]

    version = store.session_version("ada")
    assert cli("users", "password", "ada", "--password-stdin", stdin="a new password\n") == 0
    assert store.session_version("ada") == version + 1  # every session of ada ends
    assert store.check_password("ada", "a new password")

    assert cli("users", "delete", "bob") == 0
    assert "user bob deleted" in capsys.readouterr().out
    assert store.session_version("bob") is None
    assert [u for u, _ in store.list_users()] == ["ada"]
    assert "user_deleted" in [e.kind for e in store.events(limit=5)]

    assert cli("users", "delete", "bob") != 0
    assert "no user 'bob'" in capsys.readouterr().err


DAG = """
from orchestrator import DAG, task

with DAG("hello", schedule=None, params={"text": "x"}) as dag:
    @task
    def say(ctx):
        return 1
"""


def test_dags_trigger_refuses_a_conf_beyond_max_conf_bytes(
    cli, capsys, write_dag, store, monkeypatch
):
    write_dag("hello.py", DAG)
    assert cli("dags", "parse") == 0
    monkeypatch.setenv("ORCHESTRATOR_MAX_CONF_BYTES", "100")
    capsys.readouterr()
    conf = json.dumps({"text": "A" * 200})
    assert cli("dags", "trigger", "hello", "--conf", conf) != 0
    assert "100-byte limit (max_conf_bytes)" in capsys.readouterr().err
    assert store.list_runs(dag_id="hello") == []
    assert cli("dags", "trigger", "hello", "--conf", json.dumps({"text": "A" * 50})) == 0
