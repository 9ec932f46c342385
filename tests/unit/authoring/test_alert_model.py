"""Alert declarations, the pure watchdog checks, JSON logs and --older-than."""

from __future__ import annotations

import io
import json
import logging
from datetime import UTC, datetime, timedelta

import pytest

from orchestrator import DAG, task
from orchestrator.authoring import alerts as am
from orchestrator.authoring.spec import DagSpec, serialize_dag
from orchestrator.errors import ConfigError, DagDefinitionError
from orchestrator.observability.logging_setup import JsonFormatter
from orchestrator.observability.retention import parse_age
from orchestrator.scheduling.schedule import parse_schedule

T = datetime(2026, 1, 1, tzinfo=UTC)


def test_declarations_serialize_and_round_trip():
    def hook(alert):
        pass

    with DAG("a", schedule=None, deadline=timedelta(hours=1), on_missed=hook,
             alerts=["https://h.example/x", am.email("ops@example.com", events=["run_late"])]) as d:  # fmt: skip
        task(lambda: None, task_id="t", alerts=["mailto:a@b.c,d@e.f"], on_retry=hook)
    spec = DagSpec.from_dict(serialize_dag(d))
    assert spec.deadline == timedelta(hours=1)
    assert spec.callbacks == ("on_missed",)
    assert [n["kind"] for n in spec.alerts] == ["webhook", "email"]
    assert spec.alerts[1]["events"] == ["run_late"]
    assert spec.tasks["t"].alerts[0]["target"] == ["a@b.c", "d@e.f"]
    assert spec.tasks["t"].callbacks == ("on_retry",)


def test_a_dag_without_alerts_serializes_as_before():
    with DAG("plain", schedule=None) as d:
        task(lambda: None, task_id="t")
    data = serialize_dag(d)
    assert "alerts" not in data and "deadline" not in data and "alerts" not in data["tasks"][0]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"alerts": ["ftp://x"]}, "expected an http"),
        ({"alerts": [am.webhook("http://x", events=["nope"])]}, "unknown alert event"),
        ({"deadline": -5}, "deadline must be a positive"),
        ({"on_failure": "not callable"}, "on_failure must be a function"),
    ],
)
def test_bad_declarations_name_the_dag(kw, message):
    with pytest.raises(DagDefinitionError, match=message) as err:
        DAG("bad", schedule=None, **kw)
    assert "DAG 'bad'" in str(err.value) and "test_alert_model.py" in str(err.value)


def test_missed_fire_time():
    s = parse_schedule("@hourly", start=T)
    grace = timedelta(minutes=5)
    prev = s.previous_before
    assert am.missed_fire_time(prev, T + timedelta(hours=1, minutes=4), grace, T) == T
    assert am.missed_fire_time(prev, T + timedelta(hours=1, minutes=6), grace, T) == T + timedelta(
        hours=1
    )
    since = T + timedelta(hours=1, minutes=1)  # e.g. unpaused after the fire time
    assert am.missed_fire_time(prev, T + timedelta(hours=1, minutes=6), grace, since) is None


def test_is_late():
    d = timedelta(minutes=10)
    assert not am.is_late(T, None, d, T + timedelta(minutes=10))
    assert am.is_late(T, None, d, T + timedelta(minutes=11))
    assert not am.is_late(T, T + timedelta(minutes=9), d, T + timedelta(hours=1))
    assert am.is_late(T, T + timedelta(minutes=12), d, T + timedelta(hours=1))


def test_find_duplicates():
    rows = [("a", T, "r1"), ("a", T, "r2"), ("b", T, "r3"), ("a", T + timedelta(1), "r4")]
    assert am.find_duplicates(rows) == [("a", T, ["r1", "r2"])]
    assert am.find_duplicates(rows[2:]) == []


def test_recovery():
    assert am.is_recovery(["failed"])
    assert not am.is_recovery(["success"]) and not am.is_recovery([])


def test_json_log_lines_carry_the_context_fields():
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("test.json")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("started dag_id=%s run_id=%s task_id=%s try=%s", "etl", "r1", "load", 2)
        logger.warning("plain", extra={"dag_id": "x"})
    finally:
        logger.removeHandler(handler)
    first, second = (json.loads(line) for line in stream.getvalue().splitlines())
    assert first["dag_id"] == "etl" and first["run_id"] == "r1" and first["task_id"] == "load"
    assert first["try"] == 2 and first["level"] == "WARNING" and first["logger"] == "test.json"
    assert second["dag_id"] == "x"


def test_parse_age():
    assert parse_age("90d") == timedelta(days=90)
    assert parse_age("2w") == timedelta(weeks=2)
    with pytest.raises(ConfigError, match="--older-than"):
        parse_age("ninety days")
