"""Variables, connections and secrets (issue 16 items 1-3) on SQLite and PostgreSQL:
read by real tries (Python and shell), encrypted at rest, masked in every output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from orchestrator.authoring.credentials import Connection
from orchestrator.errors import ConfigError
from orchestrator.store.credentials.secret_box import SecretsKeyError, box_of, load_box

PASSWORD = "pA55-w0rd/with@odd:chars"
TOKEN = "tok-9f8e7d6c5b4a"
EXTRA_SECRET = "xtra-k3y-material"

DAG_SOURCE = """
from orchestrator import DAG, task

with DAG("creds", schedule=None) as dag:

    @task
    def load(ctx):
        conn = ctx.connection("warehouse")
        cap = ctx.variable("limits", deserialize_json=True)["max"]
        token = ctx.variable("api_token")
        print("uri", conn.uri)
        print("password", conn.password, "extra", conn.extra["key_material"])
        print("token in two writes:", token[:5], end="")
        print(token[5:])
        ctx.log.info("region %s cap %s missing %s", ctx.variable("region"), cap,
                     ctx.variable("nope", default="dflt"))
        return {"host": conn.host, "port": conn.port, "token": token}

    @task
    def boom(ctx):
        raise RuntimeError("cannot log in with " + ctx.connection("warehouse").password)

    dag.shell(
        "dump",
        "echo host={{ conn.warehouse.host }} user={{ conn.warehouse.login }} "
        "pw={{ conn.warehouse.password }} region={{ var.value.region }} "
        "max={{ var.json.limits.max }} tok={{ var.value.api_token }}",
    )
    dag.shell("unknown_var", "echo {{ var.value.not_there }}")
    dag.shell("unknown_conn", "echo {{ conn.not_there.host }}")
    dag.shell("hostile", "echo \\"{{ var.value.hostile }}\\" {{ var.value.hostile }}")
