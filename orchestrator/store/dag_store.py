"""DAGs, their serialized versions and import errors."""

from __future__ import annotations

import contextlib
import json
from datetime import datetime

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from orchestrator.errors import NotFoundError
from orchestrator.spec import DagSpec, dumps, spec_hash
from orchestrator.states import RunState
from orchestrator.store import models as m
from orchestrator.store.base import StoreBase, record_event
from orchestrator.store.records import DagRecord, ImportErrorRecord


def schedule_signature(data: dict) -> str:
    return dumps({k: data[k] for k in ("schedule", "timezone", "start_date", "end_date")})


class DagStore(StoreBase):
    # -- written by the DAG processor ------------------------------------------------
    def save_dag(self, data: dict, now: datetime) -> bool:
        """Store a parsed DAG; returns True if its definition changed.

        A changed schedule resets the schedule cursor, so the new schedule never
        creates runs for its own past fire times.
        """
        digest = spec_hash(data)
        sig = schedule_signature(data)
        d = m.dags
        with self.write() as conn:
            exists = conn.execute(
                select(m.dag_versions.c.id).where(
                    m.dag_versions.c.dag_id == data["dag_id"], m.dag_versions.c.hash == digest
                )
            ).first()
            if exists is None:
                # several schedulers parse the same files: another may store it first
                with contextlib.suppress(IntegrityError), conn.begin_nested():
                    conn.execute(
                        insert(m.dag_versions).values(
                            dag_id=data["dag_id"], hash=digest, data=dumps(data), created_at=now
                        )
                    )
            desc = DagSpec.from_dict(data).schedule.describe()
            values = dict(
                fileloc=data["fileloc"],
                is_active=True,
                version_hash=digest,
                schedule_sig=sig,
                schedule_desc=desc,
                description=data["description"],
                timezone=data["timezone"],
                tags=json.dumps(data["tags"]),
                last_parsed_at=now,
            )
            row = conn.execute(select(d).where(d.c.dag_id == data["dag_id"])).first()
            if row is None:
                try:
                    with conn.begin_nested():
                        conn.execute(
                            insert(d).values(
                                dag_id=data["dag_id"],
                                is_paused=bool(data["paused_at_creation"]),
                                next_logical_date=None,
                                schedule_exhausted=False,
                                created_at=now,
                                **values,
                            )
                        )
                except IntegrityError:  # another scheduler's processor added it first
                    return False
                record_event(
                    conn,
                    now,
                    "dag_added",
                    f"DAG added from {data['fileloc']}",
                    dag_id=data["dag_id"],
                )
                return True
            if row.schedule_sig != sig:
                values["next_logical_date"] = None
                values["schedule_exhausted"] = False
                record_event(
                    conn, now, "schedule_changed", f"schedule is now {desc}", dag_id=data["dag_id"]
                )
            if not row.is_active:
                record_event(
                    conn, now, "dag_reactivated", "DAG file is back", dag_id=data["dag_id"]
                )
            conn.execute(update(d).where(d.c.dag_id == data["dag_id"]).values(**values))
            return row.version_hash != digest or not row.is_active

    def deactivate_dags(self, dag_ids: list[str], now: datetime, reason: str) -> None:
        """Stop scheduling these DAGs (their file is gone) and cancel their queued runs."""
        if not dag_ids:
            return
        with self.write() as conn:
            for dag_id in sorted(dag_ids):
                done = conn.execute(
                    update(m.dags)
                    .where(m.dags.c.dag_id == dag_id, m.dags.c.is_active.is_(True))
                    .values(is_active=False)
                ).rowcount
                if not done:
                    continue
                conn.execute(
                    update(m.dag_runs)
                    .where(m.dag_runs.c.dag_id == dag_id, m.dag_runs.c.state == RunState.QUEUED)
                    .values(state=RunState.CANCELLED, end_date=now)
                )
                record_event(conn, now, "dag_removed", reason, dag_id=dag_id)

    def dags_by_file(self) -> dict[str, list[str]]:
        with self.read() as conn:
            rows = conn.execute(
                select(m.dags.c.fileloc, m.dags.c.dag_id).where(m.dags.c.is_active.is_(True))
            ).all()
        out: dict[str, list[str]] = {}
        for fileloc, dag_id in rows:
            out.setdefault(fileloc, []).append(dag_id)
        return out

    def record_import_error(
        self, fileloc: str, message: str, tb: str | None, now: datetime
    ) -> None:
        with self.write() as conn:
            conn.execute(delete(m.import_errors).where(m.import_errors.c.fileloc == fileloc))
            conn.execute(
                insert(m.import_errors).values(
                    fileloc=fileloc, message=message, traceback=tb, created_at=now
                )
            )
            record_event(conn, now, "import_error", f"{fileloc}: {message}")

    def clear_import_errors(self, filelocs: list[str]) -> None:
        if not filelocs:
            return
        with self.write() as conn:
            conn.execute(delete(m.import_errors).where(m.import_errors.c.fileloc.in_(filelocs)))

    def import_errors(self) -> list[ImportErrorRecord]:
        with self.read() as conn:
            rows = conn.execute(select(m.import_errors).order_by(m.import_errors.c.fileloc)).all()
        return [ImportErrorRecord(r.fileloc, r.message, r.traceback, r.created_at) for r in rows]

    # -- read by everyone ---------------------------------------------------------------
    def list_dags(self, *, include_inactive: bool = False) -> list[DagRecord]:
        q = select(m.dags).order_by(m.dags.c.dag_id)
        if not include_inactive:
            q = q.where(m.dags.c.is_active.is_(True))
        with self.read() as conn:
            return [DagRecord.from_row(r) for r in conn.execute(q)]

    def get_dag(self, dag_id: str) -> DagRecord:
        with self.read() as conn:
            row = conn.execute(select(m.dags).where(m.dags.c.dag_id == dag_id)).first()
        if row is None:
            raise NotFoundError(f"no DAG with dag_id {dag_id!r}")
        return DagRecord.from_row(row)

    def spec(self, dag_id: str, version_hash: str) -> DagSpec:
        """The serialized DAG of one version (cached: versions never change)."""
        key = f"{dag_id}/{version_hash}"
        cached = self._specs.get(key)
        if cached is None:
            with self.read() as conn:
                data = conn.execute(
                    select(m.dag_versions.c.data).where(
                        m.dag_versions.c.dag_id == dag_id, m.dag_versions.c.hash == version_hash
                    )
                ).scalar_one_or_none()
            if data is None:
                raise NotFoundError(f"DAG {dag_id!r} has no version {version_hash!r}")
            cached = self._specs[key] = DagSpec.from_json(data)
        return cached  # type: ignore[return-value]

    def current_spec(self, dag_id: str) -> DagSpec:
        dag = self.get_dag(dag_id)
        return self.spec(dag_id, dag.version_hash)

    def set_paused(self, dag_id: str, paused: bool, now: datetime) -> bool:
        """Pause or unpause; returns False if it already was."""
        self.get_dag(dag_id)
        with self.write() as conn:
            done = conn.execute(
                update(m.dags)
                .where(m.dags.c.dag_id == dag_id, m.dags.c.is_paused.is_(not paused))
                .values(is_paused=paused)
            ).rowcount
            if done:
                kind = "dag_paused" if paused else "dag_unpaused"
                record_event(conn, now, kind, "paused" if paused else "unpaused", dag_id=dag_id)
        return bool(done)
