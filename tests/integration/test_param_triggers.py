"""Typed params checked on every trigger path, on both backends (issue 25, item 6): the
CLI (`dags trigger`, `backfill`, `tasks test`: exit 2), the JSON API (trigger and
backfill: 400), the UI form, and the store itself; each refusal names the param and the
rule and stores nothing. (`trigger_dag` tasks: tests/integration/test_templates_in_tries.py.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from orchestrator.cli import main
from orchestrator.errors import ParamValidationError
from webui import create_app

SOURCE = """
from datetime import datetime

from orchestrator import DAG, Param, task

with DAG("typed", schedule=None, params={
    "day": Param("2026-01-01", type="string", format="date", description="the day to load"),
    "limit": Param(100, type="integer", minimum=1, maximum=1000),
    "mode": Param("delta", enum=["delta", "full"]),
    "to": Param(type="string", format="email"),
    "opts": Param({"a": 1}, type="object"),
    "dry_run": False,
}) as typed:
    @task
    def show(ctx):
        return ctx.params

with DAG("nightly", schedule="@daily", start_date=datetime(2026, 1, 1),
         params={"limit": Param(10, type="integer", maximum=50)}) as nightly:
    nightly.shell("noop", "echo {{ params.limit }}")

with DAG("strict", schedule="@daily", start_date=datetime(2026, 1, 1), params={"limit": 10},
         strict_conf=True) as strict:
    strict.shell("noop", "echo {{ params.limit }}")