"""


def plant(store, settings, now) -> None:
    box = box_of(settings)
    store.set_variable("region", "emea", now, box, description="where")
    store.set_variable("limits", '{"max": 5}', now, box, is_json=True)
    store.set_variable("api_token", TOKEN, now, box)  # secret by its name
    store.set_variable("plain_but_secret", "hush-hush-value", now, box, secret=True)
    store.add_connection(
        Connection(
            conn_id="warehouse",
            conn_type="postgresql",
            host="db.internal",
            login="etl",
            password=PASSWORD,
            port=5432,
            schema="sales",
            extra={"key_material": EXTRA_SECRET, "sslmode": "require"},
        ),
        now,
        box,
    )


def _log(store, settings, run_id: str, task_id: str) -> str:
    [one] = store.tries(run_id, task_id)
    return (Path(settings.log_dir) / one.log_path).read_text()


def _run(harness, write_dag):
    write_dag("creds.py", DAG_SOURCE)
    harness.parse()
    run = harness.store.trigger_run("creds", harness.clock.now())
    harness.run_until_finished(run.run_id)
    return run


def test_tasks_read_variables_and_connections_and_every_secret_is_masked(
    harness, store, settings, clock, write_dag, monkeypatch, capsys
):
    from orchestrator.observability.alerts.watchdog import AlertWatchdog

    plant(store, settings, clock.now())
    watchdog = AlertWatchdog(store, settings)
    watchdog.check(clock.now())  # alerts start from here
    run = _run(harness, write_dag)
    alerts = watchdog.check(clock.now())
    [boom_alert] = [a for a in alerts if a.task_id == "boom"]
    assert "cannot log in with ***" in boom_alert.message
    assert all(PASSWORD not in a.message for a in alerts)
    states = {ti.task_id: ti.state for ti in store.task_instances(run.run_id)}
    assert states["load"] == "success" and states["dump"] == "success", states
    assert states["boom"] == "failed" and states["unknown_var"] == "failed"

    load = _log(store, settings, run.run_id, "load")
    assert "region emea cap 5 missing dflt" in load
    assert (
        "uri postgresql://etl:***@db.internal:5432/sales?key_material=***&sslmode=require" in load
    )
    assert "password *** extra ***" in load
    assert "token in two writes: ***" in load  # split across two writes, still masked
    result = json.loads(store.results(run.run_id, ["load"])["load"])
    assert result == {"host": "db.internal", "port": 5432, "token": "***"}

    dump = _log(store, settings, run.run_id, "dump")
    assert "host=db.internal user=etl pw=*** region=emea max=5 tok=***" in dump
    assert "command: echo host=db.internal" in dump and "pw=***" in dump

    boom = _log(store, settings, run.run_id, "boom")
    assert "cannot log in with ***" in boom
    [try_] = store.tries(run.run_id, "boom")
    assert "cannot log in with ***" in try_.error

    [try_] = store.tries(run.run_id, "unknown_var")
    assert "unknown variable 'not_there'" in try_.error
    [try_] = store.tries(run.run_id, "unknown_conn")
    assert "unknown connection 'not_there'" in try_.error

    secrets = (PASSWORD, TOKEN, EXTRA_SECRET, "hush-hush")
    for task_id in ("load", "dump", "boom"):
        log = _log(store, settings, run.run_id, task_id)
        for secret in secrets:
            assert secret not in log, (task_id, secret)
    _assert_nowhere_in_ui_and_cli(store, settings, run.run_id, secrets, monkeypatch, capsys)
    _assert_nowhere_in_database(store, settings, secrets)


def _assert_nowhere_in_ui_and_cli(store, settings, run_id, secrets, monkeypatch, capsys) -> None:
    from orchestrator.cli import main
    from webui import create_app

    client = create_app(settings, store).test_client()
    shown = []
    for path in ("/variables", "/connections", "/events", f"/runs/{run_id}"):
        shown.append(client.get(path).get_data(as_text=True))
    for task_id in ("load", "dump", "boom", "unknown_var"):
        for path in (f"/runs/{run_id}/tasks/{task_id}", f"/api/v1/runs/{run_id}/tasks/{task_id}",
                     f"/api/v1/runs/{run_id}/tasks/{task_id}/tries/1/log"):  # fmt: skip
            response = client.get(path)
            assert response.status_code == 200, path
            shown.append(response.get_data(as_text=True))
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    capsys.readouterr()
    for argv in (["variables", "list"], ["variables", "list", "--json"],
                 ["variables", "get", "api_token"], ["connections", "list", "--json"],
                 ["connections", "get", "warehouse"], ["tasks", "logs", run_id, "load"],
                 ["tasks", "logs", run_id, "boom"], ["runs", "show", run_id, "--json"],
                 ["tasks", "failed", "--json"], ["alerts", "list", "--json"]):  # fmt: skip
        assert main(argv) == 0, argv
        out = capsys.readouterr()
        shown += [out.out, out.err]
    text = "\n".join(shown)
    assert "cannot log in with ***" in text and "region emea" in text  # the pages say something
    for secret in secrets:
        assert secret not in text, secret


def _assert_nowhere_in_database(store, settings, secrets) -> None:
    """Every text column of every table, and on SQLite the file's bytes (WAL too)."""
    with store.engine.connect() as conn:
        for table in inspect(conn).get_table_names():
            for row in conn.execute(text(f'SELECT * FROM "{table}"')):
                blob = " ".join(str(v) for v in row)
                for secret in secrets:
                    assert secret not in blob, (table, secret)
    if store.dialect == "postgresql" and shutil.which("pg_dump"):
        from sqlalchemy.engine import make_url

        url = make_url(store.url).set(drivername="postgresql")
        dump = subprocess.run(
            ["pg_dump", "--data-only", url.render_as_string(hide_password=False)],
            capture_output=True, text=True, check=True, timeout=60,
        ).stdout  # fmt: skip
        assert "COPY public.connections" in dump
        for secret in secrets:
            assert secret not in dump, ("pg_dump", secret)
    if store.dialect == "sqlite":
        store.engine.dispose()
        path = store.url.removeprefix("sqlite:///")
        for name in (path, path + "-wal"):
            if os.path.exists(name):
                data = Path(name).read_bytes()
                for secret in secrets:
                    assert secret.encode() not in data, (name, secret)


def test_hostile_variable_values_stay_data_in_shell_commands(
    harness, store, settings, clock, write_dag, tmp_path
):
    pwned = tmp_path / "pwned"
    hostile = f"$(touch {pwned}) `touch {pwned}`; touch {pwned} \"'\n\\"
    plant(store, settings, clock.now())
    store.set_variable("hostile", hostile, clock.now(), box_of(settings))
    run = _run(harness, write_dag)
    assert store.task_instance(run.run_id, "hostile").state == "success"
    assert not pwned.exists()
    assert f"{hostile} {hostile}\n" in _log(store, settings, run.run_id, "hostile")


