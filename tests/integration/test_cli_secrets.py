"""`orchestrator variables|connections|secrets ...` against a real store (both backends):
the issue's commands, secrets never printed, bad input refused with nothing stored."""

from __future__ import annotations

import json
import os

import pytest

from orchestrator.cli import main
from orchestrator.store.credentials.secret_box import box_of

URI = "postgresql://etl:s3cret-pw@db.internal:5432/sales"


@pytest.fixture
def cli(settings, monkeypatch, capsys):
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main(list(argv))
        out = capsys.readouterr()
        return code, out.out, out.err

    return run


def test_the_issue_commands(cli, store, settings):
    assert cli("variables", "set", "region", "emea")[0] == 0
    assert cli("variables", "set", "limits", '{"max": 5}', "--json")[0] == 0
    assert cli("variables", "set", "db_password", "hunter2-long", "--description", "pw")[0] == 0
    assert cli("connections", "add", "warehouse", "--uri", URI)[0] == 0
    code, out, _ = cli("connections", "list")
    assert code == 0 and "warehouse" in out and "***" in out and "s3cret-pw" not in out
    code, out, _ = cli("connections", "get", "warehouse")
    assert "postgresql://etl:***@db.internal:5432/sales" in out and "s3cret-pw" not in out
    code, out, _ = cli("connections", "get", "warehouse", "--reveal", "--json")
    assert json.loads(out)["uri"] == URI
    assert cli("variables", "get", "region")[1] == "emea\n"
    assert json.loads(cli("variables", "get", "limits")[1]) == {"max": 5}
    assert cli("variables", "get", "db_password")[1] == "***\n"
    assert cli("variables", "get", "db_password", "--reveal")[1] == "hunter2-long\n"
    code, out, _ = cli("variables", "list", "--json")
    shown = {v["key"]: v for v in json.loads(out)}
    assert shown["db_password"]["value"] == "***" and shown["db_password"]["is_secret"]
    assert shown["limits"]["is_json"] and shown["region"]["value"] == "emea"
    assert "hunter2" not in cli("variables", "list")[1]
    assert store.get_connection("warehouse", box_of(settings)).password == "s3cret-pw"


def test_connection_from_fields_and_delete(cli, store, settings):
    code, _, err = cli(
        "connections", "add", "api", "--conn-type", "http", "--host", "example.com",
        "--login", "me", "--password", "p@ss word", "--port", "8443",
        "--extra", '{"verify": false}',
    )  # fmt: skip
    assert code == 0, err
    conn = store.get_connection("api", box_of(settings))
    assert (conn.host, conn.port, conn.password, conn.extra) == (
        "example.com", 8443, "p@ss word", {"verify": False}
    )  # fmt: skip
    assert cli("connections", "delete", "api")[0] == 0
    code, _, err = cli("connections", "delete", "api")
    assert code == 1 and "no connection 'api'" in err


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (("variables", "set", "v", "{nope", "--json"), "--json value is not JSON"),
        (("variables", "set", "bad name", "x"), "variable name 'bad name'"),
        (("connections", "add", "c", "--uri", "no-scheme-here"), "must look like type://"),
        (("connections", "add", "c", "--uri", "pg://u:p@h:notaport/x"), "Port could not"),
        (("connections", "add", "c", "--uri", "a://b://c://d"), "at most two"),
        (("connections", "add", "c", "--uri", "pg://h/?__extra__=%7Bbad"), "__extra__ is not JSON"),
        (("connections", "add", "c"), "give --uri URI, or --conn-type"),
        (("connections", "add", "c", "--conn-type", "http", "--extra", "[1]"), "JSON object"),
    ],
)
def test_bad_input_is_refused_with_the_reason_and_nothing_is_stored(cli, store, argv, reason):
    code, _, err = cli(*argv)
    assert code == 1 and reason in err, err
    assert store.list_variables() == [] and store.list_connections() == []


