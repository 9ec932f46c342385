"""A DAG's stored versions (issue 17): listed, numbered, found by number or hash.

Every change of a DAG's definition or of its file's text is a new row of
``dag_versions`` (``DagStore.save_dags``), with the file's text in ``dag_sources``;
a run names the version it was created with (``dag_runs.version_hash``).

>>> [v.number for v in store.dag_versions("etl")]       # doctest: +SKIP
[1, 2, 3]
>>> store.dag_version("etl", "2").hash == store.dag_version("etl", "3f2a").hash  # doctest: +SKIP
True
"""

from __future__ import annotations

import json
import re
from typing import Any

from sqlalchemy import func, select

from orchestrator.authoring.version_diff import definition_changes, source_diff
from orchestrator.errors import ConfigError, NotFoundError
from orchestrator.store.core import models as m
from orchestrator.store.core.base import StoreBase
from orchestrator.store.core.records import DagVersionRecord

v, s, d, r = m.dag_versions, m.dag_sources, m.dags, m.dag_runs
_HASH_PREFIX = re.compile(r"^[0-9a-f]{4,64}$")
SUMMARY_BYTES = 256 * 1024  # the DAG page summarises changes of definitions up to this size


class VersionStore(StoreBase):
    def dag_versions(self, dag_id: str, *, count_runs: bool = False) -> list[DagVersionRecord]:
        """Every stored version of a DAG, oldest (number 1) first; ``count_runs``: with
        the number of runs of each (a pass over the DAG's runs)."""
        with self.read() as conn:
            current = conn.execute(
                select(d.c.version_hash).where(d.c.dag_id == dag_id)
            ).scalar_one_or_none()
            if current is None:
                raise NotFoundError(f"no DAG with dag_id {dag_id!r}")
            rows = conn.execute(
                select(v.c.hash, v.c.created_at, v.c.source_hash, s.c.size)
                .select_from(v.outerjoin(s, s.c.hash == v.c.source_hash))
                .where(v.c.dag_id == dag_id)
                .order_by(v.c.id)
            ).all()
            runs: dict[str, int] | None = None
            if count_runs:
                runs = dict(
                    conn.execute(
                        select(r.c.version_hash, func.count())
                        .where(r.c.dag_id == dag_id)
                        .group_by(r.c.version_hash)
                    ).all()
                )
        return [
            DagVersionRecord(dag_id=dag_id, number=i, hash=row.hash, created_at=row.created_at,
                             source_hash=row.source_hash, source_size=row.size,
                             is_current=row.hash == current,
                             runs=None if runs is None else int(runs.get(row.hash, 0)))
            for i, row in enumerate(rows, start=1)
        ]  # fmt: skip

    def dag_version(self, dag_id: str, ref: str, *, count_runs: bool = False) -> DagVersionRecord:
        """The version ``ref`` names: its number (``3``), ``current``, or a prefix of its
        hash (at least 4 hex digits, unambiguous). An all-digit ref is a number when
        there is such a version, else a hash prefix."""
        versions = self.dag_versions(dag_id, count_runs=count_runs)
        text = (ref or "").strip().lower()
        exact = next((x for x in versions if x.hash == text), None)
        if exact is not None:  # a whole hash (a run's version_hash), whatever its digits
            return exact
        if text == "current":
            return next(x for x in versions if x.is_current)
        if text.isdigit():
            n = int(text)
            if 1 <= n <= len(versions):
                return versions[n - 1]  # a number names a version first
            # no such number: an all-digit hash prefix (038418...) is still a prefix
            by_prefix = [x for x in versions if x.hash.startswith(text)]
            if len(text) < 4 or len(by_prefix) != 1:
                raise NotFoundError(
                    f"DAG {dag_id!r} has no version {n} (versions: 1..{len(versions)})"
                )
            return by_prefix[0]
        if not _HASH_PREFIX.match(text):
            raise ConfigError(
                f"version: expected a version number (1, 2, ...), 'current' or a hash prefix "
                f"of at least 4 hex digits, got {ref[:80]!r}"
            )
        found = [x for x in versions if x.hash.startswith(text)]
        if not found:
            raise NotFoundError(f"DAG {dag_id!r} has no version whose hash starts with {text!r}")
        if len(found) > 1:
            numbers = ", ".join(str(x.number) for x in found)
            raise ConfigError(f"version: hash prefix {text!r} is ambiguous (versions {numbers})")
        return found[0]

    def version_data(self, dag_id: str, version_hash: str) -> dict[str, Any]:
        """The serialized DAG of a version, as stored (for what changed between two)."""
        with self.read() as conn:
            data = conn.execute(
                select(v.c.data).where(v.c.dag_id == dag_id, v.c.hash == version_hash)
            ).scalar_one_or_none()
        if data is None:
            raise NotFoundError(f"DAG {dag_id!r} has no version {version_hash!r}")
        return json.loads(data)

    def compare_versions(self, dag_id: str, old_ref: str, new_ref: str) -> dict[str, Any]:
        """What changed from version ``old_ref`` to ``new_ref``: ``changes`` (definition,
        one line each) and ``diff`` (the unified diff of the two files, lines)."""
        old, new = self.dag_version(dag_id, old_ref), self.dag_version(dag_id, new_ref)
        texts = []
        for x in (old, new):
            src = self.version_source(dag_id, x.hash)  # type: ignore[attr-defined]
            texts.append(None if src is None else src.text)
        return {
            "from": old,
            "to": new,
            "changes": definition_changes(
                self.version_data(dag_id, old.hash), self.version_data(dag_id, new.hash)
            ),
            "diff": source_diff(
                texts[0],
                texts[1],
                f"version {old.number} ({old.hash[:12]})",
                f"version {new.number} ({new.hash[:12]})",
            ),  # fmt: skip
            "source_missing": [
                x.number for x, t in zip((old, new), texts, strict=True) if t is None
            ],
        }

    def changes_between(
        self, dag_id: str, versions: list[DagVersionRecord], *, max_bytes: int = SUMMARY_BYTES
    ) -> dict[int, list[str] | None]:
        """For each version (by number), what changed in the definition since the one
        before it, read in one query; None for the first version and where either
        definition is larger than ``max_bytes`` (a page must not parse huge DAGs)."""
        wanted = {x.number for x in versions} | {x.number - 1 for x in versions}
        every = self.dag_versions(dag_id)
        by_number = {x.number: x.hash for x in every if x.number in wanted}
        with self.read() as conn:
            rows = conn.execute(
                select(v.c.hash, v.c.data).where(
                    v.c.dag_id == dag_id,
                    v.c.hash.in_(list(by_number.values())),
                    func.length(v.c.data) <= max_bytes,
                )
            ).all()
        data = {h: json.loads(d) for h, d in rows}
        out: dict[int, list[str] | None] = {}
        for x in versions:
            old, new = data.get(by_number.get(x.number - 1, "")), data.get(x.hash)
            out[x.number] = None if old is None or new is None else definition_changes(old, new)
        return out