"""

RULE = "param 'limit': 5000 is greater than the maximum of 1000 (rule maximum: 1000)"


@pytest.fixture
def parsed(write_dag, settings, monkeypatch, store):
    write_dag("typed.py", SOURCE)
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    assert main(["dags", "parse"]) == 0
    assert store.import_errors() == []
    return store


def _nothing_stored(store) -> None:
    assert store.list_runs() == [] and store.list_backfills() == []


@pytest.mark.parametrize(
    ("conf", "message"),
    [
        ({"to": "a@b.example", "limit": 5000}, RULE),
        ({"to": "a@b.example", "mode": "all"}, "param 'mode': 'all' is not one of ['delta', 'full']"),
        ({"to": "a@b.example", "day": "tomorrow"}, "param 'day': 'tomorrow' is not a 'date'"),
        ({"limit": 3}, "param 'to' is required (it has no default): give it in the conf (rule required)"),
    ],
)  # fmt: skip
def test_cli_trigger_exits_2_naming_the_param_and_the_rule(parsed, capsys, conf, message):
    capsys.readouterr()
    assert main(["dags", "trigger", "typed", "--conf", json.dumps(conf)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("orchestrator: error: DAG 'typed': ") and message in err
    _nothing_stored(parsed)


def test_cli_trigger_stores_a_valid_conf(parsed, capsys):
    conf = {"to": "ops@example.com", "limit": 1000, "mode": "full", "day": "2026-02-28"}
    assert main(["dags", "trigger", "typed", "--conf", json.dumps(conf), "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["conf"] == conf


def test_conf_keys_that_are_not_params_are_kept_by_default(parsed, capsys):
    """Airflow's rule (issue 26): an undeclared key reaches dag_run.conf and params."""
    conf = {"to": "a@b.example", "nope": 1, "nested": {"x": [1]}}
    assert main(["dags", "trigger", "typed", "--conf", json.dumps(conf), "--json"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["conf"] == conf
    argv = ["backfill", "nightly", "--start", "2026-01-02", "--end", "2026-01-02", "--no-wait"]
    assert main([*argv, "--conf", '{"extra": "x"}']) == 0
    assert [r.conf for r in parsed.list_runs("nightly")] == [{"extra": "x"}]
    argv = ["tasks", "test", "typed", "show", "--params", json.dumps(conf)]
    assert main(argv) == 0
    assert '"nope": 1' in capsys.readouterr().out  # ctx.params holds it


STRICT = "DAG 'strict': unknown param 'nope' (declared params: limit); the DAG takes only "


def test_strict_conf_refuses_undeclared_keys_on_every_cli_path(parsed, capsys):
    capsys.readouterr()
    assert main(["dags", "trigger", "strict", "-c", '{"nope": 1}']) == 2
    assert STRICT in capsys.readouterr().err
    argv = ["backfill", "strict", "--start", "2026-01-02", "--end", "2026-01-03", "--no-wait"]
    assert main([*argv, "--conf", '{"nope": 1}']) == 2
    assert STRICT in capsys.readouterr().err
    argv = ["backfill", "create", "--dag-id", "strict", "--from-date", "2026-01-02"]
    argv += ["--to-date", "2026-01-03", "--dag-run-conf", '{"nope": 1}', "--no-wait"]
    assert main(argv) == 2
    assert STRICT in capsys.readouterr().err
    assert main(["tasks", "test", "strict", "noop", "--params", '{"nope": 1}']) == 2
    assert "--params: " + STRICT in capsys.readouterr().err
    _nothing_stored(parsed)
    assert main(["dags", "trigger", "strict", "--conf", '{"limit": 3}']) == 0
    assert [r.conf for r in parsed.list_runs("strict")] == [{"limit": 3}]


def test_strict_conf_refuses_undeclared_keys_in_the_store_and_the_api(parsed, client):
    spec = parsed.current_spec("strict")
    assert spec.strict_conf and not parsed.current_spec("typed").strict_conf
    now = datetime(2026, 1, 2, tzinfo=UTC)
    with pytest.raises(ParamValidationError, match="unknown param 'nope'"):
        parsed.trigger_run("strict", now, conf={"nope": 1})
    with pytest.raises(ParamValidationError, match="unknown param 'nope'"):
        parsed.create_backfill(
            "strict", [(now, spec.schedule.data_interval(now))], now, start=now, end=now,
            max_active_runs=1, conf={"nope": 1},
        )  # fmt: skip
    headers = {"X-CSRF-Token": client.get("/api/v1/csrf").get_json()["csrf_token"]}
    r = client.post("/api/v1/dags/strict/runs", json={"conf": {"nope": 1}}, headers=headers)
    assert r.status_code == 400 and STRICT in r.get_json()["detail"]
    r = client.post(
        "/api/v1/dags/strict/backfill",
        json={"start": "2026-01-02", "end": "2026-01-03", "conf": {"nope": 1}},
        headers=headers,
    )
    assert r.status_code == 400 and STRICT in r.get_json()["detail"]
    _nothing_stored(parsed)
    r = client.post("/api/v1/dags/typed/runs", json={"conf": {"to": "a@b.example", "x": 1}},
                    headers=headers)  # fmt: skip
    assert r.status_code == 201
    assert parsed.get_run(r.get_json()["run_id"]).conf == {"to": "a@b.example", "x": 1}


def test_cli_backfill_checks_its_conf_before_creating_anything(parsed, capsys):
    argv = ["backfill", "nightly", "--start", "2026-01-02", "--end", "2026-01-03", "--no-wait"]
    assert main([*argv, "--conf", '{"limit": 51}']) == 2
    err = capsys.readouterr().err
    assert "DAG 'nightly': param 'limit': 51 is greater than the maximum of 50" in err
    assert main([*argv, "--dry-run", "--conf", '{"limit": "x"}']) == 2  # even a dry run
    _nothing_stored(parsed)
    assert main([*argv, "--conf", '{"limit": 7}']) == 0
    runs = parsed.list_runs("nightly")
    assert len(runs) == 2 and {r.run_type for r in runs} == {"backfill"}
    assert [r.conf for r in runs] == [{"limit": 7}, {"limit": 7}]


def test_the_store_refuses_a_backfill_conf_and_stores_nothing(parsed):
    nightly = parsed.spec("nightly", parsed.get_dag("nightly").version_hash)
    when = datetime(2026, 1, 2, tzinfo=UTC)
    with pytest.raises(ParamValidationError, match="param 'limit': 99 is greater"):
        parsed.create_backfill(
            "nightly",
            [(when, nightly.schedule.data_interval(when))],
            when,
            start=when,
            end=when,
            max_active_runs=1,
            conf={"limit": 99},
        )
    _nothing_stored(parsed)


def test_tasks_test_checks_its_params(parsed, capsys):
    capsys.readouterr()
    assert main(["tasks", "test", "typed", "show", "--params", '{"limit": 0}']) == 2
    err = capsys.readouterr().err
    assert "--params: DAG 'typed': param 'to' is required" in err
    argv = ["tasks", "test", "typed", "show", "--params", '{"to": "a@b.example", "limit": 0}']
    assert main(argv) == 2
    assert "param 'limit': 0 is less than the minimum of 1 (rule minimum: 1)" in (
        capsys.readouterr().err
    )
    assert main(["tasks", "test", "typed", "show", "--params", '{"to": "a@b.example"}']) == 0
    assert '"to": "a@b.example"' in capsys.readouterr().out


@pytest.fixture
def client(parsed, settings, clock):
    app = create_app(settings, parsed, clock=clock)
    app.config["TESTING"] = True
    return app.test_client()


def test_the_api_answers_400_naming_the_param_and_the_rule(client, parsed):
    headers = {"X-CSRF-Token": client.get("/api/v1/csrf").get_json()["csrf_token"]}
    r = client.post(
        "/api/v1/dags/typed/runs",
        json={"conf": {"to": "a@b.example", "limit": 5000}},
        headers=headers,
    )
    assert r.status_code == 400 and RULE in r.get_json()["detail"]
    r = client.post("/api/v1/dags/typed/runs", json={"conf": {}}, headers=headers)
    assert r.status_code == 400 and "param 'to' is required" in r.get_json()["detail"]
    r = client.post(
        "/api/v1/dags/nightly/backfill",
        json={"start": "2026-01-02", "end": "2026-01-03", "conf": {"limit": 51}},
        headers=headers,
    )
    assert r.status_code == 400 and "param 'limit': 51 is greater" in r.get_json()["detail"]
    _nothing_stored(parsed)
    r = client.post(
        "/api/v1/dags/typed/runs", json={"conf": {"to": "a@b.example", "limit": 5}}, headers=headers
    )
    assert r.status_code == 201
    assert parsed.get_run(r.get_json()["run_id"]).conf == {"to": "a@b.example", "limit": 5}
    r = client.post(
        "/api/v1/dags/nightly/backfill",
        json={"start": "2026-01-02", "end": "2026-01-02", "conf": {"limit": 5}},
        headers=headers,
    )
    assert r.status_code == 200 and [run.conf for run in parsed.list_runs("nightly")] == [
        {"limit": 5}
    ]
    schemas = client.get("/api/v1/dags/typed").get_json()
    assert schemas["param_schemas"]["limit"] == {"type": "integer", "minimum": 1, "maximum": 1000}
    assert schemas["param_schemas"]["dry_run"] == {"type": "boolean"}
    assert schemas["required_params"] == ["to"]


def test_the_ui_form_types_each_value_and_flashes_a_broken_rule(client, parsed):
    csrf = client.get("/api/v1/csrf").get_json()["csrf_token"]
    form = {
        "csrf_token": csrf,
        "param.day": "2026-03-01",
        "param.limit": "5000",
        "param.mode": '"full"',
        "param.to": "ops@example.com",
        "param.opts": '{"a": 2}',
    }
    r = client.post("/dags/typed/trigger", data=form)
    assert r.status_code == 302 and r.headers["Location"] == "/dags/typed"
    page = client.get("/").get_data(as_text=True)
    assert "param &#39;limit&#39;: 5000 is greater than the maximum of 1000" in page
    _nothing_stored(parsed)
    r = client.post(
        "/dags/typed/trigger", data=form | {"param.limit": "12", "param.dry_run": "true"}
    )
    [run] = parsed.list_runs("typed")
    assert r.headers["Location"] == f"/runs/{run.run_id}"
    assert run.conf == {
        "day": "2026-03-01", "limit": 12, "mode": "full", "to": "ops@example.com",
        "opts": {"a": 2}, "dry_run": True,
    }  # fmt: skip
    client.post("/dags/typed/trigger", data=form | {"param.mode": '"all"'})
    page = client.get("/").get_data(as_text=True)
    assert "param &#39;mode&#39;: &#34;all&#34; is not one of its choices" in page
    assert len(parsed.list_runs("typed")) == 1


def test_the_ui_form_takes_more_conf_unless_the_dag_is_strict(client, parsed):
    """Issue 26: a JSON object field below the params, as Airflow's configuration JSON."""
    assert 'name="conf_extra"' in client.get("/dags/typed").get_data(as_text=True)
    assert 'name="conf_extra"' not in client.get("/dags/strict").get_data(as_text=True)
    csrf = client.get("/api/v1/csrf").get_json()["csrf_token"]
    form = {"csrf_token": csrf, "param.to": "ops@example.com"}
    for extra, message in (
        ("[1]", "more conf: expected a JSON object like {&#34;key&#34;: 1}, got list"),
        ('{"limit": 3}', "more conf: &#39;limit&#39; is a param: give it in its own field"),
        ('{"a": ', "more conf: not valid JSON (Expecting value"),
    ):
        r = client.post("/dags/typed/trigger", data=form | {"conf_extra": extra})
        assert r.status_code == 302
        assert message in client.get("/").get_data(as_text=True)
    r = client.post("/dags/strict/trigger", data={"csrf_token": csrf, "conf_extra": '{"nope": 1}'})
    page = client.get("/").get_data(as_text=True)
    assert "unknown param &#39;nope&#39; (declared params: limit); the DAG takes only" in page
    _nothing_stored(parsed)
    extra = '{"region": "eu", "<b>": [1]}'
    client.post("/dags/typed/trigger", data=form | {"conf_extra": extra})
    [run] = parsed.list_runs("typed")
    assert (
        run.conf["region"] == "eu"
        and run.conf["<b>"] == [1]
        and run.conf["to"] == "ops@example.com"
    )