def test_a_duplicate_connection_is_refused_and_the_first_kept(cli, store, settings):
    assert cli("connections", "add", "warehouse", "--uri", URI)[0] == 0
    code, _, err = cli("connections", "add", "warehouse", "--uri", "http://other")
    assert code == 1 and "exists already" in err
    assert store.get_connection("warehouse", box_of(settings)).host == "db.internal"


def test_export_and_import_round_trip(cli, store, settings, tmp_path):
    cli("variables", "set", "region", "emea", "--description", "where")
    cli("variables", "set", "hush", "quiet-value", "--secret")
    cli("connections", "add", "warehouse", "--uri", URI)
    vfile, cfile = tmp_path / "v.json", tmp_path / "c.json"
    assert cli("variables", "export", str(vfile))[0] == 0
    assert cli("connections", "export", str(cfile))[0] == 0
    assert oct(os.stat(vfile).st_mode & 0o777) == "0o600"
    assert json.loads(cfile.read_text())["warehouse"]["password"] == "s3cret-pw"
    cli("variables", "delete", "hush")
    cli("connections", "delete", "warehouse")
    assert cli("variables", "import", str(vfile))[0] == 0
    assert cli("connections", "import", str(cfile))[0] == 0
    hush = store.get_variable("hush", box_of(settings))
    assert hush.value == "quiet-value" and hush.is_secret
    assert store.get_connection("warehouse", box_of(settings)).uri == URI
    # importing again: connections exist, so nothing of the file is stored
    code, _, err = cli("connections", "import", str(cfile))
    assert code == 1 and "exists already" in err
    airflow_style = tmp_path / "a.json"
    airflow_style.write_text(json.dumps({"n": {"a": 1}, "s": "text", "u": 7}))
    assert cli("variables", "import", str(airflow_style))[0] == 0
    assert store.get_variable("n", None).is_json


def test_rotate_key_reencrypts_and_the_old_key_no_longer_reads(cli, store, settings):
    cli("variables", "set", "api_token", "tok-123456")
    cli("connections", "add", "warehouse", "--uri", URI)
    old = box_of(settings)
    code, out, err = cli("secrets", "rotate-key")
    assert code == 0, err
    assert "re-encrypted 1 variable(s) and 1 connection(s)" in out
    new = box_of(settings)
    assert new.keys != old.keys and len(new.keys) == 1
    assert store.get_variable("api_token", new).value == "tok-123456"
    code, _, err = cli("variables", "get", "api_token", "--reveal")
    assert code == 0
    with pytest.raises(Exception, match="cannot decrypt"):
        store.get_variable("api_token", old)


def test_a_wrong_key_refuses_with_a_clear_message(cli, settings, monkeypatch):
    from cryptography.fernet import Fernet

    cli("variables", "set", "api_token", "tok-123456")
    monkeypatch.setenv("ORCHESTRATOR_SECRETS_KEY", Fernet.generate_key().decode())
    code, out, err = cli("variables", "get", "api_token", "--reveal")
    assert code == 1 and "cannot decrypt variable 'api_token'" in err and "tok-" not in out


def test_processes_with_a_wrong_key_refuse_to_start(cli, settings, monkeypatch):
    from cryptography.fernet import Fernet

    cli("connections", "add", "warehouse", "--uri", URI)
    monkeypatch.setenv("ORCHESTRATOR_SECRETS_KEY", Fernet.generate_key().decode())
    for command in ("worker", "standalone", "webserver"):
        code, _, err = cli(command)
        assert code == 1 and "cannot decrypt connection 'warehouse'" in err, (command, err)