def test_environment_overrides_the_database(
    harness, store, settings, clock, write_dag, monkeypatch
):
    plant(store, settings, clock.now())
    monkeypatch.setenv("ORCHESTRATOR_VAR_REGION", "apac")
    monkeypatch.setenv(
        "ORCHESTRATOR_CONN_WAREHOUSE", "postgresql://other:env-pass-123@env.host:6543/x"
    )
    run = _run(harness, write_dag)
    dump = _log(store, settings, run.run_id, "dump")
    assert "host=env.host user=other pw=*** region=apac" in dump
    assert "env-pass-123" not in dump


def test_secrets_are_encrypted_and_a_wrong_key_is_refused(store, settings, clock, tmp_path):
    plant(store, settings, clock.now())
    with store.engine.connect() as conn:
        val = conn.execute(text("SELECT val FROM variables WHERE key = 'api_token'")).scalar()
        assert val.startswith("gAAAA") and TOKEN not in val
        plain = conn.execute(text("SELECT val FROM variables WHERE key = 'region'")).scalar()
        assert plain == "emea"
    assert oct(os.stat(Path(settings.state_dir) / "secrets_key").st_mode & 0o777) == "0o600"
    other = load_box(None, str(tmp_path / "elsewhere"))
    with pytest.raises(SecretsKeyError, match="cannot decrypt variable 'api_token'"):
        store.get_variable("api_token", other)
    with pytest.raises(SecretsKeyError, match="not the key it was encrypted with"):
        store.check_secrets_key(other)
    store.check_secrets_key(box_of(settings))
    with pytest.raises(SecretsKeyError, match="not a Fernet key"):
        load_box("not-a-key", str(tmp_path))


def test_rotation_reencrypts_everything_with_the_new_key(store, settings, clock):
    from cryptography.fernet import Fernet

    plant(store, settings, clock.now())
    old = box_of(settings)
    new_key = Fernet.generate_key().decode()
    both = load_box(f"{new_key},{old.keys[0]}", settings.state_dir)
    assert store.rotate_secrets_key(both) == (2, 1)
    only_new = load_box(new_key, settings.state_dir)
    assert store.get_variable("api_token", only_new).value == TOKEN
    assert store.get_connection("warehouse", only_new).password == PASSWORD
    with pytest.raises(SecretsKeyError):
        store.get_connection("warehouse", old)


def test_bad_input_is_refused_and_stores_nothing(store, settings, clock):
    box = box_of(settings)
    plant(store, settings, clock.now())
    with pytest.raises(ConfigError, match="not JSON"):
        store.set_variable("broken", "{nope", clock.now(), box, is_json=True)
    with pytest.raises(ConfigError, match="exists already"):
        store.add_connection(Connection.from_uri("warehouse", "http://h"), clock.now(), box)
    with pytest.raises(ConfigError, match="variable name"):
        store.set_variable("bad name!", "x", clock.now(), box)
    with pytest.raises(ConfigError, match="exists already"):  # all or nothing
        store.import_connections(
            [Connection.from_uri("fresh", "http://h"), Connection.from_uri("warehouse", "x://y")],
            clock.now(),
            box,
            overwrite=False,
        )
    assert store.get_variable("broken", box) is None
    assert store.get_connection("fresh", box) is None
    assert store.get_connection("warehouse", box).password == PASSWORD


def test_listing_never_decrypts(store, settings, clock):
    plant(store, settings, clock.now())
    shown = {v.key: v.value for v in store.list_variables()}
    assert shown["api_token"] == "***" and shown["region"] == "emea"
    [conn] = store.list_connections()
    assert conn["password"] == "***" and conn["extra"] == "***"


