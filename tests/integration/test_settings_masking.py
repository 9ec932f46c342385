"""The settings' secrets are masked in logs like variables (issue 24, item 2), on both
backends: a try log holding the metrics token, a secrets key and the database password
shows *** in `orchestrator tasks logs` (text and --json) and in the web UI's log API;
the orchestrator's own log lines mask them too. On main they were shown as written."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys

from cryptography.fernet import Fernet

from orchestrator.engine.settings_secrets import settings_masker, settings_secret_values
from orchestrator.observability.logging_setup import mask_with
from tests.helpers import Harness
from webui import create_app

TOKEN = "metrics-t0ken-" + "9f2c4e6a8b"
KEY = Fernet.generate_key().decode()
PASSWORD = "db-pa55word-xyz"

LEAKY = f"""
from orchestrator import DAG, task

with DAG("leaky", schedule=None) as dag:
    @task
    def leak(ctx):
        print("token={TOKEN} key={KEY} url=postgresql://etl:{PASSWORD}@db/x")
"""


def _cli_env(settings) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env.update(
        ORCHESTRATOR_DATABASE_URL=settings.database_url,
        ORCHESTRATOR_STATE_DIR=settings.state_dir,
        ORCHESTRATOR_DAGS_FOLDER=settings.dags_folder,
        ORCHESTRATOR_METRICS_TOKEN=TOKEN,
        ORCHESTRATOR_SECRETS_KEY=KEY,
    )
    return env


def test_the_settings_secrets_are_masked_in_try_logs(store, settings, clock, write_dag):
    write_dag("leaky.py", LEAKY)
    harness = Harness(store, settings, clock)
    try:
        assert harness.parse().errors == 0
        run = store.trigger_run("leaky", clock.now())
        run_id = harness.run_until_finished(run.run_id).run_id
    finally:
        harness.close()
    [t] = store.tries(run_id, "leak")
    path = os.path.join(settings.log_dir, t.log_path)
    with open(path) as f:
        assert TOKEN in f.read()  # as printed
    argv = [sys.executable, "-m", "orchestrator", "tasks", "logs", run_id, "leak"]
    text = subprocess.run(argv, env=_cli_env(settings), capture_output=True, timeout=60)
    as_json = subprocess.run([*argv, "--json"], env=_cli_env(settings), capture_output=True,
                             timeout=60)  # fmt: skip
    assert text.returncode == 0 and as_json.returncode == 0, text.stderr
    for out in (text.stdout.decode(), json.loads(as_json.stdout)["log"]):
        assert "token=*** key=***" in out
        assert TOKEN not in out and KEY not in out
    web = create_app(settings.with_(metrics_token=TOKEN, secrets_key=KEY), store)
    chunk = web.test_client().get(f"/api/v1/runs/{run_id}/tasks/leak/tries/1/log").get_json()
    assert "token=*** key=***" in chunk["text"] and TOKEN not in chunk["text"]
    assert chunk["next_offset"] == os.path.getsize(path)
    # the log viewer's other ways in (issue 27): its pages, its search, the download
    client = web.test_client()
    api = f"/api/v1/runs/{run_id}/tasks/leak/tries/1/log"
    page = client.get(api + "?format=html").get_json()
    assert "token=*** key=***" in page["text"] and TOKEN not in page["text"] + page["html"]
    assert client.get(api + "?q=" + TOKEN[:12]).get_json()["matches"] == []  # not found
    found = client.get(api + "?q=token=").get_json()["matches"]
    assert found and all(TOKEN not in m["text"] for m in found)
    download = client.get(f"/runs/{run_id}/tasks/leak/tries/1/log.txt").get_data(as_text=True)
    assert "token=*** key=***" in download and TOKEN not in download and KEY not in download
    assert TOKEN not in client.get(f"/runs/{run_id}/tasks/leak").get_data(as_text=True)


def test_the_values_masked(settings, tmp_path):
    pg = "postgresql+psycopg://etl:" + PASSWORD + "@db.internal/orch"
    key_file = tmp_path / "elsewhere" / "key"
    key_file.parent.mkdir()
    key_file.write_text(KEY + "\n")
    web_file = tmp_path / "web"
    web_file.write_text("ab" * 32 + "\n")
    s = settings.with_(database_url=pg, metrics_token=TOKEN, secrets_key_file=str(key_file),
                       web_secret_file=str(web_file))  # fmt: skip
    assert set(settings_secret_values(s)) == {PASSWORD, TOKEN, KEY, "ab" * 32}
    missing = settings.with_(state_dir=str(tmp_path / "none"))
    assert settings_secret_values(missing) == []
    assert not (tmp_path / "none").exists()  # read if there, never made


def test_the_orchestrators_own_log_lines_mask_them(settings):
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        mask_with(settings_masker(settings.with_(metrics_token=TOKEN)).mask)
        logging.getLogger("orchestrator.test").warning("cannot reach %s with %s", "db", TOKEN)
        try:
            raise RuntimeError(f"token {TOKEN}")
        except RuntimeError:
            logging.getLogger("orchestrator.test").exception("boom")
    finally:
        root.removeHandler(handler)
    assert "cannot reach db with ***" in stream.getvalue()
    assert TOKEN not in stream.getvalue()
