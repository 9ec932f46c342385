"""The DAG processor's bookkeeping across scans: which file owns a dag_id, when files
are parsed again, and what happens to DAGs a file stops defining."""

from __future__ import annotations

import os
import textwrap
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest

from orchestrator.engine.processor import DagProcessor, dag_files


def dag_source(*dag_ids: str) -> str:
    lines = ["from orchestrator import DAG"]
    for dag_id in dag_ids:
        lines += [f"with DAG({dag_id!r}) as dag:", "    dag.shell('t', 'true')"]
    return "\n".join(lines) + "\n"


def rewrite(path: Path, source: str) -> None:
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(textwrap.dedent(source))
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))


@pytest.fixture
def processor(store, settings):
    return DagProcessor(store, settings, parallelism=2)


def owners(store) -> dict[str, str]:
    return {d.dag_id: Path(d.fileloc).name for d in store.list_dags()}


def test_dag_files_skips_private_and_hidden_names(dags_dir):
    for name in ("a.py", "_private.py", ".hidden.py", "notes.txt", "sub/b.py", "_skip/c.py"):
        (dags_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (dags_dir / name).write_text("")
    assert [Path(p).relative_to(dags_dir).as_posix() for p in dag_files(str(dags_dir))] == [
        "a.py",
        "sub/b.py",
    ]


@pytest.mark.parametrize(("old", "new"), [("a.py", "b.py"), ("b.py", "a.py")])
def test_a_dag_moved_between_files_in_one_scan_is_not_a_clash(
    processor, store, clock, dags_dir, old, new
):
    a, b = dags_dir / old, dags_dir / new
    a.write_text(dag_source("moving", "staying"))
    b.write_text(dag_source("other"))
    processor.scan(clock.now())
    assert owners(store) == {"moving": old, "staying": old, "other": new}

    rewrite(a, dag_source("staying"))
    rewrite(b, dag_source("other", "moving"))
    result = processor.scan(clock.now())
    assert result.errors == 0 and store.import_errors() == []
    assert owners(store) == {"moving": new, "staying": old, "other": new}
    assert store.get_dag("moving").is_active


def test_a_dag_a_file_stops_defining_goes_inactive(processor, store, clock, dags_dir):
    path = dags_dir / "two.py"
    path.write_text(dag_source("keep", "drop"))
    processor.scan(clock.now())
    rewrite(path, dag_source("keep"))
    processor.scan(clock.now())
    assert owners(store) == {"keep": "two.py"}
    assert not store.get_dag("drop").is_active
    assert "dag_removed" in [e.kind for e in store.events(dag_id="drop")]


def test_clash_is_resolved_when_the_owner_drops_the_dag_id(processor, store, clock, dags_dir):
    first, second = dags_dir / "first.py", dags_dir / "second.py"
    first.write_text(dag_source("shared"))
    processor.scan(clock.now())
    second.write_text(dag_source("shared"))
    assert processor.scan(clock.now()).errors == 1
    [error] = store.import_errors()
    assert Path(error.fileloc).name == "second.py"
    assert "dag_id 'shared' is already defined in" in error.message

    # second.py is unchanged; first.py giving up the id is enough for it to be re-read
    rewrite(first, dag_source("renamed"))
    assert processor.scan(clock.now()).parsed == 2
    assert store.import_errors() == []
    assert owners(store) == {"renamed": "first.py", "shared": "second.py"}


def test_unchanged_files_are_not_parsed_again_unless_forced(processor, store, clock, dags_dir):
    (dags_dir / "one.py").write_text(dag_source("one"))
    assert processor.scan(clock.now()).parsed == 1
    assert processor.scan(clock.now()).parsed == 0
    assert processor.scan(clock.now(), force=True).parsed == 1


def test_missing_dags_folder_is_an_empty_scan(store, settings, clock, tmp_path):
    processor = DagProcessor(store, settings.with_(dags_folder=str(tmp_path / "nope")))
    assert processor.scan(clock.now()).parsed == 0


def test_files_after_a_crash_or_hang_in_a_parse_child_are_still_parsed(
    store, settings, clock, dags_dir
):
    # one pool child imports many files: a file that kills it or hangs costs only
    # that file, and a fresh child parses the rest
    processor = DagProcessor(store, settings.with_(parse_timeout=2), parallelism=1)
    for n in range(6):
        (dags_dir / f"a{n}.py").write_text(dag_source(f"a{n}"))
    (dags_dir / "b_crash.py").write_text("import os\nos._exit(3)\n")
    (dags_dir / "c_hang.py").write_text("while True:\n    pass\n")
    for n in range(6):
        (dags_dir / f"d{n}.py").write_text(dag_source(f"d{n}"))
    result = processor.scan(clock.now())
    assert (result.dags, result.errors) == (12, 2)
    messages = sorted(Path(e.fileloc).name + ": " + e.message for e in store.import_errors())
    assert "exited with code 3" in messages[0] and "b_crash.py" in messages[0]
    assert "took longer than 2s" in messages[1] and "c_hang.py" in messages[1]


def test_same_named_helpers_in_two_folders_are_each_files_own(store, settings, clock, dags_dir):
    # one parse child imports both files: the first file's `helpers` module must not be
    # what the second file gets when it imports its own `helpers`
    processor = DagProcessor(store, settings, parallelism=1)
    for team, schedule in (("team_a", "@daily"), ("team_b", "@hourly")):
        (dags_dir / team).mkdir()
        (dags_dir / team / "helpers.py").write_text(f"SCHEDULE = {schedule!r}\n")
        (dags_dir / team / "pipeline.py").write_text(
            "from datetime import UTC, datetime\n"
            "from orchestrator import DAG\n"
            "from helpers import SCHEDULE\n"
            f"with DAG({team!r}, schedule=SCHEDULE, start_date=datetime(2026, 1, 1, tzinfo=UTC)):\n"
            "    pass\n"
        )
    assert processor.scan(clock.now()).errors == 0
    a, b = store.get_dag("team_a").schedule, store.get_dag("team_b").schedule
    assert a != b


HANG = "while True:\n    pass\n"
SLEEP = "import time\ntime.sleep(3600)\n"


def wait_for(predicate, bound: float = 15.0) -> bool:
    """Poll ``predicate`` for at most ``bound`` seconds (a bound far below the hanging
    files' parse_timeout of 60 s, never a duration the test asserts)."""
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def task_ids(store, dag_id: str) -> list[str]:
    return list(store.current_spec(dag_id).tasks)


def test_a_healthy_dag_beside_hanging_files_is_stored_before_their_timeout(
    store, settings, clock, dags_dir
):
    # real parse children: a spinning file and two sleeping ones hold more children than
    # the pool's size, sorted before the healthy file; parse_timeout is 60 s
    for name, source in (("a_spin.py", HANG), ("b_sleep.py", SLEEP), ("c_sleep.py", SLEEP)):
        (dags_dir / name).write_text(source)
    healthy = dags_dir / "z_ok.py"
    healthy.write_text(dag_source("healthy"))
    processor = DagProcessor(
        store, settings.with_(parse_timeout=60, parse_interval=0.5), parallelism=2
    )
    stop = threading.Event()
    scan = threading.Thread(target=processor.scan, args=(clock.now(),), kwargs={"stop": stop})
    scan.start()
    try:
        assert wait_for(lambda: "healthy" in [d.dag_id for d in store.list_dags(schedulable=True)])
        # the scan still waits for the hanging files; a change to the healthy file made
        # meanwhile is parsed and stored too, without waiting for them
        assert scan.is_alive()
        rewrite(healthy, dag_source("healthy").replace("dag.shell('t'", "dag.shell('t2'"))
        assert wait_for(lambda: task_ids(store, "healthy") == ["t2"])
        assert scan.is_alive() and store.import_errors() == []
    finally:
        stop.set()
        scan.join(30)
    assert not scan.is_alive()


def test_a_forced_reparse_stores_the_healthy_dag_before_the_hanging_file_times_out(
    store, settings, clock, dags_dir
):
    (dags_dir / "a_spin.py").write_text(HANG)
    (dags_dir / "b_ok.py").write_text(dag_source("healthy"))
    processor = DagProcessor(store, settings.with_(parse_timeout=2), parallelism=2)
    first = processor.scan(clock.now())
    assert (first.dags, first.errors) == (1, 1)
    processor.settings = settings.with_(parse_timeout=60)
    stop = threading.Event()
    seen_at_reparse = store.get_dag("healthy").last_parsed_at
    clock.advance(timedelta(minutes=1))
    scan = threading.Thread(
        target=processor.scan, args=(clock.now(),), kwargs={"force": True, "stop": stop}
    )
    scan.start()
    try:
        assert wait_for(lambda: store.get_dag("healthy").last_parsed_at != seen_at_reparse)
        assert scan.is_alive()
    finally:
        stop.set()
        scan.join(30)
    assert not scan.is_alive()


def test_a_stopped_scan_leaves_its_unfinished_files_for_the_next_scan(
    store, settings, clock, dags_dir
):
    (dags_dir / "a_spin.py").write_text(HANG)
    processor = DagProcessor(store, settings.with_(parse_timeout=60), parallelism=1)
    stop = threading.Event()
    stop.set()
    assert processor.scan(clock.now(), stop=stop).parsed == 0
    processor.settings = settings.with_(parse_timeout=1)
    result = processor.scan(clock.now())  # the same, unchanged file
    assert (result.parsed, result.errors) == (1, 1)
