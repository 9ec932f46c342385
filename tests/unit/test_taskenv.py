"""The task environment's allow-list (orchestrator.engine.taskenv): pure rules."""

from __future__ import annotations

import pickle

import pytest

from orchestrator.engine.taskenv import EnvPolicy, secret_setting_names
from orchestrator.settings import Settings

WORKER_ENV = {
    "PATH": "/usr/bin",
    "HOME": "/home/w",
    "LC_ALL": "C.UTF-8",
    "PYTHONPATH": "/srv/lib",
    "EDITOR": "vi",
    "AWS_SECRET_ACCESS_KEY": "aws",
    "APP_MODE": "prod",
    "APP_SECRET": "x",
    "ORCHESTRATOR_DAGS_FOLDER": "/srv/dags",
    "ORCHESTRATOR_VAR_REGION": "emea",
    "ORCHESTRATOR_CONN_WAREHOUSE": "postgresql://etl:pw@db/sales",
    "ORCHESTRATOR_DATABASE_URL": "postgresql://orch:dbpw@db/orch",
    "ORCHESTRATOR_METRICS_TOKEN": "metrics-token",
}


def test_the_default_allow_list():
    assert sorted(EnvPolicy().filter(WORKER_ENV)) == [
        "HOME",
        "LC_ALL",
        "PATH",
        "PYTHONPATH",
    ]


@pytest.mark.parametrize(
    ("allow", "extra", "deny", "expected"),
    [
        # the more specific pattern decides; a tie denies
        ("PATH", "APP_*", "*_SECRET", ["APP_MODE", "PATH"]),
        ("PATH", "APP_*,APP_SECRET", "*_SECRET", ["APP_MODE", "APP_SECRET", "PATH"]),
        ("*", "", "*", []),
        ("*", "", "ORCHESTRATOR_*", sorted(k for k in WORKER_ENV if not k.startswith("ORCH"))),
        (
            "PATH",
            "ORCHESTRATOR_DAGS_FOLDER",
            "ORCHESTRATOR_*",
            ["ORCHESTRATOR_DAGS_FOLDER", "PATH"],
        ),
        ("", "", "", []),
        # the settings' secrets never, even named exactly and nothing denied
        ("ORCHESTRATOR_DATABASE_URL,ORCHESTRATOR_METRICS_TOKEN", "", "", []),
    ],
)
def test_allow_extra_and_deny(allow, extra, deny, expected):
    assert sorted(EnvPolicy.from_settings(deny, allow, extra).filter(WORKER_ENV)) == expected


def test_the_settings_secrets_are_withheld_by_name_and_by_value():
    settings = Settings.load(
        {
            "ORCHESTRATOR_DATABASE_URL": "postgresql://orch:dbpw@db/orch",
            "ORCHESTRATOR_METRICS_TOKEN": "metrics-token",
            "ORCHESTRATOR_TASK_ENV_ALLOW": "*",
            "ORCHESTRATOR_TASK_ENV_DENY": "",
        },
        cwd="/srv",
    )
    policy = EnvPolicy.for_settings(settings)
    env = dict(WORKER_ENV, DATABASE_URL="postgresql://orch:dbpw@db/orch", TOKEN="metrics-token")
    kept = policy.filter(env)
    assert "ORCHESTRATOR_DATABASE_URL" not in kept and "ORCHESTRATOR_METRICS_TOKEN" not in kept
    assert "DATABASE_URL" not in kept and "TOKEN" not in kept  # copies under other names
    assert kept["ORCHESTRATOR_CONN_WAREHOUSE"] == "postgresql://etl:pw@db/sales"
    assert "EDITOR" in kept
    # what a task process receives holds no secret value, only digests
    assert b"dbpw" not in pickle.dumps(policy) and b"metrics-token" not in pickle.dumps(policy)


def test_task_env_extra_adds_to_the_defaults():
    settings = Settings.load({"ORCHESTRATOR_TASK_ENV_EXTRA": "EDITOR, APP_*"}, cwd="/srv")
    kept = EnvPolicy.for_settings(settings).filter(WORKER_ENV)
    assert {"PATH", "HOME", "EDITOR", "APP_MODE", "APP_SECRET"} <= set(kept)
    assert "AWS_SECRET_ACCESS_KEY" not in kept and "ORCHESTRATOR_DAGS_FOLDER" not in kept


def test_specificity_counts_the_characters_that_are_not_stars():
    """Issue 31: APP_MO* (6 such characters) beats APP_*_* (5), though the allow
    pattern is longer counting its stars."""
    policy = EnvPolicy.from_settings("APP_MO*", "APP_*_*")
    assert policy.filter({"APP_MODE_X": "1", "APP_RUN_X": "2"}) == {"APP_RUN_X": "2"}
    assert EnvPolicy.from_settings("APP_*_*", "APP_MO*").filter({"APP_MODE_X": "1"}) == {
        "APP_MODE_X": "1"
    }


def test_a_settings_value_is_withheld_only_from_a_secret_setting_of_six_characters_or_more():
    """Issue 31: a task may see a variable whose value equals a setting that is no
    secret (the DAGs folder), and a named non-secret setting it is allowed; a copy of a
    secret setting's value is withheld from six characters on (shorter ones would
    withhold every variable that happens to say the same short word)."""
    environ = {
        "ORCHESTRATOR_DAGS_FOLDER": "/srv/dags",
        "ORCHESTRATOR_TASK_ENV_ALLOW": "*",
        "ORCHESTRATOR_TASK_ENV_DENY": "",
        "ORCHESTRATOR_TASK_ENV_EXTRA": "ORCHESTRATOR_DAGS_FOLDER",
    }
    for token, withheld in (("abcdef", True), ("abcde", False)):
        settings = Settings.load(environ | {"ORCHESTRATOR_METRICS_TOKEN": token}, cwd="/srv")
        policy = EnvPolicy.for_settings(settings)
        kept = policy.filter(
            {"DAGS": "/srv/dags", "COPY": token, "ORCHESTRATOR_DAGS_FOLDER": "/srv/dags"}
        )
        assert kept["DAGS"] == "/srv/dags" and kept["ORCHESTRATOR_DAGS_FOLDER"] == "/srv/dags"
        assert ("COPY" not in kept) is withheld, token


def test_a_task_process_drops_what_it_may_not_inherit_from_its_own_environment(monkeypatch):
    import orchestrator.engine.taskenv as taskenv

    environ = {"PATH": "/usr/bin", "EDITOR": "vi", "ORCHESTRATOR_DATABASE_URL": "postgresql://x"}
    monkeypatch.setattr(taskenv.os, "environ", environ)
    EnvPolicy.from_settings("ORCHESTRATOR_*", "PATH,EDITOR").apply_to_this_process()
    assert environ == {"PATH": "/usr/bin", "EDITOR": "vi"}


def test_the_secret_settings_are_named_by_the_words_in_their_names():
    names = ["dags_folder", "metrics_token", "web_password", "secrets_key", "lease_seconds"]
    assert secret_setting_names(names) == (
        "ORCHESTRATOR_METRICS_TOKEN",
        "ORCHESTRATOR_WEB_PASSWORD",
        "ORCHESTRATOR_SECRETS_KEY",
    )
