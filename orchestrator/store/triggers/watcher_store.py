"""Asset watchers' rows: declared, leased to a triggerer, and the messages they turned
into asset events, each message id once (issue 30).

``record_messages`` is the heart: in one transaction it inserts each message's
``(watcher, message id)`` row (a conflict: a redelivered message, acked again without
a second event), checks the message (a JSON object of at most ``max_conf_bytes``),
and records the event through ``assets/`` (``emit_locked``) or, for a bad one, the
reason (an event in the event log, the watcher's rejected count). The watcher acks
the broker only after this commits: a crash in between redelivers, never duplicates.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, or_, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError

from orchestrator.errors import ConfigError
from orchestrator.store.assets.asset_store import check_extra, emit_many_locked
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase, record_event
from orchestrator.store.core.records import Record

log = logging.getLogger(__name__)
w = m.watchers
wm = m.watcher_messages
EVENT = "event"
DUPLICATE = "duplicate"
REJECTED = "rejected"


@dataclass(frozen=True)
class WatcherRecord(Record):
    key: str
    asset_uri: str
    kind: str
    conn_id: str
    source: str
    spec: dict[str, Any]
    active: bool
    triggerer_id: str | None
    lease_expires_at: datetime | None
    state: str
    last_error: str | None
    last_error_at: datetime | None
    failures: int
    cursor: str | None
    messages: int
    rejected: int
    last_message_at: datetime | None
    updated_at: datetime

    @classmethod
    def from_row(cls, r: Any) -> WatcherRecord:
        d = dict(r._mapping)
        d["spec"] = json.loads(d["spec"] or "{}")
        return cls(**d)


class WatcherStore(StoreBase):
    def sync_watchers(self, declared: list[dict[str, Any]], now: datetime) -> None:
        """Make the watcher rows match the declared watchers (key, asset_uri, kind,
        conn_id, source, spec): new ones added, changed ones updated, gone ones made
        inactive (their counts and cursor are kept)."""
        with self.write() as conn:
            rows = {r.key: r for r in conn.execute(select(w.c.key, w.c.spec, w.c.active))}
            for d in declared:
                spec = json.dumps(d["spec"], sort_keys=True)
                row = rows.get(d["key"])
                if row is None:
                    conn.execute(
                        _insert_ignore(conn, w).values(
                            key=d["key"], asset_uri=d["asset_uri"], kind=d["kind"],
                            conn_id=d["conn_id"], source=d["source"], spec=spec, active=True,
                            state="idle", updated_at=now,
                        )
                    )  # fmt: skip
                elif row.spec != spec or not row.active:
                    conn.execute(
                        update(w).where(w.c.key == d["key"])
                        .values(spec=spec, conn_id=d["conn_id"], active=True, updated_at=now)
                    )  # fmt: skip
            gone = [
                k for k, r in rows.items() if r.active and k not in {d["key"] for d in declared}
            ]
            if gone:
                conn.execute(
                    update(w).where(w.c.key.in_(gone))
                    .values(active=False, state="idle", triggerer_id=None, lease_expires_at=None,
                            updated_at=now)
                )  # fmt: skip

    def claim_watchers(
        self, triggerer_id: str, now: datetime, lease: timedelta, kinds: list[str]
    ) -> list[WatcherRecord]:
        """Take the active watchers of ``kinds`` that no live triggerer holds."""
        free = or_(w.c.triggerer_id.is_(None), w.c.lease_expires_at < now)
        pick = select(w.c.key).where(w.c.active, w.c.kind.in_(kinds), free)
        if self.is_postgres:
            pick = pick.with_for_update(skip_locked=True)
        with self.write() as conn:
            keys = list(conn.execute(pick).scalars())
            if not keys:
                return []
            conn.execute(
                update(w)
                .where(w.c.key.in_(keys), free)
                .values(triggerer_id=triggerer_id, lease_expires_at=now + lease)
            )
            rows = conn.execute(
                select(w).where(w.c.key.in_(keys), w.c.triggerer_id == triggerer_id)
            ).all()
        return [WatcherRecord.from_row(r) for r in rows]

    def renew_watchers(self, triggerer_id: str, now: datetime, lease: timedelta) -> set[str]:
        with self.write() as conn:
            return set(
                conn.execute(
                    update(w)
                    .where(w.c.triggerer_id == triggerer_id, w.c.active)
                    .values(lease_expires_at=now + lease)
                    .returning(w.c.key)
                ).scalars()
            )

    def release_watchers(self, triggerer_id: str) -> None:
        with self.write() as conn:
            conn.execute(
                update(w)
                .where(w.c.triggerer_id == triggerer_id)
                .values(triggerer_id=None, lease_expires_at=None)
            )

    def record_messages(
        self,
        key: str,
        items: list[tuple[str, Any]],
        now: datetime,
        *,
        cursor: str | None = None,
    ) -> list[str]:
        """Turn messages ``(message id, body)`` of watcher ``key`` into asset events, in
        one transaction; each item's outcome: ``event``, ``duplicate`` or
        ``rejected: <reason>``. ``cursor`` (PostgreSQL's log) moves with them. Two
        writers racing with the same ids: one commits, the other's transaction fails on
        the key and is tried once more, finding them duplicates."""
        try:
            return self._record_once(key, items, now, cursor)
        except IntegrityError:
            return self._record_once(key, items, now, cursor)

    def _record_once(
        self, key: str, items: list[tuple[str, Any]], now: datetime, cursor: str | None
    ) -> list[str]:
        limit = getattr(self, "max_conf_bytes", 65536)
        out: list[str] = []
        with self.write() as conn:
            row = conn.execute(select(w.c.asset_uri, w.c.kind).where(w.c.key == key)).first()
            if row is None:
                raise ConfigError(f"no asset watcher {key!r}")
            events = rejected = 0
            ids = [str(i)[:500] for i, _ in items]
            seen = set(
                conn.execute(
                    select(wm.c.message_id).where(wm.c.watcher_key == key, wm.c.message_id.in_(ids))
                ).scalars()
            )  # redelivered: acked again without a second event
            asset_id = conn.execute(
                select(m.assets.c.id).where(m.assets.c.uri == row.asset_uri)
            ).scalar()
            done: list[dict[str, Any]] = []
            fresh: list[tuple[int, str]] = []  # (index in done, extra text)
            for message_id, (_, body) in zip(ids, items, strict=True):
                if message_id in seen:
                    out.append(DUPLICATE)
                    continue
                seen.add(message_id)
                text, reason = _checked(body, limit)
                if reason is None and asset_id is None:
                    reason = f"asset {row.asset_uri!r} is not known (no DAG names it)"
                done.append({"watcher_key": key, "message_id": message_id, "event_id": None,
                             "at": now})  # fmt: skip
                if reason is not None:
                    rejected += 1
                    out.append(f"{REJECTED}: {reason}")
                    record_event(
                        conn, now, "watcher_rejected",
                        f"{key}: message {message_id} rejected: {reason}"[:2000],
                    )  # fmt: skip
                    continue
                fresh.append((len(done) - 1, text))
                events += 1
                out.append(EVENT)
            if fresh:
                made = emit_many_locked(conn, asset_id, [t for _, t in fresh], now,
                                        f"watcher:{key}"[:250])  # fmt: skip
                for (i, _), event_id in zip(fresh, made, strict=True):
                    done[i]["event_id"] = event_id
            if done:  # a racing writer of the same ids: IntegrityError, all rolled back
                conn.execute(insert(wm), done)
            values: dict[str, Any] = {"updated_at": now}
            if events:
                values.update(messages=w.c.messages + events, last_message_at=now)
            if rejected:
                values.update(rejected=w.c.rejected + rejected)
            if cursor is not None:
                values["cursor"] = cursor
            conn.execute(update(w).where(w.c.key == key).values(**values))
        return out

    def reject_message(self, key: str, reason: str, now: datetime) -> None:
        """A message refused before it had an id to trust (a webhook's bad signature):
        counted and recorded with the reason."""
        with self.write() as conn:
            conn.execute(
                update(w).where(w.c.key == key)
                .values(rejected=w.c.rejected + 1, updated_at=now)
            )  # fmt: skip
            record_event(conn, now, "watcher_rejected", f"{key}: refused: {reason}"[:2000])

    def set_watcher_state(
        self, key: str, state: str, now: datetime, *, error: str | None = None
    ) -> None:
        """``connected`` (failures reset) or ``retrying`` (the error recorded, an alert
        raised on the first failure in a row)."""
        with self.write() as conn:
            if state == "connected":
                conn.execute(
                    update(w).where(w.c.key == key)
                    .values(state=state, failures=0, updated_at=now)
                )  # fmt: skip
                return
            failures = conn.execute(
                update(w).where(w.c.key == key)
                .values(state=state, failures=w.c.failures + 1, last_error=(error or "")[:2000],
                        last_error_at=now, updated_at=now)
                .returning(w.c.failures)
            ).scalar()  # fmt: skip
        if failures == 1:
            self.raise_alert(  # type: ignore[attr-defined]
                f"watcher_down:{key}:{now.isoformat()}",
                "watcher_down",
                f"asset watcher {key} lost its broker: {error}; retrying with backoff",
                now,
                notifiers=[],
            )

    def watcher_states(self, *, active_only: bool = True) -> list[WatcherRecord]:
        q = select(w).order_by(w.c.key)
        if active_only:
            q = q.where(w.c.active)
        with self.read() as conn:
            return [WatcherRecord.from_row(r) for r in conn.execute(q)]

    def watcher(self, key: str) -> WatcherRecord | None:
        with self.read() as conn:
            r = conn.execute(select(w).where(w.c.key == key)).first()
        return WatcherRecord.from_row(r) if r is not None else None


def _insert_ignore(conn: Any, table: Any) -> Any:
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    return dialect_insert(table).on_conflict_do_nothing()


def _checked(body: Any, limit: int) -> tuple[str, str | None]:
    """The message as an event's extra (JSON object text), or the reason it is not one."""
    if isinstance(body, bytes | bytearray):
        if len(body) > limit:
            return "", f"message is {len(body)} bytes, over max_conf_bytes ({limit})"
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            return "", "message is not UTF-8 text"
    if isinstance(body, str):
        if len(body.encode()) > limit:
            return "", f"message is {len(body.encode())} bytes, over max_conf_bytes ({limit})"
        try:
            body = json.loads(body)
        except ValueError as exc:
            return "", f"message is not JSON ({exc})"
    if not isinstance(body, dict):
        return "", f"message is JSON but not an object (got {type(body).__name__})"
    try:
        text = check_extra(body, "message")
    except ConfigError as exc:
        return "", str(exc)
    if len(text.encode()) > limit:
        return "", f"message is {len(text.encode())} bytes of JSON, over max_conf_bytes ({limit})"
    return text, None
