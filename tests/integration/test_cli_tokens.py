"""`orchestrator users add --role / role / token / tokens / revoke` against a real store
(both backends), and the event log naming who did what, filtered by actor."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime

import pytest

from orchestrator.cli import main
from orchestrator.cli.common import cli_actor

START = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def cli(settings, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)

    def run(*argv: str, stdin: str = "") -> int:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        return main(list(argv))

    return run


def test_users_roles_and_tokens(cli, capsys, store):
    assert cli("users", "add", "vera", "--password-stdin", stdin="long enough password\n") == 0
    assert "user vera added as viewer" in capsys.readouterr().out  # least privilege by default
    assert (
        cli("users", "add", "ada", "--role", "admin", "--password-stdin", stdin="long one!\n") == 0
    )
    assert cli("users", "add", "x", "--role", "root", "--password-stdin", stdin="long one!\n") != 0
    assert "invalid choice: 'root'" in capsys.readouterr().err
    assert cli("users", "list", "--json") == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["username"], r["role"]) for r in rows] == [("ada", "admin"), ("vera", "viewer")]

    assert cli("users", "token", "vera", "--role", "operator") != 0
    assert "vera is viewer" in capsys.readouterr().err
    assert (
        cli("users", "token", "ada", "--role", "operator", "--name", "ci", "--expires", "30d") == 0
    )
    out = capsys.readouterr()
    token = out.out.strip()
    assert token.startswith("orc_") and "shown this once" in out.err
    auth = store.authenticate_token(token, START)
    assert (auth.username, auth.role, auth.name) == ("ada", "operator", "ci")

    assert cli("users", "token", "ada", "--expires", "soon") != 0
    assert "--expires: expected like 90d" in capsys.readouterr().err

    assert cli("users", "tokens", "ada", "--json") == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["name"] == "ci" and listed["role"] == "operator"
    assert listed["revoked_at"] is None and "token" not in listed

    assert cli("users", "revoke", listed["token_id"]) == 0
    assert f"token {listed['token_id']} revoked" in capsys.readouterr().out
    assert store.authenticate_token(token, START).refused.startswith("token ")
    assert cli("users", "revoke", listed["token_id"]) == 0
    assert "revoked already" in capsys.readouterr().out
    assert cli("users", "revoke", "0123456789ab") != 0
    assert "no token '0123456789ab'" in capsys.readouterr().err
    assert cli("users", "revoke", "'; drop table users") != 0
    assert store.count_users() == 2

    assert cli("users", "role", "vera", "operator") == 0
    assert "vera is operator (was viewer)" in capsys.readouterr().out
    assert cli("users", "role", "vera", "root") == 1
    assert "role: expected one of viewer, operator, admin, got 'root'" in capsys.readouterr().err
    assert store.user_role("vera") == "operator"
    who = cli_actor()
    kinds = [e.kind for e in store.events(actor=who)]
    assert {"user_added", "token_created", "token_revoked", "user_role_set"} <= set(kinds)
    user = who.split(":", 1)[1].split("@", 1)[0]
    assert len(store.events(actor=user)) == len(kinds)  # a bare name matches every channel
    assert len(store.events(actor=f"cli:{user}")) == len(kinds)


def test_the_event_log_names_who_did_what_and_filters_by_it(store, make_dag_in_store):
    run = make_dag_in_store()
    store.set_paused("pipeline", True, START, who="web:ada")
    store.set_paused("pipeline", False, START, who="api:ada/token:ci")
    store.cancel_run(run.run_id, START, "cancelled by cli:root@host1", who="cli:root@host1")
    store.set_paused("pipeline", True, START, who="web:adam")
    store.set_paused("pipeline", False, START, who="web:a_a")  # _ is no wildcard
    assert [e.actor for e in store.events(kind="dag_paused")] == ["web:adam", "web:ada"]
    assert "by api:ada/token:ci" in store.events(kind="dag_unpaused")[1].message
    assert [e.actor for e in store.events(actor="api:ada")] == ["api:ada/token:ci"]
    assert [e.actor for e in store.events(actor="web:ada")] == ["web:ada"]
    assert {e.actor for e in store.events(actor="ada")} == {"web:ada", "api:ada/token:ci"}
    assert [e.kind for e in store.events(actor="cli:root")] == ["run_cancelled"]
    assert store.events(actor="web:a%") == []
    assert store.events(actor="web:a_") == []
    assert [e.actor for e in store.events(actor="a_a")] == ["web:a_a"]
    assert store.events(actor="api:ada", kind="dag_paused") == []
    [created] = store.events(kind="run_created")
    assert created.actor == "cli:tester@box"
    assert "cli:tester@box" not in {e.actor for e in store.events(actor="system")}
    assert store.events(actor="system") == [e for e in store.events() if e.actor is None]


@pytest.fixture
def make_dag_in_store(store):
    from orchestrator import DAG, task
    from orchestrator.authoring.spec import serialize_dag

    def make():
        with DAG("pipeline", schedule=None) as dag:

            @task
            def extract(ctx):
                return 1

        store.save_dag(serialize_dag(dag), START)
        return store.trigger_run("pipeline", START, triggered_by="cli:tester@box")

    return make
