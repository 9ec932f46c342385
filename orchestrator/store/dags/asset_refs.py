"""Which assets each DAG version names: saving a version upserts every asset it names and
replaces the DAG's ``asset_refs`` (producer: a task with the asset in ``outlets``;
consumer: the DAG's asset schedule names it) in the save's own transaction, and drops the
queued events of assets the new version no longer consumes. These rows change with the
DAG's versions, so they live with the DAGs; the events and the runs they trigger are
``store/assets/``.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from orchestrator.authoring.spec import DagSpec
from orchestrator.store.core import models as m
from orchestrator.store.core.base import record_event

a, q, refs = m.assets, m.asset_queue, m.asset_refs


def insert_ignore(conn: Connection, table: Any) -> Any:
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    return dialect_insert(table).on_conflict_do_nothing()


def register_assets(conn: Connection, items: list[dict], now: datetime) -> None:
    """Upsert the assets the saved DAGs name and replace those DAGs' refs."""
    ids = [d["dag_id"] for d in items]
    conn.execute(delete(refs).where(refs.c.dag_id.in_(ids)))
    named: dict[str, dict] = {}
    for data in items:
        for asset in data.get("assets") or ():
            named[asset["uri"]] = asset
    if not named:
        _drop_unconsumed(conn, ids, set())
        return
    known = {r.uri: r for r in conn.execute(select(a).where(a.c.uri.in_(list(named))))}
    new = [
        {"uri": u, "name": x["name"], "group_name": x["group"], "created_at": now,
         "updated_at": now}
        for u, x in named.items()
        if u not in known
    ]  # fmt: skip
    if new:
        conn.execute(insert_ignore(conn, a), new)
    for u, x in named.items():
        row = known.get(u)
        if row is not None and (row.name, row.group_name) != (x["name"], x["group"]):
            conn.execute(
                update(a)
                .where(a.c.id == row.id)
                .values(name=x["name"], group_name=x["group"], updated_at=now)
            )
    id_of = dict(conn.execute(select(a.c.uri, a.c.id).where(a.c.uri.in_(list(named)))).all())
    rows = []
    for data in items:
        spec = DagSpec.from_dict(data)
        cond = spec.asset_condition
        for uri in cond.uris() if cond is not None else ():
            rows.append({"dag_id": spec.dag_id, "asset_id": id_of[uri], "kind": "consumer",
                         "task_id": ""})  # fmt: skip
        for t in spec.tasks.values():
            for uri in t.outlets:
                rows.append({"dag_id": spec.dag_id, "asset_id": id_of[uri], "kind": "producer",
                             "task_id": t.task_id})  # fmt: skip
    if rows:
        conn.execute(insert_ignore(conn, refs), rows)
    _drop_unconsumed(
        conn, ids, {(r["dag_id"], r["asset_id"]) for r in rows if r["kind"] == "consumer"}
    )


def _drop_unconsumed(conn: Connection, dag_ids: list[str], consumed: set[tuple[str, int]]) -> None:
    """Queued events of assets a DAG's new version is no longer scheduled on go."""
    queued = conn.execute(
        select(q.c.dag_id, q.c.asset_id).where(q.c.dag_id.in_(dag_ids)).distinct()
    ).all()
    for dag_id, asset_id in queued:
        if (dag_id, asset_id) not in consumed:
            conn.execute(delete(q).where(q.c.dag_id == dag_id, q.c.asset_id == asset_id))


def asset_ids(conn: Connection, uris: Iterable[str], now: datetime) -> dict[str, int]:
    uris = sorted(set(uris))
    got = dict(conn.execute(select(a.c.uri, a.c.id).where(a.c.uri.in_(uris))).all())
    missing = [u for u in uris if u not in got]
    if missing:  # a version stored before its assets were: register them now
        conn.execute(
            insert_ignore(conn, a),
            [{"uri": u, "name": u, "group_name": None, "created_at": now, "updated_at": now}
             for u in missing],
        )  # fmt: skip
        got = dict(conn.execute(select(a.c.uri, a.c.id).where(a.c.uri.in_(uris))).all())
    return got


def skip_queued_events(conn: Connection, dag_id: str, now: datetime) -> int:
    """On unpause of a ``misfire='skip'`` DAG: drop what was queued while paused."""
    gone = conn.execute(delete(q).where(q.c.dag_id == dag_id)).rowcount
    if gone:
        record_event(conn, now, "asset_events_skipped",
                     f"{gone} asset event(s) queued while paused skipped (misfire='skip')",
                     dag_id=dag_id)  # fmt: skip
    return gone