def test_tasks_test_reads_the_chain_and_masks_what_it_prints(cli, write_dag):
    write_dag(
        "t.py",
        """
        from orchestrator import DAG, task

        with DAG("t", schedule=None) as dag:
            @task
            def py(ctx):
                print("pw", ctx.connection("warehouse").password, ctx.variable("region"))

            dag.shell("sh", "echo {{ conn.warehouse.password }} {{ var.value.region }}")
        """,
    )
    cli("variables", "set", "region", "emea")
    cli("connections", "add", "warehouse", "--uri", URI)
    code, out, _ = cli("tasks", "test", "t", "py")
    assert code == 0 and "pw *** emea" in out and "s3cret" not in out
    code, out, _ = cli("tasks", "test", "t", "sh")
    assert code == 0 and "\n*** emea\n" in out and "s3cret" not in out, out


def test_a_worker_with_a_bad_secrets_backend_refuses_to_start(cli, monkeypatch):
    monkeypatch.setenv("ORCHESTRATOR_SECRETS_BACKEND", "no.such.module:Backend")
    code, _, err = cli("worker")
    assert code == 1 and "secrets_backend 'no.such.module:Backend': cannot import it" in err


def test_connections_add_reads_the_password_from_stdin(cli, store, settings, monkeypatch):
    import io

    monkeypatch.setattr("sys.stdin", io.StringIO("from-stdin-pw\n"))
    code, _, err = cli("connections", "add", "db", "--conn-type", "postgresql", "--host", "h",
                       "--password-stdin")  # fmt: skip
    assert code == 0, err
    assert store.get_connection("db", box_of(settings)).password == "from-stdin-pw"


def test_db_upgrade_makes_the_key_file_once(cli, settings):
    from pathlib import Path

    from orchestrator.store.credentials.secret_box import create_key_file, read_key_file

    path = Path(settings.state_dir) / "secrets_key"
    assert not path.exists()
    assert cli("db", "upgrade")[0] == 0
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    first = read_key_file(str(path))
    assert cli("db", "upgrade")[0] == 0
    create_key_file(str(path))  # a second creator racing the first: the first file wins
    assert read_key_file(str(path)) == first and len(first) == 1


def test_a_bad_import_file_is_refused_whole(cli, store, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = cli("variables", "import", str(bad))
    assert code == 1 and "not a JSON file" in err
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps({"good": "x", "bad name": "y"}))
    code, _, err = cli("variables", "import", str(mixed))
    assert code == 1 and "variable name 'bad name'" in err
    conns = tmp_path / "conns.json"
    conns.write_text(json.dumps({"ok": "http://h", "broken": "no-scheme"}))
    code, _, err = cli("connections", "import", str(conns))
    assert code == 1 and "connection 'broken': URI must look like" in err
    code, _, err = cli("variables", "import", str(tmp_path / "missing.json"))
    assert code == 1 and "cannot read it" in err
    assert store.list_variables() == [] and store.list_connections() == []


def test_export_to_dash_writes_standard_output_not_a_file(
    cli, store, settings, tmp_path, monkeypatch
):
    """Issue 24 item 15: ``-`` is standard output, as everywhere; no file named ``-``."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert cli("variables", "set", "api_token", "tok-0123456789")[0] == 0
    assert cli("connections", "add", "warehouse", "--uri", URI)[0] == 0
    code, out, err = cli("variables", "export", "-")
    assert code == 0
    assert json.loads(out)["api_token"]["value"] == "tok-0123456789"
    assert "standard output" in err
    code, out, err = cli("connections", "export", "-")
    assert code == 0 and json.loads(out)["warehouse"]["password"] == "s3cret-pw"
    assert list(cwd.iterdir()) == []  # no file named "-"


def test_import_from_dash_reads_standard_input(cli, store, settings, tmp_path, monkeypatch):
    import io

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO('{"region": "emea"}'))
    code, out, _ = cli("variables", "import", "-")
    assert code == 0 and "standard input" in out
    assert cli("variables", "get", "region")[1] == "emea\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(json.dumps({"wh": URI})))
    assert cli("connections", "import", "-")[0] == 0
    assert store.get_connection("wh", box_of(settings)).password == "s3cret-pw"