def test_an_http_task_sends_credentials_and_its_log_and_result_are_masked(
    harness, store, settings, clock, write_dag
):
    from tests.integration.test_http_tasks import Server

    plant(store, settings, clock.now())
    server = Server()
    try:
        write_dag(
            "web.py",
            f"""
from orchestrator import DAG

with DAG("web", schedule=None) as dag:
    dag.http("call", "{server.base}/echo", method="POST",
             headers={{"Authorization": "Bearer {{{{ var.value.api_token }}}}"}},
             json={{"user": "{{{{ conn.warehouse.login }}}}", "pw": "{{{{ conn.warehouse.password }}}}"}})
""",
        )
        harness.parse()
        run = store.trigger_run("web", clock.now())
        assert harness.run_until_finished(run.run_id).state == "success"
    finally:
        server.close()
    [sent] = server.requests
    assert sent["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert json.loads(sent["body"]) == {"user": "etl", "pw": PASSWORD}
    result = store.results(run.run_id, ["call"])["call"]
    log = _log(store, settings, run.run_id, "call")
    for written in (result, log):
        assert PASSWORD not in written and TOKEN not in written
    assert "***" in result


FD_DAG = """
import os, subprocess, sys
from orchestrator import DAG, task

with DAG("fds", schedule=None) as dag:

    @task
    def leak(ctx):
        token = ctx.variable("api_token")
        subprocess.run(["echo", "child says " + token], check=True)  # inherits fds 1, 2
        os.write(2, ("raw write " + token + "\\n").encode())
        subprocess.run(["echo", "to sys.stdout " + token], stdout=sys.stdout, check=True)
        print("printed", token)
"""


def test_what_a_tasks_subprocesses_write_to_fds_1_and_2_is_in_its_log_and_masked(
    harness, store, settings, clock, write_dag, capfd
):
    plant(store, settings, clock.now())
    write_dag("fds.py", FD_DAG)
    harness.parse()
    run = harness.store.trigger_run("fds", harness.clock.now())
    harness.run_until_finished(run.run_id)
    assert store.task_instance(run.run_id, "leak").state == "success"
    log = _log(store, settings, run.run_id, "leak")
    for line in ("child says ***", "raw write ***", "to sys.stdout ***", "printed ***"):
        assert line in log, log
    assert TOKEN not in log
    # and none of it reached the worker's own terminal
    out, err = capfd.readouterr()
    assert TOKEN not in out + err and "child says" not in out + err


SPELLINGS_DAG = """
import base64, binascii, urllib.parse
from orchestrator import DAG, task

with DAG("spell", schedule=None) as dag:
    dag.shell("shout", "echo upper={{ var.value.api_token | upper }} "
              "lower={{ var.value.api_token | lower }} "
              "hex=$(printf %s {{ var.value.api_token }} | od -An -tx1 | tr -d ' \\n')")

    @task
    def leak(ctx):
        t = ctx.variable("api_token")
        print("b64", base64.b64encode(t.encode()).decode())
        print("basic", base64.b64encode(("ada:" + t).encode()).decode())
        print("hex", binascii.hexlify(t.encode()).decode())
        print("url", urllib.parse.quote(t.upper(), safe=""))
        return {"lower": t.lower(), "b64": base64.urlsafe_b64encode(t.encode()).decode()}

    @task
    def fail(ctx):
        raise RuntimeError("bad token " + ctx.variable("api_token").upper())
"""


def test_transformed_spellings_of_a_secret_are_masked_in_logs_errors_and_results(
    harness, store, settings, clock, write_dag
):
    """Issue 24 item 8: `{{ var.value.api_token | upper }}`, base64, hex and URL-encoded
    spellings reached logs, errors and results."""
    import base64

    plant(store, settings, clock.now())
    write_dag("spell.py", SPELLINGS_DAG)
    harness.parse()
    assert store.import_errors() == []
    run = harness.store.trigger_run("spell", harness.clock.now())
    harness.run_until_finished(run.run_id)
    leaked = {TOKEN.upper(), TOKEN.lower(), TOKEN.encode().hex(),
              base64.b64encode(TOKEN.encode()).decode().rstrip("="),
              base64.b64encode(("ada:" + TOKEN).encode()).decode()[8:]}  # fmt: skip
    texts = [_log(store, settings, run.run_id, t) for t in ("shout", "leak", "fail")]
    texts.append(store.task_instance(run.run_id, "fail").error or "")
    texts.append(json.dumps(store.results(run.run_id, ["leak"])))
    for shown in texts:
        for spelled in leaked:
            assert spelled not in shown, (spelled, shown[-400:])
    assert "upper=*** lower=*** hex=***" in texts[0]
    assert "bad token ***" in texts[3]
