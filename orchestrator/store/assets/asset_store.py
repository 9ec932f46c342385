"""Assets: recording events, and creating the runs they trigger.

* **Registering.** Saving a DAG version upserts every asset it names and replaces the
  DAG's ``asset_refs`` in the same transaction (``store/dags/asset_refs.py``).
* **Events.** A successful try with ``outlets`` records one event per asset in its
  fenced success transaction (:func:`record_outlet_events`, called from
  ``finish.py`` for the successes that were written, so a stale worker records none);
  ``emit_asset_event`` records an external one. Either way the event is queued, in the
  same transaction, for every active DAG scheduled on the asset (``asset_queue``).
* **Runs.** ``create_asset_runs`` (the scheduler, each tick) judges each DAG's queue by
  its condition and misfire policy (:func:`~orchestrator.scheduling.asset_conditions.plan_asset_runs`)
  and, per event set, deletes the queue rows (compare-and-set: every row must still be
  there), creates the run and links the events to it, in one transaction under the
  DAG's row lock. Two schedulers, a killed leader, a repeated tick: an event set is
  consumed by exactly one committed run.

>>> store.emit_asset_event("warehouse://sales/daily", {"rows": 3}, now, emitter="cli:me")  # doctest: +SKIP
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, insert, literal, select

from orchestrator.authoring.spec import MAX_CONF_BYTES, DagSpec, json_value_problem
from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.scheduling.asset_conditions import (
    AssetWait,
    QueuedEvent,
    explain_waits,
    plan_asset_runs,
    uri_problem,
)
from orchestrator.scheduling.explain import DAG_PAUSED, Reason
from orchestrator.store.assets.asset_records import AssetEventRecord, AssetRecord
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event
from orchestrator.store.dags.asset_refs import asset_ids
from orchestrator.store.runs.run_rows import insert_run, make_run_id

log = logging.getLogger(__name__)
a, ev, q, refs = m.assets, m.asset_events, m.asset_queue, m.asset_refs
ASSET_RUN_TYPE = "asset_triggered"
MAX_EXTRA_BYTES = MAX_CONF_BYTES


class _Raced(Exception):
    """Another scheduler consumed (part of) the event set first: roll back, go on."""


def check_extra(extra: Any, what: str = "extra") -> str:
    """An event's ``extra`` as JSON text: a JSON object of at most 64 KiB, or ConfigError."""
    if extra is None:
        extra = {}
    if not isinstance(extra, dict):
        raise ConfigError(f"{what} must be a JSON object, got {type(extra).__name__}")
    problem = json_value_problem(extra)
    if problem:
        verb = "is" if problem.startswith("nested") else "holds"
        raise ConfigError(f"{what} {verb} {problem}")
    try:
        text = json.dumps(extra, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what} is not JSON-serialisable: {exc}") from None
    if "\\u0000" in text:
        raise ConfigError(f"{what} holds a NUL character")
    if len(text.encode()) > MAX_EXTRA_BYTES:
        raise ConfigError(f"{what} is {len(text.encode())} bytes of JSON, over {MAX_EXTRA_BYTES}")
    return text


# -- events --------------------------------------------------------------------------------
def _queue_event(conn: Connection, event_id: int, asset_id: int, now: datetime) -> None:
    """Queue the event for every active DAG scheduled on its asset."""
    consumers = (
        select(refs.c.dag_id, literal(event_id), literal(asset_id), literal(now, m.UTCDateTime))
        .join(m.dags, m.dags.c.dag_id == refs.c.dag_id)
        .where(refs.c.asset_id == asset_id, refs.c.kind == "consumer", m.dags.c.is_active)
    )
    conn.execute(insert(q).from_select(["dag_id", "event_id", "asset_id", "queued_at"], consumers))


