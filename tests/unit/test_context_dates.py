"""``ctx.ds`` / ``ds_nodash`` / ``ts``: the logical date in the DAG's timezone, as the
shell templates have it (Airflow's names, so DAG files port)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from orchestrator.authoring.context import TaskContext


def _ctx(when: datetime, timezone: str) -> TaskContext:
    return TaskContext(
        dag_id="d", run_id="r", task_id="t", logical_date=when, data_interval_start=when,
        data_interval_end=when, try_number=1, params={}, idempotency_key="k",
        log=logging.getLogger("t"), timezone=timezone,
    )  # fmt: skip


def test_ds_is_the_logical_date_in_the_dags_timezone_as_in_templates():
    late = datetime(2026, 1, 31, 23, 30, tzinfo=UTC)  # already February 1st in Tokyo
    tokyo = _ctx(late, "Asia/Tokyo")
    assert (tokyo.ds, tokyo.ds_nodash) == ("2026-02-01", "20260201")
    assert tokyo.ts == "2026-02-01T08:30:00+09:00"
    vars_ = tokyo.template_vars("Asia/Tokyo")
    assert (vars_["ds"], vars_["ds_nodash"], vars_["ts"]) == (tokyo.ds, tokyo.ds_nodash, tokyo.ts)
    utc = _ctx(late, "UTC")
    assert (utc.ds, utc.ts) == ("2026-01-31", "2026-01-31T23:30:00+00:00")
