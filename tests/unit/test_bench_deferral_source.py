"""bench/deferral.py's watcher scenarios (issue 30 item 3) do not rot: every broker the
triggerer runs (and the webhook) has a watched DAG that loads, a connection and a
fresh source its watcher accepts; the arguments reach the scenario they name."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from orchestrator.authoring.loader import load_file
from orchestrator.engine.watcher_brokers import BROKERS

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def deferral(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_deferral", BENCH / "deferral.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("bench_deferral", None)


def test_all_brokers_means_every_broker_the_triggerer_runs_and_the_webhook(deferral):
    assert sorted(deferral.brokers("all")) == sorted([*BROKERS, "webhook"])
    assert deferral.brokers("nats") == ["nats"]


@pytest.mark.parametrize("kind", sorted([*BROKERS, "webhook"]))
def test_each_brokers_watched_dag_loads_with_that_watcher_on_a_fresh_source(
    deferral, tmp_path, kind
):
    import watcher_load as wl

    src = wl.source_name(kind)
    assert src != wl.source_name(kind)  # each run reads a source of its own
    path = tmp_path / "watched.py"
    path.write_text(wl.dag_source(kind, src))
    [dag] = load_file(str(path))  # the watcher's own checks accept the source
    assert dag.dag_id == wl.DAG_ID and dag.max_active_runs >= 100_000
    [watcher] = dag.asset_condition.watchers
    assert (dag.asset_condition.uri, watcher.kind, watcher.source) == (wl.URI, kind, src)
    conn = wl.connection(kind)
    assert conn.conn_id == watcher.conn_id == "bus"
    if kind == "webhook":
        assert conn.password == wl.SECRET  # the secret the publisher signs with


def test_the_arguments_reach_the_scenario_they_name(deferral, monkeypatch):
    calls = []
    monkeypatch.setattr(deferral, "broker_latency", lambda *a: calls.append(("lat", *a)) or {})
    monkeypatch.setattr(deferral, "rate", lambda *a: calls.append(("rate", *a)) or {})
    deferral.main(["--scenario", "broker-latency", "--broker", "all", "--backend", "postgres"])
    assert calls == [("lat", "postgres", k, 100, 100.0) for k in deferral.brokers("all")]
    calls.clear()
    deferral.main(["--scenario", "rate", "--backend", "postgres", "--triggerers", "2"])
    deferral.main(["--scenario", "broker-latency", "--broker", "mqtt", "--messages", "7",
                   "--gap", "20"])  # fmt: skip
    assert calls == [("rate", "postgres", 2, 20_000), ("lat", "sqlite", "mqtt", 7, 20.0)]


@pytest.mark.parametrize(
    "argv", [["--triggerers", "3"], ["--broker", "kafka"], ["--scenario", "broker_latency"]]
)
def test_an_unknown_choice_is_refused_by_name(deferral, argv, capsys):
    with pytest.raises(SystemExit):
        deferral.parse_args(argv)
    assert "invalid choice" in capsys.readouterr().err
