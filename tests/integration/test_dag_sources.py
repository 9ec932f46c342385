"""DAG sources stored with their versions: deduplicated by content, named by version."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from sqlalchemy import func, select

from orchestrator import DAG
from orchestrator.authoring.spec import serialize_dag
from orchestrator.store.core import models as m

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def source(text: str) -> dict:
    raw = text.encode()
    return {"text": text, "sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw),
            "truncated": False}  # fmt: skip


def dag(dag_id: str) -> dict:
    with DAG(dag_id) as d:
        d.shell("t", "true")
    return serialize_dag(d)


def count(store, table) -> int:
    with store.read() as conn:
        return conn.execute(select(func.count()).select_from(table)).scalar_one()


def test_one_file_two_dags_one_source_row_and_each_version_names_it(store):
    text = source("with DAG('a') ...\nwith DAG('b') ...\n")
    store.save_dags([dag("a") | {"source": text}, dag("b") | {"source": text}], NOW)
    store.save_dags([dag("a") | {"source": text}], NOW)  # parsed again: nothing new
    assert count(store, m.dag_sources) == 1 and count(store, m.dag_versions) == 2
    for dag_id in ("a", "b"):
        got = store.version_source(dag_id, store.get_dag(dag_id).version_hash)
        assert got.text == text["text"] and got.size == text["size"] and not got.truncated
    with store.read() as conn:
        stored = conn.execute(select(m.dag_versions.c.data)).scalars().all()
    assert all('"source"' not in data for data in stored)  # not part of the definition


def test_a_new_source_is_a_new_version_and_the_old_one_keeps_its_text(store):
    store.save_dag(dag("a") | {"source": source("# one\n")}, NOW)
    first = store.get_dag("a").version_hash
    store.save_dag(dag("a") | {"source": source("# two\n")}, NOW)
    second = store.get_dag("a").version_hash
    assert first != second
    assert store.version_source("a", first).text == "# one\n"
    assert store.version_source("a", second).text == "# two\n"
    store.save_dag(dag("a"), NOW)  # no source (a test, a benchmark): a version without one
    assert store.version_source("a", store.get_dag("a").version_hash) is None
