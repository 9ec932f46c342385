"""DAGs, their serialized versions and import errors."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime

from sqlalchemy import Connection, Insert, Table, delete, insert, select, tuple_, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from orchestrator.authoring.spec import DagSpec, dumps, spec_hash
from orchestrator.errors import NotFoundError
from orchestrator.states import RunState
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event
from orchestrator.store.core.records import DagRecord, ImportErrorRecord, SourceRecord
from orchestrator.store.dags.asset_refs import register_assets, skip_queued_events

LOOK_NOW = datetime(1970, 1, 1, tzinfo=UTC)  # next_dagrun_create_after: due at once
SAVE_CHUNK = 200  # DAGs per write transaction: short enough not to stall the scheduler


def schedule_signature(data: dict) -> str:
    return dumps({k: data[k] for k in ("schedule", "timezone", "start_date", "end_date")})


class DagStore(StoreBase):
    # -- written by the DAG processor ------------------------------------------------
    def save_dag(self, data: dict, now: datetime) -> bool:
        """Store a parsed DAG; returns True if its definition changed (see save_dags)."""
        return self.save_dags([data], now)[0]

    def save_dags(self, items: list[dict], now: datetime) -> list[bool]:
        """Store parsed DAGs, a few hundred per transaction; for each, whether its
        definition changed.

        A changed schedule resets the schedule cursor, so the new schedule never
        creates runs for its own past fire times. Several schedulers parse the same
        files: a version or DAG another one stored first is left as it is.

        An item's ``source`` (the DAG file's text as the processor read it, see
        :func:`orchestrator.authoring.loader.read_source`) is not part of the
        definition: it goes to ``dag_sources``, once per distinct content, and the
        version names it. Its hash is part of the version's hash, so a version's
        source is the text it was parsed from (an edited comment makes a new version).
        """
        changed: list[bool] = []
        for i in range(0, len(items), SAVE_CHUNK):
            with self.write() as conn:
                changed += self._save_chunk(conn, items[i : i + SAVE_CHUNK], now)
        return changed

    def _save_chunk(self, conn: Connection, items: list[dict], now: datetime) -> list[bool]:
        d, v = m.dags, m.dag_versions
        sources: dict[str, dict] = {}
        source_of: dict[str, str | None] = {}
        digests: dict[str, str] = {}
        defined = []
        for item in items:
            data = {k: val for k, val in item.items() if k != "source"}
            source = item.get("source")
            if source is None:
                source_of[data["dag_id"]] = None
                digests[data["dag_id"]] = spec_hash(data)
            else:
                sources[source["sha256"]] = source
                source_of[data["dag_id"]] = source["sha256"]
                digests[data["dag_id"]] = spec_hash(data | {"source_hash": source["sha256"]})
            defined.append(data)
        items = defined
        ids = [data["dag_id"] for data in items]
        if sources:
            self._save_sources(conn, list(sources.values()), now)
        stored = {
            (r.dag_id, r.hash)
            for r in conn.execute(
                select(v.c.dag_id, v.c.hash).where(
                    v.c.dag_id.in_(ids), v.c.hash.in_(set(digests.values()))
                )
            )
        }
        versions = [
            {
                "dag_id": k,
                "hash": h,
                "data": dumps(data),
                "created_at": now,
                "source_hash": source_of[k],
            }
            for data in items
            if (k := data["dag_id"], h := digests[data["dag_id"]]) not in stored
        ]
        if versions:
            conn.execute(self._insert_ignore(v, ["dag_id", "hash"]), versions)
        rows = {r.dag_id: r for r in conn.execute(select(d).where(d.c.dag_id.in_(ids)))}
        new, updates, changed = [], [], []
        for data in items:
            dag_id, sig = data["dag_id"], schedule_signature(data)
            parsed = DagSpec.from_dict(data)
            desc = parsed.schedule_description()
            # issue 29: a new or changed schedule is looked at by the next tick, whatever
            # its clock says (a scheduler's clock may be behind this processor's)
            create_after = None if parsed.schedule.kind == "none" else LOOK_NOW
            values = dict(
                fileloc=data["fileloc"],
                is_active=True,
                version_hash=digests[dag_id],
                schedule_sig=sig,
                schedule_desc=desc,
                description=data["description"],
                timezone=data["timezone"],
                tags=json.dumps(data["tags"]),
                owners=json.dumps(data.get("owners", [])),  # issue 27: the DAG list's owner
                last_parsed_at=now,
            )
            row = rows.get(dag_id)
            if row is None:
                new.append(
                    dict(
                        dag_id=dag_id,
                        is_paused=bool(data["paused_at_creation"]),
                        next_logical_date=None,
                        next_dagrun_create_after=create_after,
                        schedule_exhausted=False,
                        created_at=now,
                        **values,
                    )
                )
                changed.append(True)
                continue
            if row.schedule_sig != sig:
                values["next_logical_date"] = None
                values["next_dagrun_create_after"] = create_after
                values["schedule_exhausted"] = False
                record_event(
                    conn, now, "schedule_changed", f"schedule is now {desc}", dag_id=dag_id
                )
            if not row.is_active:
                record_event(conn, now, "dag_reactivated", "DAG file is back", dag_id=dag_id)
            updates.append((dag_id, values))
            changed.append(row.version_hash != digests[dag_id] or not row.is_active)
        for dag_id, values in updates:
            conn.execute(update(d).where(d.c.dag_id == dag_id).values(**values))
        register_assets(conn, items, now)  # issue 15: the assets and refs of these versions
        if new:
            added = set(
                conn.execute(
                    self._insert_ignore(d, ["dag_id"]).returning(d.c.dag_id),
                    new,
                ).scalars()
            )
            events = [  # a DAG another scheduler's processor added first: as before
                {"at": now, "kind": "dag_added", "message": f"DAG added from {data['fileloc']}",
                 "dag_id": data["dag_id"]}
                for data in items
                if data["dag_id"] in added
            ]  # fmt: skip
            if events:
                conn.execute(insert(m.events), events)
            changed = [c and (data["dag_id"] in added or data["dag_id"] in rows)
                       for c, data in zip(changed, items, strict=True)]  # fmt: skip
        return changed

    def _save_sources(self, conn: Connection, sources: list[dict], now: datetime) -> None:
        s = m.dag_sources
        hashes = [src["sha256"] for src in sources]
        stored = set(conn.execute(select(s.c.hash).where(s.c.hash.in_(hashes))).scalars())
        rows = [
            {"hash": src["sha256"], "content": src["text"], "size": src["size"],
             "truncated": bool(src["truncated"]), "created_at": now}
            for src in sources
            if src["sha256"] not in stored
        ]  # fmt: skip
        if rows:
            conn.execute(self._insert_ignore(s, ["hash"]), rows)

    def _insert_ignore(self, table: Table, keys: list[str]) -> Insert:
        """INSERT ... ON CONFLICT (keys) DO NOTHING, on either backend."""
        dialect_insert = pg_insert if self.is_postgres else sqlite_insert
        return dialect_insert(table).on_conflict_do_nothing(index_elements=keys)

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
        self.record_import_errors([(fileloc, message, tb)], now)

    def record_import_errors(
        self, errors: list[tuple[str, str, str | None]], now: datetime
    ) -> None:
        """Replace the import error of each (fileloc, message, traceback), in one transaction."""
        if not errors:
            return
        e = m.import_errors
        with self.write() as conn:
            files = [fileloc for fileloc, _, _ in errors]
            for i in range(0, len(files), 500):
                conn.execute(delete(e).where(e.c.fileloc.in_(files[i : i + 500])))
            conn.execute(
                insert(e),
                [{"fileloc": f, "message": msg, "traceback": tb, "created_at": now}
                 for f, msg, tb in errors],
            )  # fmt: skip
            for fileloc, message, _ in errors:
                record_event(conn, now, "import_error", f"{fileloc}: {message}")

    def clear_import_errors(self, filelocs: list[str]) -> None:
        if not filelocs:
            return
        with self.write() as conn:
            for i in range(0, len(filelocs), 500):
                chunk = filelocs[i : i + 500]
                conn.execute(delete(m.import_errors).where(m.import_errors.c.fileloc.in_(chunk)))

    def import_errors(self) -> list[ImportErrorRecord]:
        with self.read() as conn:
            rows = conn.execute(select(m.import_errors).order_by(m.import_errors.c.fileloc)).all()
        return [ImportErrorRecord(r.fileloc, r.message, r.traceback, r.created_at) for r in rows]

    # -- read by everyone ---------------------------------------------------------------
    def list_dags(
        self, *, include_inactive: bool = False, schedulable: bool = False
    ) -> list[DagRecord]:
        """Active DAGs by id; ``schedulable``: only those that may get scheduled runs now."""
        q = select(m.dags).order_by(m.dags.c.dag_id)
        if not include_inactive:
            q = q.where(m.dags.c.is_active.is_(True))
        if schedulable:
            q = q.where(m.dags.c.is_paused.is_(False), m.dags.c.schedule_exhausted.is_(False))
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

    def preload_specs(self, keys: Iterable[tuple[str, str]]) -> None:
        """Read the serialized DAGs of these (dag_id, version_hash) pairs that are not
        cached yet, a few hundred per query, so a batch that then takes locks finds them
        all in the cache (issue 29: 10,000 new DAGs, one query per 500)."""
        v = m.dag_versions
        missing = sorted({k for k in keys if f"{k[0]}/{k[1]}" not in self._specs})
        for i in range(0, len(missing), 500):
            chunk = missing[i : i + 500]
            with self.read() as conn:
                rows = conn.execute(
                    select(v.c.dag_id, v.c.hash, v.c.data).where(
                        tuple_(v.c.dag_id, v.c.hash).in_(chunk)
                    )
                ).all()
            for row in rows:
                self._specs[f"{row.dag_id}/{row.hash}"] = DagSpec.from_json(row.data)

    def version_source(self, dag_id: str, version_hash: str) -> SourceRecord | None:
        """The DAG file's text this version was parsed from; None if none was stored
        (a version stored before migration 0010, or saved without a source)."""
        v, s = m.dag_versions, m.dag_sources
        with self.read() as conn:
            row = conn.execute(
                select(s)
                .join(v, v.c.source_hash == s.c.hash)
                .where(v.c.dag_id == dag_id, v.c.hash == version_hash)
            ).first()
        if row is None:
            return None
        return SourceRecord(row.hash, row.content, row.size, bool(row.truncated), row.created_at)

    def version_layout(self, dag_id: str, version_hash: str) -> str | None:
        """The web UI's stored graph layout of this version (JSON), if it made one."""
        v = m.dag_versions
        with self.read() as conn:
            return conn.execute(
                select(v.c.layout).where(v.c.dag_id == dag_id, v.c.hash == version_hash)
            ).scalar_one_or_none()

    def record_layout(self, dag_id: str, version_hash: str, layout: str) -> bool:
        """Keep the graph layout of a version (computed once, by whichever web server
        process first showed it); returns False if the version does not exist."""
        v = m.dag_versions
        with self.write() as conn:
            done = conn.execute(
                update(v)
                .where(v.c.dag_id == dag_id, v.c.hash == version_hash)
                .values(layout=layout)
            ).rowcount
        return bool(done)

    def current_spec(self, dag_id: str) -> DagSpec:
        dag = self.get_dag(dag_id)
        return self.spec(dag_id, dag.version_hash)

    def set_paused(
        self, dag_id: str, paused: bool, now: datetime, *, who: str | None = None
    ) -> bool:
        """Pause or unpause, asked by ``who``; returns False if it already was."""
        self.get_dag(dag_id)
        with self.write() as conn:
            done = conn.execute(
                update(m.dags)
                .where(m.dags.c.dag_id == dag_id, m.dags.c.is_paused.is_(not paused))
                .values(is_paused=paused)
            ).rowcount
            if done:
                kind = "dag_paused" if paused else "dag_unpaused"
                word = "paused" if paused else "unpaused"
                by = f" by {who}" if who else ""
                record_event(conn, now, kind, word + by, dag_id=dag_id, actor=who)
                if not paused and self.current_spec(dag_id).misfire == "skip":  # issue 15
                    skip_queued_events(conn, dag_id, now)
        return bool(done)

    def set_paused_many(
        self, dag_ids: list[str], paused: bool, now: datetime, *, who: str | None = None
    ) -> list[str]:
        """Pause or unpause every DAG of ``dag_ids`` in one transaction, asked by ``who``:
        all of them or, if one is unknown, none (NotFoundError naming it). Returns the
        ids whose state changed (those already so are left alone, without an event)."""
        d = m.dags
        wanted = sorted(set(dag_ids))
        with self.write() as conn:
            known = set(conn.execute(select(d.c.dag_id).where(d.c.dag_id.in_(wanted))).scalars())
            unknown = [x for x in wanted if x not in known]
            if unknown:
                raise NotFoundError(f"no DAG with dag_id {unknown[0]!r}")
            changed = list(
                conn.execute(
                    update(d)
                    .where(d.c.dag_id.in_(wanted), d.c.is_paused.is_(not paused))
                    .values(is_paused=paused)
                    .returning(d.c.dag_id)
                ).scalars()
            )
            kind = "dag_paused" if paused else "dag_unpaused"
            word = ("paused" if paused else "unpaused") + (f" by {who}" if who else "")
            for dag_id in sorted(changed):
                record_event(conn, now, kind, word, dag_id=dag_id, actor=who)
                if not paused and self.current_spec(dag_id).misfire == "skip":  # issue 15
                    skip_queued_events(conn, dag_id, now)
        return sorted(changed)