def emit_locked(
    conn: Connection,
    uri: str,
    text: str,
    now: datetime,
    emitter: str | None,
    *,
    log: bool = True,
    asset_id: int | None = None,
) -> int | None:
    """An external event (its extra already checked JSON text) queued for consumers, in
    the caller's transaction; its id, or None for an unknown asset. Asset watchers
    (``store/triggers/``) record theirs with their dedup row in one transaction."""
    if asset_id is None:
        asset_id = conn.execute(select(a.c.id).where(a.c.uri == uri)).scalar()
    if asset_id is None:
        return None
    event_id = conn.execute(
        insert(ev).values(asset_id=asset_id, at=now, extra=text, emitter=emitter).returning(ev.c.id)
    ).scalar_one()
    _queue_event(conn, event_id, asset_id, now)
    if log:
        record_event(
            conn, now, "asset_event", f"{uri} emitted by {emitter or 'unknown'}", actor=emitter
        )
    return event_id


def emit_many_locked(
    conn: Connection, asset_id: int, texts: list[str], now: datetime, emitter: str | None
) -> list[int]:
    """Several external events of one asset (their extras checked JSON text) queued for
    its consumers, in the caller's transaction, with statements built once (an asset
    watcher's batch, issue 30); their ids in order."""
    if not texts:
        return []
    ids = [
        conn.execute(
            _INSERT_EVENT, {"b_asset": asset_id, "b_at": now, "b_extra": t, "b_emitter": emitter}
        ).scalar_one()
        for t in texts
    ]
    consumers = conn.execute(_CONSUMERS, {"b_asset": asset_id}).scalars().all()
    if consumers:
        conn.execute(
            insert(q),
            [{"dag_id": d, "event_id": i, "asset_id": asset_id, "queued_at": now}
             for i in ids for d in consumers],
        )  # fmt: skip
    return ids


_INSERT_EVENT = (
    insert(ev)
    .values(
        asset_id=bindparam("b_asset"),
        at=bindparam("b_at"),
        extra=bindparam("b_extra"),
        emitter=bindparam("b_emitter"),
    )
    .returning(ev.c.id)
)
_CONSUMERS = (
    select(refs.c.dag_id)
    .join(m.dags, m.dags.c.dag_id == refs.c.dag_id)
    .where(refs.c.asset_id == bindparam("b_asset"), refs.c.kind == "consumer", m.dags.c.is_active)
    .distinct()
)


def record_outlet_events(
    conn: Connection,
    successes: list[tuple[Any, tuple[str, ...], datetime]],
    extras: dict[tuple[int, int], dict[str, Any]] | None,
) -> set[int]:
    """For successes just written (claim, outlet URIs, end time): one event per outlet,
    queued for its consumers. Returns the ti ids that recorded events. An extra that is
    not a JSON object is stored as ``{"value": ...}``; one the store refuses is dropped
    with a warning (the success stands)."""
    wanted = [(c, outs, now) for c, outs, now in successes if outs]
    if not wanted:
        return set()
    id_of = asset_ids(conn, (u for _, outs, _ in wanted for u in outs), wanted[0][2])
    done: set[int] = set()
    for claim, outs, now in wanted:
        given = (extras or {}).get((claim.ti_id, claim.try_number)) or {}
        for uri in outs:
            try:
                extra = check_extra(given.get(uri) or {}, f"outlet event extra of {uri}")
            except ConfigError as exc:
                log.warning("dag_id=%s task_id=%s: %s; stored without it", claim.dag_id,
                            claim.task_id, exc)  # fmt: skip
                extra = "{}"
            event_id = conn.execute(
                insert(ev)
                .values(
                    asset_id=id_of[uri], at=now, extra=extra, source_dag_id=claim.dag_id,
                    source_run_id=claim.run_id, source_task_id=claim.task_id,
                    source_try_number=claim.try_number, source_ti_id=claim.ti_id,
                )
                .returning(ev.c.id)
            ).scalar_one()  # fmt: skip
            _queue_event(conn, event_id, id_of[uri], now)
            done.add(claim.ti_id)
    return done


