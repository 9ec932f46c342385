"""A DAG's stored versions (issue 17 item 2), on both backends: numbered in the order
the DAG processor stored them, found by number, 'current' or hash prefix, compared
(definition and file), and listed and diffed by ``dags versions``."""

from __future__ import annotations

import json
import os

import pytest

from orchestrator.cli import main
from orchestrator.engine.processor import DagProcessor
from orchestrator.errors import ConfigError, NotFoundError

V1 = """from orchestrator import DAG

with DAG("etl", schedule=None) as dag:
    extract = dag.shell("extract", "echo one")
"""
V2 = """from datetime import datetime
from orchestrator import DAG

with DAG("etl", schedule="@daily", start_date=datetime(2026, 1, 1), paused=True) as dag:
    extract = dag.shell("extract", "echo two")
    load = dag.shell("load", "echo load")
    extract >> load
"""
V3 = "# only a comment changed\n" + V2


def write_versions(store, settings, clock, write_dag, texts=(V1, V2, V3)) -> list[str]:
    """Parse each text of etl.py in turn; a run per version; the version hashes."""
    processor = DagProcessor(store, settings)
    hashes = []
    for i, text in enumerate(texts):
        path = write_dag("etl.py", text)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # a new mtime: parsed again
        assert processor.scan(clock.now(), force=True).errors == 0
        hashes.append(store.get_dag("etl").version_hash)
        store.trigger_run("etl", clock.now())
        clock.advance(minutes=5)
    return hashes


def test_versions_are_numbered_found_and_compared(store, settings, clock, write_dag):
    h1, h2, h3 = write_versions(store, settings, clock, write_dag)
    versions = store.dag_versions("etl", count_runs=True)
    assert [(v.number, v.hash, v.is_current, v.runs) for v in versions] == [
        (1, h1, False, 1), (2, h2, False, 1), (3, h3, True, 1),
    ]  # fmt: skip
    assert versions[0].created_at < versions[1].created_at < versions[2].created_at
    assert store.dag_versions("etl")[0].runs is None  # not counted unless asked
    assert store.dag_version("etl", "2").hash == h2
    assert store.dag_version("etl", "current").hash == h3
    assert store.dag_version("etl", h1[:6].upper()).number == 1
    got = store.compare_versions("etl", "1", "2")
    assert "tasks added: load" in got["changes"]
    assert "task 'extract' changed: command" in got["changes"]
    assert any(line.startswith("schedule: None -> ") for line in got["changes"])
    assert '-    extract = dag.shell("extract", "echo one")' in got["diff"]
    assert '+    extract = dag.shell("extract", "echo two")' in got["diff"]
    comment = store.compare_versions("etl", "2", "3")
    assert comment["changes"] == []  # the same definition: only the file changed
    assert "+# only a comment changed" in comment["diff"]
    assert store.version_source("etl", h1).text == V1  # the old file, as parsed then
    summary = store.changes_between("etl", versions)
    assert summary[1] is None and summary[3] == [] and "tasks added: load" in summary[2]
    assert store.changes_between("etl", versions, max_bytes=10) == {1: None, 2: None, 3: None}


@pytest.mark.parametrize(
    ("ref", "error", "message"),
    [
        ("9", NotFoundError, "DAG 'etl' has no version 9 (versions: 1..3)"),
        ("0", NotFoundError, "has no version 0"),
        ("ffffffff", NotFoundError, "no version whose hash starts with 'ffffffff'"),
        ("ab", ConfigError, "a hash prefix of at least 4 hex digits, got 'ab'"),
        ("'; drop table dags; --", ConfigError, "expected a version number"),
    ],
)
def test_a_bad_version_is_a_clear_error(store, settings, clock, write_dag, ref, error, message):
    write_versions(store, settings, clock, write_dag)
    with pytest.raises(error, match=".*") as caught:
        store.dag_version("etl", ref)
    assert message in str(caught.value)
    assert len(store.dag_versions("etl")) == 3  # nothing changed
    with pytest.raises(NotFoundError, match="no DAG with dag_id 'nope'"):
        store.dag_versions("nope")


def test_cli_lists_diffs_and_prints_versions(
    store, settings, clock, write_dag, capsys, monkeypatch
):
    h1, _, h3 = write_versions(store, settings, clock, write_dag)
    monkeypatch.setenv("ORCHESTRATOR_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("ORCHESTRATOR_DAGS_FOLDER", settings.dags_folder)
    monkeypatch.setenv("ORCHESTRATOR_STATE_DIR", settings.state_dir)
    capsys.readouterr()
    assert main(["dags", "versions", "etl", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["number"], r["hash"], r["current"], r["runs"]) for r in rows] == [
        (1, h1, False, 1), (2, rows[1]["hash"], False, 1), (3, h3, True, 1),
    ]  # fmt: skip
    assert main(["dags", "versions", "etl"]) == 0
    table = capsys.readouterr().out
    assert h1[:12] in table and h1 not in table and "yes" in table
    assert main(["dags", "versions", "etl", "--diff", "1", "current"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"etl: version 1 ({h1[:12]}) -> 3 ({h3[:12]})\ndefinition:\n")
    assert "  tasks added: load\n" in out and '+    load = dag.shell("load", "echo load")' in out
    assert main(["dags", "versions", "etl", "--source", "1"]) == 0
    assert capsys.readouterr().out == V1
    assert main(["dags", "versions", "etl", "--diff", "1", "7"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == "orchestrator: error: DAG 'etl' has no version 7 (versions: 1..3)"


def test_an_all_digit_hash_prefix_names_its_version_when_no_number_does(
    store, settings, clock, write_dag, monkeypatch
):
    from dataclasses import replace

    write_versions(store, settings, clock, write_dag)
    real = store.dag_versions("etl")
    digits = [replace(v, hash=f"{38418 + v.number:06d}" + v.hash[6:]) for v in real]
    monkeypatch.setattr(store, "dag_versions", lambda dag_id, count_runs=False: digits)
    assert store.dag_version("etl", "038419").number == 1  # no version 38419: a prefix
    assert store.dag_version("etl", "2").number == 2  # a number that exists wins
    with pytest.raises(NotFoundError, match="has no version 99"):
        store.dag_version("etl", "99")  # too short for a prefix
    with pytest.raises(NotFoundError, match="has no version 3841"):
        store.dag_version("etl", "3841")  # matches no hash