class AssetStore(StoreBase):
    def emit_asset_event(
        self,
        uri: str,
        extra: Any,
        now: datetime,
        *,
        emitter: str | None = None,
    ) -> AssetEventRecord:
        """Record an external event for a known asset; ConfigError for a bad URI or
        extra, NotFoundError for an asset no DAG names (refused, as Airflow 3's API does:
        a typo must not silently create an asset nobody consumes)."""
        problem = uri_problem(uri)
        if problem:
            raise ConfigError(problem)
        text = check_extra(extra)
        with self.write() as conn:
            event_id = emit_locked(conn, uri, text, now, emitter)
            if event_id is None:
                raise NotFoundError(
                    f"unknown asset {uri!r}: no DAG names it in outlets or a schedule "
                    "(`orchestrator assets list` shows the known assets)"
                )
        return self.get_asset_event(event_id)

    # -- runs -------------------------------------------------------------------------------
    def create_asset_runs(self, now: datetime) -> int:
        """Create the runs the queued events of unpaused DAGs call for; how many."""
        with self.read() as conn:
            rows = conn.execute(_QUEUED_ALL).all()
        by_dag: dict[str, list[QueuedEvent]] = {}
        version: dict[str, str] = {}
        for r in rows:
            by_dag.setdefault(r.dag_id, []).append(QueuedEvent(r.event_id, r.uri))
            version[r.dag_id] = r.version_hash
        created = 0
        for dag_id, queued in by_dag.items():
            try:
                spec = self.spec(dag_id, version[dag_id])  # type: ignore[attr-defined]
                cond = spec.asset_condition
                if cond is None or not plan_asset_runs(cond, queued, spec.misfire):
                    continue  # nothing due: no write transaction
                with self.write() as conn:
                    created += self._consume_locked(conn, dag_id, now)
            except _Raced:
                log.info("dag_id=%s: its asset events were consumed by another scheduler", dag_id)
            except Exception:  # one DAG must not stop the others
                log.exception("creating asset runs of dag_id=%s failed", dag_id)
        return created

    def _consume_locked(self, conn: Connection, dag_id: str, now: datetime) -> int:
        """Under the DAG's row lock: the queue read again, judged, consumed per set."""
        d = m.dags
        lock = select(d.c.version_hash, d.c.is_paused, d.c.is_active).where(d.c.dag_id == dag_id)
        dag = conn.execute(lock.with_for_update() if self.is_postgres else lock).first()
        if dag is None or dag.is_paused or not dag.is_active:
            return 0
        spec = self.spec(dag_id, dag.version_hash)  # type: ignore[attr-defined]
        if spec.asset_condition is None:
            return 0
        rows = conn.execute(_QUEUED_ONE, {"dag_id": spec.dag_id}).all()
        queued = [QueuedEvent(r.event_id, r.uri) for r in rows]
        at = {r.event_id: r.at for r in rows}
        groups = plan_asset_runs(spec.asset_condition, queued, spec.misfire)
        last = conn.execute(
            select(func.max(m.dag_runs.c.logical_date)).where(
                m.dag_runs.c.dag_id == spec.dag_id, m.dag_runs.c.run_type == ASSET_RUN_TYPE
            )
        ).scalar()
        when = now if last is None or last < now else last + timedelta(microseconds=1)
        for group in groups:
            ids = [e.event_id for e in group]
            gone = conn.execute(
                delete(q).where(q.c.dag_id == spec.dag_id, q.c.event_id.in_(ids))
            ).rowcount
            if gone != len(ids):
                raise _Raced
            times = sorted(at[i] for i in ids)
            pk = insert_run(conn, spec, dag.version_hash, run_type=ASSET_RUN_TYPE,
                            logical_date=when, interval=(times[0], times[-1]), conf={},
                            now=now)  # fmt: skip
            if pk is None:
                raise _Raced
            conn.execute(insert(m.asset_run_events), [{"run_pk": pk, "event_id": i} for i in ids])
            uris = sorted({e.uri for e in group})
            record_event(conn, now, "asset_run_created",
                         f"{len(ids)} event(s) of {', '.join(uris)} consumed",
                         dag_id=spec.dag_id,
                         run_id=make_run_id(spec.dag_id, ASSET_RUN_TYPE, when))  # fmt: skip
            when += timedelta(microseconds=1)
        return len(groups)

    # -- reads ------------------------------------------------------------------------------
    def list_assets(self) -> list[AssetRecord]:
        with self.read() as conn:
            rows = conn.execute(select(a).order_by(a.c.uri)).all()
            return self._asset_records(conn, rows)

    def get_asset(self, key: int | str) -> AssetRecord:
        """An asset by id or URI; NotFoundError naming what was asked for."""
        if isinstance(key, int) and not 0 < key < 2**63:
            raise NotFoundError(f"no asset {key!r}")
        cond = a.c.id == key if isinstance(key, int) else a.c.uri == key
        with self.read() as conn:
            rows = conn.execute(select(a).where(cond)).all()
            if not rows:
                raise NotFoundError(f"no asset {key!r} (`orchestrator assets list` shows them)")
            return self._asset_records(conn, rows)[0]

    @staticmethod
    def _asset_records(conn: Connection, rows: list[Any]) -> list[AssetRecord]:
        ids = [r.id for r in rows]
        prod: dict[int, list[tuple[str, str]]] = {}
        cons: dict[int, list[str]] = {}
        active = (
            select(refs)
            .join(m.dags, m.dags.c.dag_id == refs.c.dag_id)
            .where(refs.c.asset_id.in_(ids), m.dags.c.is_active)
            .order_by(refs.c.dag_id, refs.c.task_id)
        )
        for r in conn.execute(active):
            if r.kind == "producer":
                prod.setdefault(r.asset_id, []).append((r.dag_id, r.task_id))
            else:
                cons.setdefault(r.asset_id, []).append(r.dag_id)
        stats = {
            r.asset_id: (r.n, r.last)
            for r in conn.execute(
                select(ev.c.asset_id, func.count().label("n"), func.max(ev.c.at).label("last"))
                .where(ev.c.asset_id.in_(ids))
                .group_by(ev.c.asset_id)
            )
        }
        return [
            AssetRecord(
                id=r.id, uri=r.uri, name=r.name, group=r.group_name, created_at=r.created_at,
                producers=tuple(prod.get(r.id, ())), consumers=tuple(cons.get(r.id, ())),
                last_event_at=stats.get(r.id, (0, None))[1], events=stats.get(r.id, (0, None))[0],
            )
            for r in rows
        ]  # fmt: skip

    def asset_events(
        self,
        asset: int | str | None = None,
        *,
        limit: int = 50,
        run_id: str | None = None,
    ) -> list[AssetEventRecord]:
        """Newest first: of one asset (id or URI), or all; ``run_id``: what a run consumed."""
        query = _EVENTS.order_by(ev.c.id.desc()).limit(limit)
        if asset is not None:
            query = query.where(a.c.id == asset if isinstance(asset, int) else a.c.uri == asset)
        if run_id is not None:
            query = (
                query.join(m.asset_run_events, m.asset_run_events.c.event_id == ev.c.id)
                .join(m.dag_runs, m.dag_runs.c.id == m.asset_run_events.c.run_pk)
                .where(m.dag_runs.c.run_id == run_id)
            )
        with self.read() as conn:
            rows = conn.execute(query).all()
            triggered: dict[int, list[str]] = {}
            if rows:
                for r in conn.execute(
                    select(m.asset_run_events.c.event_id, m.dag_runs.c.run_id)
                    .join(m.dag_runs, m.dag_runs.c.id == m.asset_run_events.c.run_pk)
                    .where(m.asset_run_events.c.event_id.in_([r.id for r in rows]))
                    .order_by(m.dag_runs.c.id)
                ):
                    triggered.setdefault(r.event_id, []).append(r.run_id)
        return [AssetEventRecord.from_row(r, tuple(triggered.get(r.id, ()))) for r in rows]

    def get_asset_event(self, event_id: int) -> AssetEventRecord:
        with self.read() as conn:
            row = conn.execute(_EVENTS.where(ev.c.id == event_id)).first()
        if row is None:
            raise NotFoundError(f"no asset event {event_id}")
        return AssetEventRecord.from_row(row)

    def triggering_asset_events(self, run_id: str) -> list[dict[str, Any]]:
        """The events a run consumed, oldest first, as the task context carries them."""
        events = sorted(self.asset_events(run_id=run_id, limit=10_000), key=lambda e: e.id)
        return [{k: v for k, v in e.to_dict().items() if k != "triggered_runs"} for e in events]

    def asset_reasons(self, dag_id: str, now: datetime) -> list[Reason]:
        """``dags why`` for the asset part of a DAG's schedule (empty without one)."""
        dag = self.get_dag(dag_id)  # type: ignore[attr-defined]
        spec = self.spec(dag_id, dag.version_hash)  # type: ignore[attr-defined]
        cond = spec.asset_condition
        if cond is None:
            return []
        out = []
        if dag.is_paused and spec.schedule.kind == "none":
            out.append(Reason(DAG_PAUSED, f"DAG {dag_id} is paused: asset events are queued", {}))
        met, text = explain_waits(cond, self.asset_waits(dag_id, spec), now)
        out.append(Reason("assets_ready" if met else "assets_waiting", text,
                          {"condition": cond.describe()}))  # fmt: skip
        return out

    def asset_waits(self, dag_id: str, spec: DagSpec) -> list[AssetWait]:
        """Per asset of the DAG's asset schedule: its queued events and last event."""
        cond = spec.asset_condition
        if cond is None:
            return []
        uris = list(cond.uris())
        with self.read() as conn:
            names = dict(conn.execute(select(a.c.uri, a.c.name).where(a.c.uri.in_(uris))).all())
            queued = {
                r.uri: (r.n, r.first)
                for r in conn.execute(
                    select(a.c.uri, func.count().label("n"), func.min(ev.c.at).label("first"))
                    .select_from(q.join(ev, ev.c.id == q.c.event_id).join(a, a.c.id == q.c.asset_id))
                    .where(q.c.dag_id == dag_id)
                    .group_by(a.c.uri)
                )
            }  # fmt: skip
            last = dict(
                conn.execute(
                    select(a.c.uri, func.max(ev.c.at))
                    .select_from(ev.join(a, a.c.id == ev.c.asset_id))
                    .where(a.c.uri.in_(uris))
                    .group_by(a.c.uri)
                ).all()
            )
        return [
            AssetWait(uri=u, name=names.get(u, u), queued=queued.get(u, (0, None))[0],
                      first_queued_at=queued.get(u, (0, None))[1], last_event_at=last.get(u))
            for u in uris
        ]  # fmt: skip


_QUEUED_ALL = (
    select(q.c.dag_id, q.c.event_id, a.c.uri, m.dags.c.version_hash)
    .join(a, a.c.id == q.c.asset_id)
    .join(m.dags, m.dags.c.dag_id == q.c.dag_id)
    .where(m.dags.c.is_paused.is_(False), m.dags.c.is_active.is_(True))
    .order_by(q.c.dag_id, q.c.event_id)
)
_QUEUED_ONE = (
    select(q.c.event_id, a.c.uri, ev.c.at)
    .join(a, a.c.id == q.c.asset_id)
    .join(ev, ev.c.id == q.c.event_id)
    .where(q.c.dag_id == bindparam("dag_id"))
    .order_by(q.c.event_id)
)
_EVENTS = select(
    ev.c.id, ev.c.asset_id, a.c.uri, ev.c.at, ev.c.extra, ev.c.source_dag_id,
    ev.c.source_run_id, ev.c.source_task_id, ev.c.source_try_number, ev.c.emitter,
).join(a, a.c.id == ev.c.asset_id)  # fmt: skip
